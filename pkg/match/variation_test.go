package match

import (
	"testing"

	"github.com/fluence-sched/fluence/pkg/resource"
)

// The variation policy follows a node's perf_class when it changes in
// place, as the gang core relabels a node without rebuilding the graph:
// the order cached by the first match must not outlive the labels it was
// sorted on.
func TestVariationFollowsInPlaceRelabel(t *testing.T) {
	tests := []struct {
		name    string
		relabel func(v *resource.Vertex)
		want    string // where the second job goes
	}{
		{"properties replaced", func(v *resource.Vertex) { v.Properties = map[string]string{"perf_class": "9"} }, "node1"},
		{"property written in the map", func(v *resource.Vertex) { v.Properties["perf_class"] = "9" }, "node1"},
		{"property removed", func(v *resource.Vertex) { delete(v.Properties, "perf_class") }, "node1"},
		{"other label changed", func(v *resource.Vertex) { v.Properties["zone"] = "b" }, "node0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := resource.Build("cluster").
				Node("node0", resource.Props{"perf_class": "1"}, resource.Cores(4)).
				Node("node1", resource.Props{"perf_class": "2"}, resource.Cores(4)).
				Node("node2", resource.Props{"perf_class": "3"}, resource.Cores(4)).
				Graph()
			m, err := New(g, Options{Policy: "variation"})
			if err != nil {
				t.Fatal(err)
			}
			if got := onNode(t, m, 1); got != "node0" {
				t.Fatalf("first job on %s, want node0 (perf_class 1)", got)
			}
			if err := m.Cancel(1); err != nil {
				t.Fatal(err)
			}
			tt.relabel(g.Vertex(g.ByName("node0")[0]))
			if got := onNode(t, m, 2); got != tt.want {
				t.Errorf("after the relabel the job went to %s, want %s", got, tt.want)
			}
		})
	}
}

// onNode allocates one core as job id and returns its node.
func onNode(t *testing.T, m *Matcher, id int64) string {
	t.Helper()
	res := mustMatch(t, m, Allocate, slotCores(1, 1, 60), id, 0)
	if res.Status != Allocated || len(res.Nodes) != 1 {
		t.Fatalf("job %d: %s on %+v", id, res.Status, res.Nodes)
	}
	return res.Nodes[0].Name
}
