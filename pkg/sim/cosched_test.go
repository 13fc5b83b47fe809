package sim

import (
	"slices"
	"testing"
)

// Hand-worked cases of the coscheduling model. Nodes have 3 CPUs and pods
// 2, so one pod fits per node.

// A gang that fits is bound as a whole when its last member is assumed.
func TestCoschedulingPermitSuccess(t *testing.T) {
	w := &Workload{Cluster: mNodes(2, 3), Groups: []GroupSpec{mGroup("A", 0, 2, 2, 5)}}
	rec := &recorder{Scheduler: NewCoscheduling(10)}
	r := mRun(t, w, rec, Options{})
	mCheckStarts(t, r, map[string]float64{"A": 0})
	if !slices.Equal(rec.nodes["A"], []int{0, 1}) || r.JobsCompleted != 1 {
		t.Errorf("A on %v, %d completed", rec.nodes["A"], r.JobsCompleted)
	}
}

// A waiting member holds its node (assumed, still Pending in the env) until
// its sibling fits, then both bind at once. P takes n0 (ties go to the
// lowest node); at 0.5 a0 is assumed on n1 and waits; a1 fits nowhere, and
// with podGroupRejectPercentage 50 one missing member of two (50 %) is not
// enough to reject a0. When P is released at 5, a1 takes n0 and the group
// starts, well inside the 10 s Permit wait.
func TestCoschedulingWaitThenBind(t *testing.T) {
	w := &Workload{Cluster: mNodes(2, 3), Groups: []GroupSpec{
		mGroup("P", 0, 1, 2, 5),
		mGroup("A", 0.5, 2, 2, 5),
	}}
	rec := &recorder{Scheduler: NewCoschedulingWith(CoschedulingOptions{PermitTimeout: 10, RejectPercentage: 50, Backoff: DefaultBackoff})}
	r := mRun(t, w, rec, Options{})
	mCheckStarts(t, r, map[string]float64{"P": 0, "A": 5})
	if !slices.Equal(rec.nodes["A"], []int{1, 0}) {
		t.Errorf("A on %v, want [1 0]", rec.nodes["A"])
	}
	// At 0.5 only P's pod is bound; A's assumed pod still counts Pending.
	if len(r.Timeline) < 2 {
		t.Fatalf("timeline %+v", r.Timeline)
	}
	if s := r.Timeline[1]; s.T != 0.5 || s.Running != 1 || s.Pending != 2 {
		t.Errorf("sample %+v, want t=0.5 Running 1 Pending 2", s)
	}
}

// A can never assemble (3 pods, 2 nodes) but, with reject percentage 50,
// PostFilter does not reject its two assumed pods (one missing member of
// three is 33 %): they hold both nodes until the Permit timeout at 10. B
// (t=1) fails and records its failure at 1. At 10 the timeout rejects A's
// waiting pods and sets A's failure time to 10, so B (timestamp 1) sorts
// first and runs. A then livelocks until the stall window ends the run.
//
// With the QueueSort of before PR #949 (creation time only) A, created
// first, re-takes both nodes after every timeout and B starves (the
// scheduler-plugins #713 report).
func TestCoschedulingTimeoutFreesNodes(t *testing.T) {
	for _, tc := range []struct {
		name          string
		creationOrder bool
		bStart        float64
		completed     int
		stalledAt     float64
	}{
		{"PR 949 order", false, 10, 1, 15},
		{"creation order", true, -1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Workload{Cluster: mNodes(2, 3), Groups: []GroupSpec{
				mGroup("A", 0, 3, 2, 5),
				mGroup("B", 1, 1, 2, 5),
			}}
			s := NewCoschedulingWith(CoschedulingOptions{PermitTimeout: 10, RejectPercentage: 50,
				Backoff: DefaultBackoff, CreationOrder: tc.creationOrder})
			r := mRun(t, w, s, Options{StallWindow: 100})
			mCheckStarts(t, r, map[string]float64{"A": -1, "B": tc.bStart})
			if !r.Stalled || r.JobsCompleted != tc.completed || r.StalledAt != tc.stalledAt ||
				r.SimulatedUntil != tc.stalledAt+100 || r.RunningAtStall != 0 {
				t.Errorf("%s", mSummary(r))
			}
		})
	}
}

// A gang that can never assemble keeps the model busy (timeouts or
// PostFilter rejections, and back-off retries) without progress: the env
// stops it as a livelock after its stall window.
func TestCoschedulingLivelockStalls(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts CoschedulingOptions
	}{
		// Default: the third pod's PostFilter rejects the two assumed ones
		// at once; back-off (1, 2, 4, 8, 10 s) paces the retries.
		{"postfilter rejection", CoschedulingOptions{PermitTimeout: 10, RejectPercentage: 10, Backoff: DefaultBackoff}},
		// No PostFilter rejection: the Permit timeout every 10 s.
		{"permit timeout", CoschedulingOptions{PermitTimeout: 10, RejectPercentage: 50, Backoff: DefaultBackoff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Workload{Cluster: mNodes(2, 3), Groups: []GroupSpec{mGroup("A", 0, 3, 2, 5)}}
			r := mRun(t, w, NewCoschedulingWith(tc.opts), Options{StallWindow: 60})
			if !r.Stalled || r.StalledAt != 0 || r.SimulatedUntil != 60 ||
				r.PendingAtStall != 3 || r.RunningAtStall != 0 || r.JobsCompleted != 0 {
				t.Errorf("%s; simulated until %v", mSummary(r), r.SimulatedUntil)
			}
			if r.Steps < 3 {
				t.Errorf("only %d steps: a freeze, not a livelock", r.Steps)
			}
		})
	}
}

// Two gangs of two on two nodes, both present at once: A (created first)
// takes both nodes and runs; B follows when A is released. Permit waits
// never expire.
func TestCoschedulingGangsInTurn(t *testing.T) {
	w := &Workload{Cluster: mNodes(2, 3), Groups: []GroupSpec{
		mGroup("A", 0, 2, 2, 5),
		mGroup("B", 0, 2, 2, 5),
	}}
	r := mRun(t, w, NewCoscheduling(10), Options{})
	mCheckStarts(t, r, map[string]float64{"A": 0, "B": 5})
	if r.Stalled || r.JobsCompleted != 2 {
		t.Errorf("%s", mSummary(r))
	}
}

// Groups created at the same time are ordered by name (QueueSort's
// namespace/name tie-break), not by submission order.
func TestCoschedulingNameTieBreak(t *testing.T) {
	w := &Workload{Cluster: mNodes(2, 3), Groups: []GroupSpec{
		mGroup("Z", 0, 2, 2, 5),
		mGroup("A", 0, 2, 2, 5),
	}}
	r := mRun(t, w, NewCoscheduling(10), Options{})
	mCheckStarts(t, r, map[string]float64{"A": 0, "Z": 5})
}
