package sim

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/queue"
)

func preemptTestConfig() FluenceConfig {
	return FluenceConfig{Queue: queue.Config{Policy: queue.Easy, QueueDepth: queue.DefaultQueueDepth,
		ReservationDepth: queue.DefaultReservationDepth, Packing: true}}
}

// The outcome preemption is for, on the urgent workload: with the
// scheduler's default preemption (after 60 s) the urgent groups' mean
// wait falls to a small fraction of what it is without (measured: 5.0 s
// against 168.5 s, the 5 s being the evicted pods' grace period); the
// work lost to evictions is reported, and is 0 without preemption; every
// group completes either way; no fluence group is ever bound in part (the
// core's invariants are checked after every event, as in every test).
func TestUrgentPreemption(t *testing.T) {
	w := UrgentWorkload()
	run := func(p *gang.Preemption) (*Result, []PreemptionRecord) {
		t.Helper()
		cfg := preemptTestConfig()
		cfg.Preemption = p
		s, err := NewFluence(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(w, s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r, Preemptions(s)
	}
	p := DefaultPreemption
	off, offPre := run(nil)
	on, onPre := run(&p)
	so, sp := SummarizePreemption(off), SummarizePreemption(on)
	t.Logf("urgent mean wait %.1f s without preemption, %.1f s with (max %.1f, %.1f); work lost %.0f pod-s (%.1f%%); makespan %.0f s, %.0f s",
		so.UrgentMean, sp.UrgentMean, so.UrgentMax, sp.UrgentMax, sp.WorkLost, 100*sp.LostShare, so.Makespan, sp.Makespan)

	for _, tc := range []struct {
		name string
		s    PreemptionSummary
		r    *Result
	}{{"without preemption", so, off}, {"with preemption", sp, on}} {
		if tc.s.Completed != len(w.Groups) || tc.s.Stalled || math.IsNaN(tc.s.Makespan) {
			t.Errorf("%s: %d/%d groups completed (stalled %v)", tc.name, tc.s.Completed, len(w.Groups), tc.s.Stalled)
		}
		if tc.s.Urgent != 6 || tc.s.UrgentStarted != 6 || tc.s.UrgentPriority != UrgentPriority {
			t.Errorf("%s: %d of %d urgent groups (priority %d) started", tc.name, tc.s.UrgentStarted, tc.s.Urgent, tc.s.UrgentPriority)
		}
		if tc.s.PartialMax != 0 || tc.s.EvictedInPart != 0 || tc.r.PartialPodSeconds != 0 {
			t.Errorf("%s: a fluence group was bound in part (at most %d at once, %.1f pod-s; %d evictions left part of a group)",
				tc.name, tc.s.PartialMax, tc.r.PartialPodSeconds, tc.s.EvictedInPart)
		}
	}
	if !(sp.UrgentMean < 0.25*so.UrgentMean) {
		t.Errorf("urgent mean wait %.1f s with preemption, %.1f s without: want under a quarter", sp.UrgentMean, so.UrgentMean)
	}
	if so.WorkLost != 0 || so.Evictions != 0 || len(offPre) != 0 {
		t.Errorf("without preemption: %d evictions, %.0f pod-s lost", so.Evictions, so.WorkLost)
	}
	if !(sp.WorkLost > 0) || sp.Evictions == 0 || len(onPre) == 0 {
		t.Errorf("with preemption: %d evictions, %.0f pod-s lost, want some", sp.Evictions, sp.WorkLost)
	}

	// Each preemption was for a group of higher priority than its victims,
	// which started once they were gone; the work lost adds up.
	jobs := map[string]JobResult{}
	for _, j := range on.Jobs {
		jobs["sim/"+j.Name] = j
		jobs[j.Name] = j
	}
	var lost float64
	for _, j := range on.Jobs {
		lost += j.WorkLost
		if j.Evictions > 0 && !j.Completed {
			t.Errorf("%s was evicted and never completed", j.Name)
		}
	}
	if lost != on.WorkLost {
		t.Errorf("work lost %.1f by group, %.1f in all", lost, on.WorkLost)
	}
	for _, pr := range onPre {
		by := jobs[pr.By]
		if by.Start < pr.At || by.Start > pr.At+DefaultEvictionGrace+1 {
			t.Errorf("%s preempted at %.1f s and started at %.1f s, not once its victims were gone", pr.By, pr.At, by.Start)
		}
		for _, v := range pr.Victims {
			if jobs[v].Priority >= by.Priority {
				t.Errorf("%s (priority %d) evicted %s (priority %d)", pr.By, by.Priority, v, jobs[v].Priority)
			}
		}
	}
}

// A run with preemption off is the run it was before preemption existed:
// the urgent workload under fluence without preemption, and under the
// stock model with preemption off, are unchanged by the eviction code.
func TestNoPreemptionNoEvictions(t *testing.T) {
	w := UrgentWorkload()
	r, err := Run(w, NewStock(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Evictions != 0 || r.EvictedPods != 0 || r.WorkLost != 0 {
		t.Errorf("stock without preemption evicted: %+v", SummarizePreemption(r))
	}
}

// The stock model's pod-by-pod preemption takes one member of a running
// gang: its run is lost, the other member keeps its node, idle, and the
// gang starts over, its whole runtime again, once the replacement of the
// evicted member is bound.
func TestStockPreemptsPodByPod(t *testing.T) {
	w := &Workload{Name: "pod-by-pod", Cluster: ClusterFromSpec(2, 1000, 0, 0), Groups: []GroupSpec{
		{Name: "gang", Arrival: 0, Runtime: 100, Pods: []PodSpec{{CPU: 1000}, {CPU: 1000}}},
		{Name: "urgent", Arrival: 50, Runtime: 20, Priority: 10, Pods: []PodSpec{{CPU: 1000}}},
	}}
	s := NewStockWith(StockOptions{Preemption: true})
	r, err := Run(w, s, Options{PodReleaseGap: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Config(), "pod-by-pod preemption (evicted pods gone in 5s)") {
		t.Errorf("config %q", s.Config())
	}
	gang, urgent := r.Jobs[0], r.Jobs[1]
	// Evicted at 50 (gone at 55): the urgent pod runs 55-75, the gang's
	// replacement pod binds at 75 and the gang runs 75-175.
	if urgent.Start != 55 || urgent.End != 75 {
		t.Errorf("urgent ran %v-%v, want 55-75", urgent.Start, urgent.End)
	}
	if gang.Start != 75 || gang.End != 175 || gang.Evictions != 1 || gang.EvictedPods != 1 || gang.WorkLost != 100 {
		t.Errorf("gang: %+v", gang)
	}
	if r.EvictedInPart != 1 || r.PartialMax != 1 || r.PartialPodSeconds != 25 {
		t.Errorf("evicted in part %d, partly bound at most %d for %.1f pod-s; want 1, 1, 25 (one pod idle 50-75)",
			r.EvictedInPart, r.PartialMax, r.PartialPodSeconds)
	}
	if r.WorkLost != 100 || r.Work != 220 || r.JobsCompleted != 2 {
		t.Errorf("work lost %.0f of %.0f, %d completed", r.WorkLost, r.Work, r.JobsCompleted)
	}
}

// Victims: the fewest pods of lower priority on one node, the most
// important spared; pods of equal priority are never taken.
func TestStockPreemptionVictims(t *testing.T) {
	one, two := []PodSpec{{CPU: 1000}}, []PodSpec{{CPU: 2000}}
	w := &Workload{Name: "victims", Cluster: ClusterFromSpec(2, 3000, 0, 0), Groups: []GroupSpec{
		// node0: low and mid-1; node1: mid-0 and equal. Full but a core
		// on node0.
		{Name: "low", Arrival: 0, Runtime: 1000, Priority: 1, Pods: one},
		{Name: "mid", Arrival: 1, Runtime: 1000, Priority: 5, Pods: []PodSpec{{CPU: 1000}, {CPU: 1000}}},
		{Name: "equal", Arrival: 2, Runtime: 1000, Priority: 9, Pods: two},
		// Needs 2 cores: on node0, evicting low alone is enough (mid-1 is
		// spared); node1 would need equal gone, which it may not evict.
		{Name: "urgent", Arrival: 10, Runtime: 10, Priority: 9, Pods: two},
	}}
	r, err := Run(w, NewStockWith(StockOptions{Preemption: true, EvictionGrace: 2}), Options{PodReleaseGap: -1})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]JobResult{}
	for _, j := range r.Jobs {
		got[j.Name] = j
	}
	if got["low"].EvictedPods != 1 || got["mid"].Evictions != 0 || got["equal"].Evictions != 0 {
		t.Errorf("evicted: low %d, mid %d, equal %d pods; want 1, 0, 0", got["low"].EvictedPods, got["mid"].EvictedPods, got["equal"].EvictedPods)
	}
	if u := got["urgent"]; u.Start != 12 || u.Nodes[0] != "node0" {
		t.Errorf("urgent started at %v on %v, want 12 on node0", u.Start, u.Nodes)
	}
	if r.JobsCompleted != 4 {
		t.Errorf("%d completed", r.JobsCompleted)
	}
}

// Env.Evict refuses what a scheduler that lost track of its pods would
// ask: a pod not bound, a pod already going.
func TestEvictRefuses(t *testing.T) {
	w := &Workload{Name: "evict", Cluster: ClusterFromSpec(1, 2000, 0, 0), Groups: []GroupSpec{
		{Name: "a", Runtime: 100, Pods: []PodSpec{{CPU: 1000}, {CPU: 1000}}},
	}}
	var errs []string
	s := &evictProbe{Scheduler: NewStockWith(StockOptions{}), at: 10, try: func(e *Env, g *Group) {
		for _, pods := range [][]int{{5}, {0, 0}, {0}, {0}, {1}} {
			if err := e.Evict(g, pods, 1); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}}
	r, err := Run(w, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pod 5: out of range", "pod 0: listed twice", "pod 0: already being evicted"}
	if len(errs) != len(want) {
		t.Fatalf("errors %q, want %d", errs, len(want))
	}
	for i, e := range errs {
		if !strings.Contains(e, want[i]) {
			t.Errorf("error %q, want %q", e, want[i])
		}
	}
	// Two evictions (pod 0, then pod 1): the group, started at 0, lost
	// 2 x 10 pod-s, ran again from 11, when both were back.
	j := r.Jobs[0]
	if j.Evictions != 2 || j.EvictedPods != 2 || j.WorkLost != 20 || j.Start != 11 || !j.Completed {
		t.Errorf("%+v", j)
	}
}

// evictProbe is the stock model with a hook that evicts at a time.
type evictProbe struct {
	Scheduler
	at   float64
	done bool
	try  func(*Env, *Group)
	env  *Env
}

func (p *evictProbe) Start(env *Env) error { p.env = env; return p.Scheduler.Start(env) }

func (p *evictProbe) Schedule() error {
	if !p.done && p.env.Now() >= p.at {
		p.done = true
		p.try(p.env, p.env.Groups()[0])
	}
	return p.Scheduler.Schedule()
}

func (p *evictProbe) Wakeup() (float64, bool) {
	t, ok := p.Scheduler.Wakeup()
	if !p.done && (!ok || p.at < t) {
		return p.at, true
	}
	return t, ok
}

func (p *evictProbe) PodEvicted(g *Group, pod, node int) error {
	return p.Scheduler.(Evictee).PodEvicted(g, pod, node)
}

// Priorities are read, checked (a 32-bit pod priority; errors name the
// group) and written back.
func TestWorkloadPriority(t *testing.T) {
	const head = "cluster: {nodes: [{cpu: 4}]}\ngroups:\n"
	w, err := ParseWorkload([]byte(head+"  - {name: a, pods: 1, cpu: 1, runtime: 5, priority: -7}\n  - {name: b, pods: 1, cpu: 1, runtime: 5, priority: 2147483647}\n  - {name: c, pods: 1, cpu: 1, runtime: 5}\n"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := []int64{w.Groups[0].Priority, w.Groups[1].Priority, w.Groups[2].Priority}; !reflect.DeepEqual(got, []int64{-7, math.MaxInt32, 0}) {
		t.Errorf("priorities %v", got)
	}
	for _, tc := range []struct{ value, want string }{
		{"high", `groups[0].priority: group "a": must be a whole number (a pod priority; higher goes first), got "high"`},
		{"1.5", `groups[0].priority: group "a": must be a whole number`},
		{"2147483648", `groups[0].priority: group "a": 2147483648 is out of range: a pod priority is a 32-bit integer, -2147483648 to 2147483647`},
		{"-2147483649", `group "a": -2147483649 is out of range`},
		{"[1]", `group "a": must be a whole number (a pod priority; higher goes first), got a list`},
	} {
		_, err := ParseWorkload([]byte(head+"  - {name: a, pods: 1, cpu: 1, runtime: 5, priority: "+tc.value+"}\n"), LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("priority %s: error %v, want %q", tc.value, err, tc.want)
		}
	}
	for _, w := range []*Workload{w, UrgentWorkload()} {
		data, err := MarshalWorkload(w)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseWorkload(data, LoadOptions{})
		if err != nil {
			t.Fatalf("%s: %v\n%s", w.Name, err, data)
		}
		if !reflect.DeepEqual(back, w) {
			t.Errorf("%s: round trip differs\n got %+v\nwant %+v", w.Name, back, w)
		}
	}
}

// The urgent workload is what its comment says.
func TestUrgentWorkloadShape(t *testing.T) {
	w := UrgentWorkload()
	var groups, urgent, pods int
	for _, g := range w.Groups {
		groups++
		pods += g.Size()
		if g.Priority == UrgentPriority {
			urgent++
		} else if g.Priority != 0 {
			t.Errorf("%s: priority %d", g.Name, g.Priority)
		}
		if g.Duration < g.Hold() {
			t.Errorf("%s declares %v s, holds %v s", g.Name, g.Duration, g.Hold())
		}
	}
	if groups != 46 || urgent != 6 || pods != 184 || len(w.Cluster.Nodes) != 8 || !HasPriorities(w) {
		t.Errorf("%d groups (%d urgent), %d pods, %d nodes", groups, urgent, pods, len(w.Cluster.Nodes))
	}
	if HasPriorities(BackfillWorkload()) {
		t.Error("the backfill workload has one priority")
	}
}

// A group evicted after it completed, while its pods release their
// nodes, loses no work: the eviction only brings the release forward.
func TestEvictCompletedGroup(t *testing.T) {
	w := &Workload{Name: "evict-done", Cluster: ClusterFromSpec(1, 2000, 0, 0), Groups: []GroupSpec{
		{Name: "a", Runtime: 10, ReleaseDelay: 30, Pods: []PodSpec{{CPU: 1000}, {CPU: 1000}}},
	}}
	s := &evictProbe{Scheduler: NewStockWith(StockOptions{}), at: 15, try: func(e *Env, g *Group) {
		if err := e.Evict(g, []int{0, 1}, 2); err != nil {
			t.Error(err)
		}
	}}
	r, err := Run(w, s, Options{PodReleaseGap: -1})
	if err != nil {
		t.Fatal(err)
	}
	j := r.Jobs[0]
	if !j.Completed || j.End != 10 || j.WorkLost != 0 || j.EvictedPods != 2 {
		t.Errorf("%+v", j)
	}
	freed := -1.0
	for _, smp := range r.Timeline {
		if smp.Running == 0 && smp.Completed == 1 && freed < 0 {
			freed = smp.T
		}
	}
	if freed != 17 {
		t.Errorf("nodes freed at %v, want 17 (evicted at 15, grace 2), not 40", freed)
	}
}
