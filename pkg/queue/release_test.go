package queue

import (
	"errors"
	"slices"
	"testing"

	"github.com/fluence-sched/fluence/pkg/jobspec"
)

// slots asks for n slots of four cores (a whole node each), for dur.
func slots(n, dur int64) *jobspec.Jobspec {
	return jobspec.New(jobspec.Slot(n, "t").With(jobspec.R("core", 4))).Duration(dur).Obj()
}

// Release frees a running group's part on one node: the group waiting
// for that room starts at once, the rest of the first group runs on, and
// the queue and the matcher agree after each step; releasing the last
// part ends the group as Complete would. A failed release changes
// nothing.
func TestReleaseFreesOneNode(t *testing.T) {
	h := newHarness(t, Config{Policy: Easy})
	h.submit(1, 0, 0, slots(3, 100))
	h.submit(2, 0, 0, slots(2, 100))
	if got := h.schedule(0); got != "1:running@0 2:reserved@100" {
		t.Fatalf("schedule(0) = %q", got)
	}
	info, _ := h.m.Info(1)
	var held []int32
	for _, n := range info.Nodes {
		held = append(held, n.Vertex)
	}
	if len(held) != 3 {
		t.Fatalf("group 1 holds %d nodes, want 3", len(held))
	}

	f := h.faulty()
	f.fail = func(_ int, op string, _ int64) bool { return op == "partial cancel" }
	if _, err := h.q.Release(1, held[:1]); !errors.Is(err, errInjected) {
		t.Fatalf("Release with a failing matcher: %v, want the injected error", err)
	}
	if err := h.q.Check(); err != nil {
		t.Fatalf("after a failed release: %v", err)
	}
	if after, _ := h.m.Info(1); len(after.Nodes) != 3 {
		t.Fatalf("a failed release left group 1 on %d nodes", len(after.Nodes))
	}

	f.fail = nil
	gone, err := h.q.Release(1, held[:1])
	if err != nil || gone {
		t.Fatalf("Release(1, one node) = %v, %v", gone, err)
	}
	if err := h.q.Check(); err != nil {
		t.Fatal(err)
	}
	if got := h.schedule(5); got != "2:running@5" {
		t.Fatalf("schedule(5) after the release = %q, want group 2 started", got)
	}
	if err := h.q.Check(); err != nil {
		t.Fatal(err)
	}
	if gone, err := h.q.Release(1, held[1:]); err != nil || !gone {
		t.Fatalf("Release(1, its other nodes) = %v, %v, want gone", gone, err)
	}
	if err := h.q.Check(); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(h.q.Running(), 1) {
		t.Fatal("group 1 still running after all of it was released")
	}
	if _, err := h.q.Release(1, held[:1]); err == nil {
		t.Fatal("releasing a group that is not running succeeded")
	}
}
