package resource

import (
	"slices"
	"testing"
)

// indexGraph: 2 racks x 2 nodes x 2 sockets x {2 cores, 1 gpu}: 39 vertices.
func indexGraph(t *testing.T) *Graph {
	t.Helper()
	g, err := Generate("cluster[1]->rack[2]->node[2]->socket[2]->{core[2],gpu[1]}")
	if err != nil {
		t.Fatal(err)
	}
	if g.Len() != 39 {
		t.Fatalf("Len = %d, want 39", g.Len())
	}
	return g
}

func mustPath(t *testing.T, g *Graph, p string) int32 {
	t.Helper()
	i, ok := g.ByPath(p)
	if !ok {
		t.Fatalf("no vertex at %s", p)
	}
	return i
}

func names(g *Graph, idx []int32) []string {
	var out []string
	for _, i := range idx {
		out = append(out, g.Vertex(i).DisplayName())
	}
	return out
}

func TestIndexByType(t *testing.T) {
	g := indexGraph(t)
	nodes := g.ByTypeName("node")
	if got := names(g, nodes); !slices.Equal(got, []string{"node0", "node1", "node2", "node3"}) {
		t.Errorf("nodes = %q", got)
	}
	nt, ok := g.LookupType("node")
	if !ok || !slices.Equal(g.ByType(nt), nodes) {
		t.Errorf("ByType(node) = %v, want %v", g.ByType(nt), nodes)
	}
	if nt2, ok := g.NodeType(); !ok || nt2 != nt {
		t.Errorf("NodeType = %d %v", nt2, ok)
	}
	if len(g.ByTypeName("core")) != 16 || len(g.ByTypeName("gpu")) != 8 || len(g.ByTypeName("socket")) != 8 {
		t.Errorf("counts: %d cores %d gpus %d sockets", len(g.ByTypeName("core")), len(g.ByTypeName("gpu")), len(g.ByTypeName("socket")))
	}
	if g.ByTypeName("ssd") != nil {
		t.Errorf("ByTypeName(ssd) = %v", g.ByTypeName("ssd"))
	}
	if !slices.IsSorted(g.ByTypeName("core")) {
		t.Errorf("ByType not in index order")
	}
}

func TestIndexByNameRankPath(t *testing.T) {
	g := indexGraph(t)
	n2 := mustPath(t, g, "/cluster0/rack1/node2")
	if got := g.ByName("node2"); !slices.Equal(got, []int32{n2}) {
		t.Errorf("ByName(node2) = %v, want [%d]", got, n2)
	}
	// Per-node numbering: core0 exists once per node.
	var cpaths []string
	for _, i := range g.ByName("core0") {
		cpaths = append(cpaths, g.Path(i))
	}
	want := []string{"/cluster0/rack0/node0/socket0/core0", "/cluster0/rack0/node1/socket0/core0", "/cluster0/rack1/node2/socket0/core0", "/cluster0/rack1/node3/socket0/core0"}
	if !slices.Equal(cpaths, want) {
		t.Errorf("ByName(core0) paths = %q", cpaths)
	}
	if g.ByName("core99") != nil {
		t.Error("ByName(core99) != nil")
	}
	// Rank 2: node2 and its subtree, in index order.
	r2 := g.ByRank(2)
	if len(r2) != 1+2*4 || r2[0] != n2 {
		t.Fatalf("ByRank(2) = %v", r2)
	}
	for k, i := range r2 {
		if i != n2+int32(k) || g.Vertex(i).Rank != 2 {
			t.Errorf("ByRank(2)[%d] = %d (%s)", k, i, g.Path(i))
		}
	}
	if g.ByRank(-1) != nil || g.ByRank(4) != nil {
		t.Errorf("ByRank(-1) = %v, ByRank(4) = %v", g.ByRank(-1), g.ByRank(4))
	}
	gpu := mustPath(t, g, "/cluster0/rack1/node3/socket1/gpu1")
	if v := g.Vertex(gpu); g.TypeName(v.Type) != "gpu" || v.Rank != 3 || v.ID != 1 {
		t.Errorf("gpu1 = %+v", *v)
	}
	for i := range int32(g.Len()) {
		if j, ok := g.ByPath(g.Path(i)); !ok || j != i {
			t.Errorf("ByPath(Path(%d)) = %d, %v", i, j, ok)
		}
	}
	for _, p := range []string{"", "/", "/cluster0/", "/cluster1", "/cluster0/rack0/node2"} {
		if i, ok := g.ByPath(p); ok {
			t.Errorf("ByPath(%q) = %d", p, i)
		}
	}
}

func TestIndexStructure(t *testing.T) {
	g := indexGraph(t)
	if g.Root() != 0 || g.Parent(0) != None || g.Depth(0) != 0 {
		t.Errorf("root: %d parent %d depth %d", g.Root(), g.Parent(0), g.Depth(0))
	}
	if got := names(g, g.Children(0)); !slices.Equal(got, []string{"rack0", "rack1"}) {
		t.Errorf("Children(root) = %q", got)
	}
	s := mustPath(t, g, "/cluster0/rack0/node1/socket1")
	if got := names(g, g.Children(s)); !slices.Equal(got, []string{"core2", "core3", "gpu1"}) {
		t.Errorf("Children(socket1) = %q", got)
	}
	for i := range int32(g.Len()) {
		// Children are in uniq_id order and are exactly the vertices whose
		// parent is i; the subtree is contiguous.
		kids := g.Children(i)
		if !slices.IsSortedFunc(kids, func(a, b int32) int { return int(g.Vertex(a).UniqID - g.Vertex(b).UniqID) }) {
			t.Errorf("Children(%d) not in uniq_id order", i)
		}
		for _, k := range kids {
			if g.Parent(k) != i || g.Depth(k) != g.Depth(i)+1 {
				t.Errorf("child %d of %d has parent %d", k, i, g.Parent(k))
			}
		}
		end := g.SubtreeEnd(i)
		if end <= i || int(end) > g.Len() {
			t.Fatalf("SubtreeEnd(%d) = %d", i, end)
		}
		for j := i + 1; j < end; j++ {
			if !g.IsAncestor(i, j) {
				t.Errorf("%d in [%d,%d) but IsAncestor false", j, i, end)
			}
		}
		if len(kids) == 0 && end != i+1 {
			t.Errorf("leaf %d: SubtreeEnd = %d", i, end)
		}
	}
	if g.SubtreeEnd(0) != int32(g.Len()) {
		t.Errorf("SubtreeEnd(root) = %d", g.SubtreeEnd(0))
	}
	n1 := mustPath(t, g, "/cluster0/rack0/node1")
	if g.SubtreeEnd(n1)-n1 != 9 {
		t.Errorf("node1 subtree has %d vertices, want 9", g.SubtreeEnd(n1)-n1)
	}
	if g.IsAncestor(n1, mustPath(t, g, "/cluster0/rack1")) {
		t.Error("node1 is not an ancestor of rack1")
	}
}

func TestIndexNodeOf(t *testing.T) {
	g := indexGraph(t)
	n3 := mustPath(t, g, "/cluster0/rack1/node3")
	for _, tt := range []struct {
		path string
		want int32
	}{
		{"/cluster0/rack1/node3/socket1/core3", n3},
		{"/cluster0/rack1/node3/socket0", n3},
		{"/cluster0/rack1/node3", n3},
		{"/cluster0/rack1", None},
		{"/cluster0", None},
	} {
		if got := g.NodeOf(mustPath(t, g, tt.path)); got != tt.want {
			t.Errorf("NodeOf(%s) = %d, want %d", tt.path, got, tt.want)
		}
	}
	noNodes := MustGenerate("cluster[1]->core[2]")
	if got := noNodes.NodeOf(1); got != None {
		t.Errorf("NodeOf without nodes = %d", got)
	}
	if _, ok := noNodes.NodeType(); ok || noNodes.NodesUp() != 0 {
		t.Errorf("graph without nodes: NodeType ok %v, NodesUp %d", ok, noNodes.NodesUp())
	}
}

func TestIndexStatus(t *testing.T) {
	g := indexGraph(t)
	if g.NodesUp() != 4 {
		t.Fatalf("NodesUp = %d", g.NodesUp())
	}
	n1 := mustPath(t, g, "/cluster0/rack0/node1")
	for _, step := range []struct {
		v    int32
		s    Status
		want int
	}{
		{n1, Down, 3},
		{n1, Down, 3}, // idempotent
		{n1 + 1, Down, 3},
		{0, Down, 3}, // non-node vertices do not count
		{mustPath(t, g, "/cluster0/rack1/node3"), Down, 2},
		{n1, Up, 3},
		{n1, Up, 3},
	} {
		g.SetStatus(step.v, step.s)
		if g.NodesUp() != step.want || g.Vertex(step.v).Status != step.s {
			t.Errorf("after SetStatus(%s, %v): NodesUp %d (want %d), status %v",
				g.Path(step.v), step.s, g.NodesUp(), step.want, g.Vertex(step.v).Status)
		}
	}
	if Up.String() != "up" || Down.String() != "down" {
		t.Errorf("String: %s %s", Up, Down)
	}
}
