package resource

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestTinyClusterMatchesGenerator(t *testing.T) {
	g := TinyCluster()
	if g.Len() != 61 || g.NodesUp() != 4 {
		t.Fatalf("Len %d NodesUp %d", g.Len(), g.NodesUp())
	}
	checkSameGraph(t, g, MustGenerate("cluster[1]->node[4]->socket[2]->{core[4],gpu[1],memory[1]:16GB}"))
}

func TestBuilderExample(t *testing.T) {
	g := Build("cluster").
		Node("node0", Props{"arch": "amd64"}, Cores(4), GPUs(1), Memory(16)).
		Node("node1", Cores(2)).
		Down("node1").
		Graph()
	checkVertices(t, g, []wantVertex{
		{path: "/cluster0", typ: "cluster", basename: "cluster", id: 0, uniq: 0, rank: -1, size: 1},
		{path: "/cluster0/node0", typ: "node", basename: "node", id: 0, uniq: 1, rank: 0, size: 1, props: map[string]string{"arch": "amd64"}},
		{path: "/cluster0/node0/core0", typ: "core", basename: "core", id: 0, uniq: 2, rank: 0, size: 1},
		{path: "/cluster0/node0/core1", typ: "core", basename: "core", id: 1, uniq: 3, rank: 0, size: 1},
		{path: "/cluster0/node0/core2", typ: "core", basename: "core", id: 2, uniq: 4, rank: 0, size: 1},
		{path: "/cluster0/node0/core3", typ: "core", basename: "core", id: 3, uniq: 5, rank: 0, size: 1},
		{path: "/cluster0/node0/gpu0", typ: "gpu", basename: "gpu", id: 0, uniq: 6, rank: 0, size: 1},
		{path: "/cluster0/node0/memory0", typ: "memory", basename: "memory", id: 0, uniq: 7, rank: 0, size: 16, unit: "GB"},
		{path: "/cluster0/node1", typ: "node", basename: "node", id: 1, uniq: 8, rank: 1, size: 1, status: Down},
		{path: "/cluster0/node1/core0", typ: "core", basename: "core", id: 0, uniq: 9, rank: 1, size: 1},
		{path: "/cluster0/node1/core1", typ: "core", basename: "core", id: 1, uniq: 10, rank: 1, size: 1},
	})
	if g.NodesUp() != 1 {
		t.Errorf("NodesUp = %d, want 1", g.NodesUp())
	}
}

func TestBuilderGroupsAndNames(t *testing.T) {
	props := Props{"zone": "a"}
	g := Build("k8scluster").
		Group("subnet", "zone-a").
		Node("kind-worker2", props, Props{"extra": "1"}, nil).
		Node("node007", Pool("ssd", 2, 800, "GB")).
		Group("subnet", "zone-b").
		Node("big").
		Node("bigger", Sockets(2), GPUs(1)).
		Down("/k8scluster0/zone-b/bigger").
		Graph()
	want := []string{
		"/k8scluster0",
		"/k8scluster0/zone-a",
		"/k8scluster0/zone-a/kind-worker2",
		"/k8scluster0/zone-a/node007",
		"/k8scluster0/zone-a/node007/ssd0",
		"/k8scluster0/zone-a/node007/ssd1",
		"/k8scluster0/zone-b",
		"/k8scluster0/zone-b/big",
		"/k8scluster0/zone-b/bigger",
		"/k8scluster0/zone-b/bigger/socket0",
		"/k8scluster0/zone-b/bigger/socket0/gpu0",
		"/k8scluster0/zone-b/bigger/socket1",
		"/k8scluster0/zone-b/bigger/socket1/gpu1",
	}
	if got := paths(g); !slices.Equal(got, want) {
		t.Fatalf("paths:\n got %q\nwant %q", got, want)
	}
	kw := g.Vertex(2)
	if kw.Basename != "kind-worker" || kw.ID != 2 || kw.Name != "" || kw.Rank != 0 ||
		!maps.Equal(kw.Properties, map[string]string{"zone": "a", "extra": "1"}) {
		t.Errorf("kind-worker2 = %+v", *kw)
	}
	props["zone"] = "changed"
	if kw.Properties["zone"] != "a" {
		t.Error("Props were not copied")
	}
	if v := g.Vertex(3); v.Basename != "node" || v.ID != 7 || v.Name != "node007" || v.Rank != 1 {
		t.Errorf("node007 = %+v", *v)
	}
	if v := g.Vertex(4); v.Size != 800 || v.Unit != "GB" || v.Rank != 1 {
		t.Errorf("ssd0 = %+v", *v)
	}
	if v := g.Vertex(7); v.Basename != "big" || v.Name != "big" || v.ID != 0 || v.Rank != 2 {
		t.Errorf("big = %+v", *v)
	}
	if v := g.Vertex(8); v.Name != "bigger" || v.ID != 1 || v.Status != Down {
		t.Errorf("bigger = %+v", *v)
	}
	if v := g.Vertex(1); g.TypeName(v.Type) != "subnet" || v.Name != "zone-a" || v.ID != 0 {
		t.Errorf("zone-a = %+v", *v)
	}
	if g.NodesUp() != 3 {
		t.Errorf("NodesUp = %d", g.NodesUp())
	}
}

func TestBuilderErrors(t *testing.T) {
	tests := []struct {
		name string
		b    *Builder
		want string
	}{
		{"empty root type", Build(""), "empty root type"},
		{"duplicate node", Build("cluster").Node("n1").Node("n1"), `duplicate name "n1"`},
		{"empty node name", Build("cluster").Node(""), "empty name"},
		{"negative cores", Build("cluster").Node("n1", Cores(-1)), `Builder.Node("n1"): core count -1 is negative`},
		{"bad pool size", Build("cluster").Node("n1", Pool("ssd", 1, 0, "GB")), "ssd size 0 must be at least 1"},
		{"bad sockets", Build("cluster").Node("n1", Sockets(0)), "socket count 0 must be at least 1"},
		{"bad group", Build("cluster").Group("", "x"), "empty type or name"},
		{"unknown down", Build("cluster").Node("n1").Down("n2"), `no vertex is named "n2"`},
		{"unknown down path", Build("cluster").Node("n1").Down("/cluster0/n2"), `no vertex has path "/cluster0/n2"`},
		{"ambiguous down", Build("cluster").Node("n1", Cores(1)).Node("n2", Cores(1)).Down("core0"), `2 vertices are named "core0"; use a path`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.b.Finish()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	defer func() {
		if recover() == nil {
			t.Error("Graph did not panic")
		}
	}()
	Build("cluster").Node("x").Node("x").Graph()
}
