package gang

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/resource"
)

// graphLines lists a graph's non-leaf vertices in pre-order as
// path [type] {properties}; a node's pools are left out.
func graphLines(g *resource.Graph) []string {
	var out []string
	for i := range int32(g.Len()) {
		vx := g.Vertex(i)
		if len(g.Children(i)) == 0 && g.TypeName(vx.Type) != typeNode {
			continue
		}
		line := g.Path(i) + " [" + g.TypeName(vx.Type) + "]"
		if g.TypeName(vx.Type) != typeNode && len(vx.Properties) > 0 {
			var ps []string
			for _, k := range slices.Sorted(maps.Keys(vx.Properties)) {
				ps = append(ps, k+"="+vx.Properties[k])
			}
			line += " {" + strings.Join(ps, ",") + "}"
		}
		out = append(out, line)
	}
	return out
}

func labelled(name string, kv ...string) *Node {
	n := &Node{Name: name, Allocatable: Resources{MilliCPU: 1000}, Labels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Labels[kv[i]] = kv[i+1]
	}
	return n
}

func TestBuildGraphLevels(t *testing.T) {
	tests := []struct {
		name   string
		levels []string
		nodes  []*Node
		want   []string
	}{
		{
			name:   "levels nest, unlabelled nodes last under _unknown, a real value unknown stays apart",
			levels: []string{"example.com/block", "example.com/rack"},
			nodes: []*Node{
				labelled("n4"),
				labelled("n3", "example.com/block", "b1", "example.com/rack", "unknown"),
				labelled("n2", "example.com/block", "b1", "example.com/rack", "r2"),
				labelled("n1", "example.com/block", "b1", "example.com/rack", "r2", "other", "x"),
				labelled("n0", "example.com/block", "b0", "example.com/rack", ""),
			},
			want: []string{
				"/cluster0 [cluster]",
				"/cluster0/block-b0 [block] {example.com/block=b0}",
				"/cluster0/block-b0/rack-_unknown [rack]",
				"/cluster0/block-b0/rack-_unknown/n0 [node]",
				"/cluster0/block-b1 [block] {example.com/block=b1}",
				"/cluster0/block-b1/rack-r2 [rack] {example.com/rack=r2}",
				"/cluster0/block-b1/rack-r2/n1 [node]",
				"/cluster0/block-b1/rack-r2/n2 [node]",
				"/cluster0/block-b1/rack-unknown [rack] {example.com/rack=unknown}",
				"/cluster0/block-b1/rack-unknown/n3 [node]",
				"/cluster0/block-_unknown [block]",
				"/cluster0/block-_unknown/rack-_unknown [rack]",
				"/cluster0/block-_unknown/rack-_unknown/n4 [node]",
			},
		},
		{
			name:   "the zone is a level only when listed; a rack value under two blocks is two vertices",
			levels: []string{"rack", "block"},
			nodes: []*Node{
				labelled("a", ZoneLabel, "z1", "rack", "r", "block", "b1"),
				labelled("b", ZoneLabel, "z2", "rack", "r", "block", "b2"),
			},
			want: []string{
				"/cluster0 [cluster]",
				"/cluster0/rack-r [rack] {rack=r}",
				"/cluster0/rack-r/block-b1 [block] {block=b1}",
				"/cluster0/rack-r/block-b1/a [node]",
				"/cluster0/rack-r/block-b2 [block] {block=b2}",
				"/cluster0/rack-r/block-b2/b [node]",
			},
		},
		{
			name:   "types the core uses and repeated names are numbered by level",
			levels: []string{"a.io/rack", "b.io/rack", "example.com/node", "c.io/rack-2"},
			nodes:  []*Node{labelled("n", "a.io/rack", "x", "b.io/rack", "y", "example.com/node", "z", "c.io/rack-2", "w")},
			want: []string{
				"/cluster0 [cluster]",
				"/cluster0/rack-x [rack] {a.io/rack=x}",
				"/cluster0/rack-x/rack-2-y [rack-2] {b.io/rack=y}",
				"/cluster0/rack-x/rack-2-y/node-3-z [node-3] {example.com/node=z}",
				"/cluster0/rack-x/rack-2-y/node-3-z/rack-2-4-w [rack-2-4] {c.io/rack-2=w}",
				"/cluster0/rack-x/rack-2-y/node-3-z/rack-2-4-w/n [node]",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := BuildGraphLevels(tt.nodes, tt.levels)
			if err != nil {
				t.Fatal(err)
			}
			got := graphLines(g)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("graph:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			// Nodes keep every label as a property: a confinement to a
			// domain matches on the node, for any label.
			for _, n := range tt.nodes {
				v := g.ByName(n.Name)
				if len(v) != 1 || !maps.Equal(g.Vertex(v[0]).Properties, n.Labels) {
					t.Errorf("node %s: properties %v, want its labels %v", n.Name, g.Vertex(v[0]).Properties, n.Labels)
				}
			}
		})
	}
}

func TestBuildGraphLevelsRefused(t *testing.T) {
	for _, tc := range []struct {
		levels []string
		want   string
	}{
		{[]string{"rack", ""}, "topology level 2 is an empty label key"},
		{[]string{"rack", "block", "rack"}, "topology level 3: label key rack is listed twice"},
		{[]string{"example.com/"}, "topology level 1: label key example.com/ has no name"},
	} {
		_, err := BuildGraphLevels([]*Node{labelled("n")}, tc.levels)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.levels, err, tc.want)
		}
		if _, err := New(Config{TopologyLevels: tc.levels}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New with %q: error %v, want %q", tc.levels, err, tc.want)
		}
	}
	if _, err := New(Config{RackLabel: "rack", TopologyLevels: []string{"rack"}}); err == nil || !strings.Contains(err.Error(), "both RackLabel (rack) and TopologyLevels") {
		t.Errorf("New with RackLabel and TopologyLevels: error %v", err)
	}
}

// TestNodeMovedRebuilds: a change of a level's label rebuilds the graph;
// any other label is applied in place.
func TestNodeMovedRebuilds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		labels  map[string]string
		rebuild bool
	}{
		{"level label changed", Config{TopologyLevels: []string{"rack"}}, map[string]string{"rack": "r2", "pool": "a"}, true},
		{"level label removed", Config{TopologyLevels: []string{"rack"}}, map[string]string{"pool": "a"}, true},
		{"other label changed", Config{TopologyLevels: []string{"rack"}}, map[string]string{"rack": "r1", "pool": "b"}, false},
		{"zone without levels", Config{}, map[string]string{"rack": "r1", "pool": "a", ZoneLabel: "z"}, true},
		{"rack label without levels", Config{RackLabel: "rack"}, map[string]string{"rack": "r2", "pool": "a"}, true},
		{"rack without a rack level", Config{}, map[string]string{"rack": "r2", "pool": "a"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			n := Node{Name: "n1", Allocatable: Resources{MilliCPU: 1000}, Labels: map[string]string{"rack": "r1", "pool": "a"}}
			c.NodeSet(n, 0)
			if !c.ensureEngine() {
				t.Fatal("no engine")
			}
			n.Labels = tc.labels
			c.NodeSet(n, 1)
			if c.dirty != tc.rebuild {
				t.Errorf("graph to be rebuilt: %v, want %v", c.dirty, tc.rebuild)
			}
			if v := c.vertexOf["n1"]; !tc.rebuild && !maps.Equal(c.m.Graph().Vertex(v).Properties, tc.labels) {
				t.Errorf("node properties %v, want %v in place", c.m.Graph().Vertex(v).Properties, tc.labels)
			}
		})
	}
}
