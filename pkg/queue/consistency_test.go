package queue

import (
	"slices"
	"testing"

	"github.com/fluence-sched/fluence/pkg/match"
)

// A loop that fails on one group leaves the queue consistent: the groups
// it started before the failure are running and no longer pending, so the
// next loop does not match them again (the matcher would answer "job
// already exists" for ever).
func TestFailedLoopLeavesQueueConsistent(t *testing.T) {
	h := newHarness(t, Config{Policy: Easy})
	h.submit(1, 0, 0, nodes(1, 10))
	h.submit(2, 0, 1, nodes(1, 10))
	h.submit(3, 0, 2, nodes(1, 10))
	// The matcher already holds a job with group 2's id: matching group 2
	// is an internal error.
	if _, err := h.m.Match(match.Allocate, nodes(1, 10), 2, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.q.Schedule(0); err == nil {
		t.Fatal("the loop should fail on group 2")
	}
	if got := h.q.Running(); !slices.Equal(got, []int64{1}) {
		t.Fatalf("running after the failed loop: %v, want [1]", got)
	}
	var pending []int64
	for _, g := range h.q.Pending() {
		pending = append(pending, g.ID)
	}
	if !slices.Equal(pending, []int64{2, 3}) {
		t.Fatalf("pending after the failed loop: %v, want [2 3]", pending)
	}
	// Once the stray job is gone the next loop places the rest.
	if err := h.m.Cancel(2); err != nil {
		t.Fatal(err)
	}
	if got := h.schedule(1); got != "2:running@1 3:running@1" {
		t.Fatalf("next loop: %s", got)
	}
}
