package match

import (
	"testing"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// A job extended past its planned end keeps its cores: a later request
// for the whole node must wait for the new end, not the old one.
func TestExtendKeepsResourcesPastPlannedEnd(t *testing.T) {
	g, err := resource.Build("cluster").Node("n0", resource.Cores(2)).Finish()
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(g, Options{Policy: "first"})
	if err != nil {
		t.Fatal(err)
	}
	one := jobspec.New(jobspec.Slot(1, "s").With(jobspec.R("core", 1))).Duration(100).Obj()
	all := jobspec.New(jobspec.Slot(1, "s").With(jobspec.R("core", 2))).Duration(10).Obj()
	if r, err := m.Match(Allocate, one, 1, 0); err != nil || r.Status != Allocated {
		t.Fatalf("allocate: %v %v", r, err)
	}
	if err := m.Extend(1, 300); err != nil {
		t.Fatal(err)
	}
	info, _ := m.Info(1)
	if info.At != 0 || info.Duration != 300 {
		t.Fatalf("extended job: at %d duration %d, want 0 and 300", info.At, info.Duration)
	}
	r, err := m.Match(AllocateOrElseReserve, all, 2, 150)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != Reserved || r.At != 300 {
		t.Fatalf("whole node: status %s at %d, want reserved at 300", r.Status, r.At)
	}
	// Extending into the reservation fails and changes nothing.
	if err := m.Extend(1, 400); err == nil {
		t.Fatal("extending into a reservation succeeded")
	}
	if info, _ := m.Info(1); info.Duration != 300 {
		t.Fatalf("failed extend changed the duration to %d", info.Duration)
	}
	if err := m.Cancel(2); err != nil {
		t.Fatal(err)
	}
	if err := m.Extend(1, 400); err != nil {
		t.Fatalf("extend after the reservation was cancelled: %v", err)
	}
	if err := m.Extend(99, 10); err == nil {
		t.Fatal("extending an unknown job succeeded")
	}
}
