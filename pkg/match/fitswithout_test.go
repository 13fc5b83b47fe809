package match

import (
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
