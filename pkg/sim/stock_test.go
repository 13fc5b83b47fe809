package sim

import (
	"slices"
	"testing"
)

func TestLeastAllocatedScore(t *testing.T) {
	for _, tc := range []struct {
		name             string
		alloc, free, pod PodSpec
		want             int64
	}{
		// (3000-2000)*100/3000 = 33: one 2-CPU pod on an empty 3-CPU node.
		{"cpu only", PodSpec{CPU: 3000}, PodSpec{CPU: 3000}, PodSpec{CPU: 2000}, 33},
		{"cpu only, node in use", PodSpec{CPU: 3000}, PodSpec{CPU: 2000}, PodSpec{CPU: 2000}, 0},
		// cpu 75, memory 75.
		{"cpu and memory", PodSpec{CPU: 4000, Memory: 8 * mGiB}, PodSpec{CPU: 4000, Memory: 8 * mGiB}, PodSpec{CPU: 1000, Memory: 2 * mGiB}, 75},
		// cpu 75, memory 50: (75+50)/2 truncated.
		{"memory tighter", PodSpec{CPU: 4000, Memory: 4 * mGiB}, PodSpec{CPU: 4000, Memory: 4 * mGiB}, PodSpec{CPU: 1000, Memory: 2 * mGiB}, 62},
		// No memory request: memory does not count.
		{"no memory request", PodSpec{CPU: 4000, Memory: 4 * mGiB}, PodSpec{CPU: 4000, Memory: mGiB}, PodSpec{CPU: 1000}, 75},
	} {
		if got := leastAllocatedScore(tc.alloc, tc.free, tc.pod); got != tc.want {
			t.Errorf("%s: score %d, want %d", tc.name, got, tc.want)
		}
	}
}

// Hand-worked placements and outcomes of the stock model. Nodes have 3
// CPUs unless said otherwise, so at most one 2-CPU pod fits per node.
func TestStock(t *testing.T) {
	type pods map[string][]int // group -> node per pod
	for _, tc := range []struct {
		name    string
		cluster Cluster
		groups  []GroupSpec
		// prio sets group priorities by name.
		prio map[string]int64
		// attempt is the time per attempt (0: instantaneous); gap the
		// time between a group's pod releases (0: all at once).
		attempt, gap float64
		wantNodes    pods
		wantStarts   map[string]float64
		completed    int
		stalled      bool
		stalledAt    float64
		pending      int
		running      int
		holding      int
	}{
		{
			// a0: both nodes score 33, tie -> n0; a1 fits only n1. B's pods
			// fit nowhere until A is released at 10, then take n0 and n1.
			name:    "two gangs take turns",
			cluster: mNodes(2, 3),
			groups: []GroupSpec{
				mGroup("A", 0, 2, 2, 10),
				mGroup("B", 0, 2, 2, 10),
			},
			wantNodes:  pods{"A": {0, 1}, "B": {0, 1}},
			wantStarts: map[string]float64{"A": 0, "B": 10},
			completed:  2,
		},
		{
			// LeastAllocated spreads: after a0 on n0 (score 75 on an empty
			// 4-CPU node), n0 scores 50 and the empty nodes 75.
			name:    "spreading",
			cluster: mNodes(3, 4),
			groups: []GroupSpec{
				mGroup("A", 0, 3, 1, 10),
				mGroup("B", 0, 1, 2, 10),
			},
			wantNodes:  pods{"A": {0, 1, 2}, "B": {0}},
			wantStarts: map[string]float64{"A": 0, "B": 0},
			completed:  2,
		},
		{
			// A runs on n0, n1. B (t=1) gets n2 and waits for two more
			// nodes. C (t=2, higher priority) fits nowhere. At 10 A is
			// released and C, first in the queue, takes n0 and n1: B holds
			// n2, C holds n0 and n1, neither can ever complete.
			name:    "partial gangs deadlock",
			cluster: mNodes(3, 3),
			groups: []GroupSpec{
				mGroup("A", 0, 2, 2, 10),
				mGroup("B", 1, 3, 2, 10),
				mGroup("C", 2, 3, 2, 10),
			},
			prio:       map[string]int64{"C": 10},
			wantNodes:  pods{"A": {0, 1}, "B": {2, -1, -1}, "C": {0, 1, -1}},
			wantStarts: map[string]float64{"A": 0, "B": -1, "C": -1},
			completed:  1,
			stalled:    true, stalledAt: 10, pending: 3, running: 3, holding: 2,
		},
		{
			// One attempt a second. a0 at 0 -> n0, a1 at 1 -> n1 (A runs
			// 1-11); b0, b1, c0, c1 fail at 2-5 and wait. A's pods free
			// n0 at 11 and n1 at 13. At 11 the waiting pods come back in
			// queue order: b0 takes n0, b1 fails at 12 (back-off to 14).
			// At 13 the pass has reached c0, which takes n1: B and C hold
			// one node each, and neither can complete (the last progress was
			// A's completion at 11).
			name:       "a freed node goes to the pod tried next",
			cluster:    mNodes(2, 3),
			attempt:    1,
			gap:        2,
			groups:     []GroupSpec{mGroup("A", 0, 2, 2, 10), mGroup("B", 0, 2, 2, 10), mGroup("C", 0, 2, 2, 10)},
			wantNodes:  pods{"A": {0, 1}, "B": {0, -1}, "C": {1, -1}},
			wantStarts: map[string]float64{"A": 1, "B": -1, "C": -1},
			completed:  1,
			stalled:    true, stalledAt: 11, pending: 2, running: 2, holding: 2,
		},
		{
			// The same with instantaneous attempts (A runs 0-10, frees
			// n0 at 10 and n1 at 12): b1 is first in the queue at 12 and
			// takes n1. C's pods failed at 0, 10 and 12 (back-off 4 s);
			// at 22 c0 takes n0 and c1 fails again (back-off 8 s), so c1
			// binds only at 30, though n1 is free from 24.
			name:       "instantaneous attempts: the oldest gang wins",
			cluster:    mNodes(2, 3),
			gap:        2,
			groups:     []GroupSpec{mGroup("A", 0, 2, 2, 10), mGroup("B", 0, 2, 2, 10), mGroup("C", 0, 2, 2, 10)},
			wantNodes:  pods{"A": {0, 1}, "B": {0, 1}, "C": {0, 1}},
			wantStarts: map[string]float64{"A": 0, "B": 12, "C": 30},
			completed:  3,
		},
		{
			// A pod larger than any node never binds: Pending for good.
			name:       "never fits",
			cluster:    mNodes(1, 2),
			groups:     []GroupSpec{mGroup("A", 0, 1, 4, 10)},
			wantNodes:  pods{"A": {-1}},
			wantStarts: map[string]float64{"A": -1},
			stalled:    true, pending: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.groups {
				tc.groups[i].Priority = tc.prio[tc.groups[i].Name]
			}
			w := &Workload{Name: tc.name, Cluster: tc.cluster, Groups: tc.groups}
			rec := &recorder{Scheduler: NewStockWith(StockOptions{Backoff: DefaultBackoff, AttemptSeconds: tc.attempt})}
			gap := tc.gap
			if gap == 0 {
				gap = -1 // Options reads 0 as the default gap
			}
			r := mRun(t, w, rec, Options{PodReleaseGap: gap})
			for name, want := range tc.wantNodes {
				if got := rec.nodes[name]; !slices.Equal(got, want) {
					t.Errorf("%s on nodes %v, want %v", name, got, want)
				}
			}
			mCheckStarts(t, r, tc.wantStarts)
			if r.JobsCompleted != tc.completed || r.Stalled != tc.stalled {
				t.Errorf("completed %d stalled %v, want %d %v", r.JobsCompleted, r.Stalled, tc.completed, tc.stalled)
			}
			if tc.stalled && (r.StalledAt != tc.stalledAt || r.PendingAtStall != tc.pending ||
				r.RunningAtStall != tc.running || r.JobsHoldingAtStall != tc.holding) {
				t.Errorf("stall at %v: %d pending %d running %d holding, want %v %d %d %d",
					r.StalledAt, r.PendingAtStall, r.RunningAtStall, r.JobsHoldingAtStall,
					tc.stalledAt, tc.pending, tc.running, tc.holding)
			}
		})
	}
}

// Memory counts in the score when pods request it: n0 has less memory, so
// the pod asking for 2 GiB scores 62 there and 75 on n1; a pod asking for
// none is scored on cpu alone and goes to the emptier node.
func TestStockScoresMemory(t *testing.T) {
	w := &Workload{
		Cluster: Cluster{Nodes: []NodeSpec{
			{Name: "n0", CPU: 4000, Memory: 4 * mGiB},
			{Name: "n1", CPU: 4000, Memory: 8 * mGiB},
		}},
		Groups: []GroupSpec{
			{Name: "A", Pods: []PodSpec{{CPU: 1000, Memory: 2 * mGiB}}, Runtime: 10},
			{Name: "B", Pods: []PodSpec{{CPU: 1000}}, Runtime: 10},
		},
	}
	rec := &recorder{Scheduler: NewStock()}
	mRun(t, w, rec, Options{})
	if !slices.Equal(rec.nodes["A"], []int{1}) || !slices.Equal(rec.nodes["B"], []int{0}) {
		t.Errorf("placements %v, want A on n1, B on n0", rec.nodes)
	}
}

// recorder wraps a scheduler and remembers where each group's pods were
// bound (the env's PodNode, read when the group is released or at the end).
type recorder struct {
	Scheduler
	env   *Env
	nodes map[string][]int
}

func (r *recorder) Start(env *Env) error {
	r.env, r.nodes = env, map[string][]int{}
	return r.Scheduler.Start(env)
}

func (r *recorder) Release(g *Group) error {
	r.nodes[g.Spec.Name] = slices.Clone(g.PodNode)
	return r.Scheduler.Release(g)
}

func (r *recorder) Schedule() error {
	err := r.Scheduler.Schedule()
	for _, g := range r.env.Groups() {
		if g.Released < 0 {
			r.nodes[g.Spec.Name] = slices.Clone(g.PodNode)
		}
	}
	return err
}
