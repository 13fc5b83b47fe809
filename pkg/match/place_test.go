package match

import (
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/jobspec"
)

func nodeVertex(t *testing.T, m *Matcher, name string) int32 {
	t.Helper()
	vs := m.g.ByName(name)
	if len(vs) != 1 {
		t.Fatalf("no unique vertex %s", name)
	}
	return vs[0]
}

func TestPlaceReplaysARecordedAllocation(t *testing.T) {
	js := jobspec.New(
		jobspec.Slot(2, "worker").With(jobspec.R("core", 3)),
		jobspec.Slot(1, "gpu").With(jobspec.R("core", 1), jobspec.R("gpu", 1)),
	).Duration(600).Obj()
	m := newMatcher(t, tiny, "first")
	first := mustMatch(t, m, Allocate, js, 1, 0)
	if first.Status != Allocated || len(first.Slots) != 3 {
		t.Fatalf("setup: %s %+v", first.Status, first.Slots)
	}
	var nodes []int32
	for _, sl := range first.Slots {
		nodes = append(nodes, sl.Vertex)
	}
	// A restarted scheduler replays the record into a fresh matcher.
	m2 := newMatcher(t, tiny, "first")
	res, err := m2.Place(js, 1, 0, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != Allocated {
		t.Fatalf("replay: %s %s", res.Status, res.Reason)
	}
	for i, sl := range res.Slots {
		if sl.Vertex != nodes[i] || sl.Label != first.Slots[i].Label {
			t.Fatalf("slot %d replayed on %+v, recorded %+v", i, sl, first.Slots[i])
		}
	}
	c1, g1, _ := totalCores(first.Nodes)
	c2, g2, _ := totalCores(res.Nodes)
	if c1 != c2 || g1 != g2 {
		t.Fatalf("replay holds %d cores %d gpus, the original %d and %d", c2, g2, c1, g1)
	}
	if err := m2.Cancel(1); err != nil || !m2.idle() {
		t.Fatalf("cancel after replay: %v, idle %v", err, m2.idle())
	}
}

func TestPlaceAccountsForeignPodsAndRefusesOvercommit(t *testing.T) {
	m := newMatcher(t, tiny, "lonode")
	n0 := nodeVertex(t, m, "node0")
	pod := jobspec.New(jobspec.Slot(1, "pod").With(jobspec.R("core", 6))).Duration(0).Obj()
	// A pod another scheduler bound to node0, on a node marked down (cordoned):
	// it is there, so it is accounted.
	if err := m.MarkDown(n0); err != nil {
		t.Fatal(err)
	}
	if res, err := m.Place(pod, 100, 0, []int32{n0}); err != nil || res.Status != Allocated {
		t.Fatalf("foreign pod: %v %+v", err, res)
	}
	if err := m.MarkUp(n0); err != nil {
		t.Fatal(err)
	}
	// node0 has 2 of 8 cores left: a second 6-core pod does not fit there,
	// and the refusal changes nothing.
	res, err := m.Place(pod, 101, 0, []int32{n0})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != Busy || !strings.Contains(res.Reason, "node0") {
		t.Fatalf("over-commit: got %s %q", res.Status, res.Reason)
	}
	if _, ok := m.Info(101); ok {
		t.Fatal("a refused placement left a job behind")
	}
	// The engine's own matches see the foreign pod.
	big := jobspec.New(jobspec.Slot(1, "p").With(jobspec.R("core", 3))).Duration(60).Obj()
	got := mustMatch(t, m, Allocate, big, 1, 0)
	if got.Status != Allocated || got.Nodes[0].Name == "node0" {
		t.Fatalf("a 3-core pod went to %+v; node0 has 2 cores free", got.Nodes)
	}
}

func TestPlaceRejectsBadInput(t *testing.T) {
	m := newMatcher(t, tiny, "first")
	n0 := nodeVertex(t, m, "node0")
	core := m.g.ByTypeName("core")[0]
	slot2 := jobspec.New(jobspec.Slot(2, "p").With(jobspec.R("core", 1))).Duration(60).Obj()
	nodeShape := nodesX(1, 60)
	cases := []struct {
		name  string
		js    *jobspec.Jobspec
		nodes []int32
		want  string
	}{
		{"too few nodes", slot2, []int32{n0}, "2 slots, 1 nodes"},
		{"leaf vertex", slot2, []int32{n0, core}, "not an inner vertex"},
		{"out of range", slot2, []int32{n0, 99999}, "not an inner vertex"},
		{"not slots at the top", nodeShape, []int32{n0}, "top level is slots"},
		{"nil jobspec", nil, nil, "no jobspec"},
	}
	for _, c := range cases {
		res, err := m.Place(c.js, 1, 0, c.nodes)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Status != Invalid || !strings.Contains(res.Reason, c.want) {
			t.Errorf("%s: got %s %q, want INVALID containing %q", c.name, res.Status, res.Reason, c.want)
		}
	}
	if !m.idle() {
		t.Fatal("invalid placements changed state")
	}
}
