package match

import (
	"testing"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// ReserveFrom reserves at the earliest time not before from, even on an
// idle graph; the reservation leaves the nodes free for jobs that end
// before it; a request that never fits is Unsatisfiable; from must be
// after now.
func TestReserveFrom(t *testing.T) {
	m, err := New(resource.MustGenerate("cluster[1]->node[2]->core[2]"), Options{Policy: "lonode"})
	if err != nil {
		t.Fatal(err)
	}
	both := jobspec.New(jobspec.R("node", 2).Exclusive().With(jobspec.Slot(1, "s").With(jobspec.R("core", 1)))).Duration(10).Obj()
	one := func(dur int64) *jobspec.Jobspec {
		return jobspec.New(jobspec.Slot(1, "s").With(jobspec.R("core", 1))).Duration(dur).Obj()
	}
	res, err := m.ReserveFrom(both, 1, 0, 5)
	if err != nil || res.Status != Reserved || res.At != 5 {
		t.Fatalf("idle graph, from 5: %+v, %v", res, err)
	}
	if res, _ := m.Match(Allocate, one(5), 2, 0); res.Status != Allocated {
		t.Fatalf("a job ending at 5 beside a reservation at 5: %+v", res)
	}
	if res, _ := m.Match(Allocate, one(6), 3, 0); res.Status != Busy {
		t.Fatalf("a job ending at 6 would overlap the reservation: %+v", res)
	}
	// With job 2 holding a core until 5 on one node, another reservation
	// of both nodes from 1 lands after job 1's, at 15.
	if res, err := m.ReserveFrom(both, 4, 0, 1); err != nil || res.Status != Reserved || res.At != 15 {
		t.Fatalf("both nodes from 1: %+v, %v", res, err)
	}
	three := jobspec.New(jobspec.R("node", 3).With(jobspec.Slot(1, "s").With(jobspec.R("core", 1)))).Duration(1).Obj()
	if res, err := m.ReserveFrom(three, 5, 0, 1); err != nil || res.Status != Unsatisfiable {
		t.Fatalf("three nodes of two: %+v, %v", res, err)
	}
	if _, err := m.ReserveFrom(one(1), 6, 3, 3); err == nil {
		t.Fatal("from == now accepted")
	}
}
