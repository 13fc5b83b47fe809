package match

import (
	"slices"
	"testing"
)

// FitsWithout answers as if the named jobs were gone, and changes
// nothing: the jobs keep their nodes and the cluster stays as busy.
func TestFitsWithout(t *testing.T) {
	m := newMatcher(t, "cluster[1]->node[2]->core[4]", "lonode")
	for id := int64(1); id <= 2; id++ {
		if r, err := m.Match(Allocate, slotCores(1, 4, 100), id, 0); err != nil || r.Status != Allocated {
			t.Fatalf("job %d: %v %v", id, r, err)
		}
	}
	both := slotCores(2, 4, 50)
	for _, tc := range []struct {
		without []int64
		want    Status
	}{
		{nil, Busy},
		{[]int64{1}, Busy},
		{[]int64{2, 2}, Busy},
		{[]int64{1, 2}, Allocated},
	} {
		r, err := m.FitsWithout(both, 9, 10, tc.without)
		if err != nil || r.Status != tc.want {
			t.Errorf("without %v: %v %v, want %v", tc.without, r.Status, err, tc.want)
		}
	}
	if _, err := m.FitsWithout(both, 9, 10, []int64{3}); err == nil {
		t.Error("a job that does not exist: no error")
	}
	// Nothing moved: both jobs still hold their node, and the two-node
	// job still finds the cluster busy.
	for id := int64(1); id <= 2; id++ {
		if info, ok := m.Info(id); !ok || len(info.Nodes) != 1 {
			t.Errorf("job %d after: %+v %v", id, info, ok)
		}
	}
	if r, err := m.Fits(both, 9, 10); err != nil || r.Status != Busy {
		t.Errorf("after: %v %v, want busy", r.Status, err)
	}
	for id := int64(1); id <= 2; id++ {
		if err := m.Cancel(id); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := m.Match(Allocate, both, 3, 10); err != nil || r.Status != Allocated {
		t.Errorf("once the jobs are cancelled: %v %v", r, err)
	}
}

// FitsWithoutParts takes away only what a job holds on the named nodes:
// a two-node job gives up one node, and the rest of it still counts.
func TestFitsWithoutParts(t *testing.T) {
	m := newMatcher(t, "cluster[1]->node[3]->core[4]", "lonode")
	if r, err := m.Match(Allocate, slotCores(2, 4, 100), 1, 0); err != nil || r.Status != Allocated {
		t.Fatalf("job 1: %v %v", r, err)
	}
	if r, err := m.Match(Allocate, slotCores(1, 4, 100), 2, 0); err != nil || r.Status != Allocated {
		t.Fatalf("job 2: %v %v", r, err)
	}
	info, _ := m.Info(1)
	one, two := slotCores(1, 4, 50), slotCores(2, 4, 50)
	first := info.Nodes[0].Vertex
	for _, tc := range []struct {
		name    string
		without []Without
		js      int
		want    Status
	}{
		{"nothing", nil, 1, Busy},
		{"one node of job 1", []Without{{ID: 1, Vertices: []int32{first}}}, 1, Allocated},
		{"one node of job 1, two nodes asked", []Without{{ID: 1, Vertices: []int32{first}}}, 2, Busy},
		{"one node of job 1 and job 2", []Without{{ID: 1, Vertices: []int32{first}}, {ID: 2}}, 2, Allocated},
		{"a part and the whole of job 1", []Without{{ID: 1, Vertices: []int32{first}}, {ID: 1}}, 2, Allocated},
		{"a node job 1 does not hold", []Without{{ID: 1, Vertices: []int32{otherNode(t, m, info.Nodes)}}}, 1, Busy},
	} {
		js := one
		if tc.js == 2 {
			js = two
		}
		r, err := m.FitsWithoutParts(js, 9, 10, tc.without)
		if err != nil || r.Status != tc.want {
			t.Errorf("%s: %v %v, want %v", tc.name, r.Status, err, tc.want)
		}
	}
	if _, err := m.FitsWithoutParts(one, 9, 10, []Without{{ID: 1, Vertices: []int32{int32(m.g.Len())}}}); err == nil {
		t.Error("a vertex out of range: no error")
	}
	// Nothing moved.
	if r, err := m.Fits(one, 9, 10); err != nil || r.Status != Busy {
		t.Errorf("after: %v %v, want busy", r.Status, err)
	}
	if info2, _ := m.Info(1); len(info2.Nodes) != 2 {
		t.Errorf("job 1 after: %+v", info2)
	}
}

// otherNode is a node of the matcher's graph not among nodes.
func otherNode(t *testing.T, m *Matcher, nodes []NodeUsage) int32 {
	t.Helper()
	for v := range int32(m.g.Len()) {
		held := slices.ContainsFunc(nodes, func(n NodeUsage) bool { return n.Vertex == v })
		if m.isNodeType(m.g.Vertex(v).Type) && !held {
			return v
		}
	}
	t.Fatal("every node is taken")
	return -1
}
