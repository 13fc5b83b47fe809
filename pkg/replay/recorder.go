package replay

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fluence-sched/fluence/pkg/sim"
)

// Recorder keeps what happened to the pods of a replay, stamped with the
// time this process received each event (metav1 times have one-second
// resolution, too coarse at ten times real speed). Observe takes every
// version of every pod; Submitted marks a group's Job as created. Times
// are relative to the first submission.
type Recorder struct {
	mu     sync.Mutex
	w      *sim.Workload
	groups []groupRecord
	pods   map[types.UID]*podRecord
	t0     time.Time

	submittedPods, boundPods, finishedPods int
	usedCPU                                int64
	started, completed                     int
	events                                 int
	// lastChange is the last bind or finish (stall detection);
	// lastProgress the last group start or completion (a stall's time,
	// as the simulator reports it).
	lastChange, lastProgress time.Time
	timeline                 []sim.Sample
}

type groupRecord struct {
	submit, firstBind time.Time
	start, end        time.Time
	// created: the last pod first seen; allRunning: the last seen Running.
	created, allRunning time.Time
	seen, running       int
	bound, finished     int
	nodes               []string // by completion index
}

type podRecord struct {
	index           int // completion index; -1 if unknown
	node            string
	bound, finished time.Time
	ran             bool
	cpu             int64
}

// NewRecorder records a replay of w (compressed, as replayed).
func NewRecorder(w *sim.Workload) *Recorder {
	r := &Recorder{w: w, groups: make([]groupRecord, len(w.Groups)), pods: map[types.UID]*podRecord{}}
	for i := range w.Groups {
		r.groups[i].nodes = make([]string, w.Groups[i].Size())
	}
	return r
}

// Submitted records that group i's Job is being created at t.
func (r *Recorder) Submitted(i int, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.t0.IsZero() {
		r.t0, r.lastChange, r.lastProgress = t, t, t
	}
	if !r.groups[i].submit.IsZero() {
		return
	}
	r.groups[i].submit = t
	r.submittedPods += r.w.Groups[i].Size()
	r.sample(t)
}

// Observe records a pod as seen at now. Pods without GroupLabel, or of a
// group not submitted, are ignored.
func (r *Recorder) Observe(pod *corev1.Pod, now time.Time) {
	gi, err := strconv.Atoi(pod.Labels[GroupLabel])
	if err != nil || gi < 0 || gi >= len(r.groups) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	g := &r.groups[gi]
	if g.submit.IsZero() {
		return
	}
	p := r.pods[pod.UID]
	if p == nil {
		idx, err := strconv.Atoi(pod.Annotations[batchv1.JobCompletionIndexAnnotation])
		if err != nil || idx < 0 || idx >= len(g.nodes) {
			idx = -1
		}
		p = &podRecord{index: idx, cpu: r.w.Groups[gi].Pods[0].CPU}
		r.pods[pod.UID] = p
		if g.seen++; g.seen == len(g.nodes) {
			g.created = now
		}
	}
	rec := p
	changed := false
	if pod.Spec.NodeName != "" && rec.bound.IsZero() {
		rec.bound, rec.node = now, pod.Spec.NodeName
		if rec.index >= 0 {
			g.nodes[rec.index] = rec.node
		}
		r.boundPods++
		r.usedCPU += rec.cpu
		if g.bound == 0 {
			g.firstBind = now
		}
		g.bound++
		changed = true
		if g.bound == len(g.nodes) {
			g.start = now
			r.started++
			r.lastProgress = now
		}
	}
	if pod.Status.Phase == corev1.PodRunning && !rec.ran {
		rec.ran = true
		if g.running++; g.running == len(g.nodes) {
			g.allRunning = now
		}
	}
	if (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed) && rec.finished.IsZero() && !rec.bound.IsZero() {
		rec.finished = now
		r.finishedPods++
		r.usedCPU -= rec.cpu
		g.finished++
		changed = true
		if g.finished == len(g.nodes) && pod.Status.Phase == corev1.PodSucceeded {
			g.end = now
			r.completed++
			r.lastProgress = now
		}
	}
	if changed {
		r.events++
		r.lastChange = now
		r.sample(now)
	}
}

// sample appends the state at now to the timeline; r.mu is held.
func (r *Recorder) sample(now time.Time) {
	s := sim.Sample{
		T:           now.Sub(r.t0).Seconds(),
		Pending:     r.submittedPods - r.boundPods,
		Running:     r.boundPods - r.finishedPods,
		UsedCPU:     r.usedCPU,
		RunningJobs: r.started - r.completed,
		Completed:   r.completed,
	}
	if n := len(r.timeline); n > 0 && r.timeline[n-1].T == s.T {
		r.timeline[n-1] = s
		return
	}
	r.timeline = append(r.timeline, s)
}

// BindSpreads returns, per group, the time from its first pod's bind to
// its last's: about nothing for a scheduler that binds a group whole, the
// wait for the rest for one that binds pods one by one. A group not bound
// whole has -1.
func (r *Recorder) BindSpreads() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]time.Duration, len(r.groups))
	for i := range r.groups {
		out[i] = -1
		if g := &r.groups[i]; !g.start.IsZero() {
			out[i] = g.start.Sub(g.firstBind)
		}
	}
	return out
}

// Lags are the delays the control plane adds to each group's life, in
// wall time, one entry per group that got that far: Create from the Job's
// submission to its last pod's creation (the Job controller), Run from
// the last bind to the last pod Running (the node simulator), End from
// all Running plus the hold to the last pod's end (the launcher's status
// writes), and Restart from the completion before a group's start to that
// start, for groups already waiting then (the scheduler reacting to freed
// CPUs; the simulator's schedulers react at once).
type Lags struct {
	Create, Run, End, Restart []time.Duration
}

// Lags returns the delays of the groups so far.
func (r *Recorder) Lags() Lags {
	r.mu.Lock()
	defer r.mu.Unlock()
	var l Lags
	var ends []time.Time
	for i := range r.groups {
		if !r.groups[i].end.IsZero() {
			ends = append(ends, r.groups[i].end)
		}
	}
	slices.SortFunc(ends, func(a, b time.Time) int { return a.Compare(b) })
	for i := range r.groups {
		g := &r.groups[i]
		if !g.start.IsZero() {
			// the last completion at or before the start
			if k, _ := slices.BinarySearchFunc(ends, g.start, func(e, t time.Time) int {
				if e.After(t) {
					return 1
				}
				return -1
			}); k > 0 && g.submit.Before(ends[k-1]) {
				l.Restart = append(l.Restart, g.start.Sub(ends[k-1]))
			}
		}
		if !g.created.IsZero() {
			l.Create = append(l.Create, g.created.Sub(g.submit))
		}
		if !g.allRunning.IsZero() && !g.start.IsZero() {
			l.Run = append(l.Run, g.allRunning.Sub(g.start))
		}
		if !g.end.IsZero() && !g.allRunning.IsZero() {
			l.End = append(l.End, g.end.Sub(g.allRunning)-seconds(r.w.Groups[i].Runtime))
		}
	}
	return l
}

// String is "median/max" of each lag in milliseconds.
func (l Lags) String() string {
	f := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "-"
		}
		s := slices.Clone(ds)
		slices.Sort(s)
		return fmt.Sprintf("%d/%d ms", s[len(s)/2].Milliseconds(), s[len(s)-1].Milliseconds())
	}
	return fmt.Sprintf("pods created after their Job %s, group bound after the completion before it %s, all Running after the last bind %s, ended after the hold %s (median/max)",
		f(l.Create), f(l.Restart), f(l.Run), f(l.End))
}

// Status is a replay's state at one moment.
type Status struct {
	Elapsed       time.Duration // since the first submission
	JobsSubmitted int
	JobsCompleted int
	JobsTotal     int
	PodsTotal     int
	PodsBound     int
	PodsPending   int           // of submitted Jobs, not bound (created or not)
	PodsRunning   int           // bound, not finished: holding their CPUs
	SinceChange   time.Duration // since the last bind or finish
}

// Done reports whether every Job completed.
func (s Status) Done() bool { return s.JobsCompleted == s.JobsTotal }

// Status returns the state at now.
func (r *Recorder) Status(now time.Time) Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Status{JobsCompleted: r.completed, JobsTotal: len(r.groups), PodsBound: r.boundPods,
		PodsPending: r.submittedPods - r.boundPods, PodsRunning: r.boundPods - r.finishedPods}
	for i := range r.groups {
		s.PodsTotal += len(r.groups[i].nodes)
		if !r.groups[i].submit.IsZero() {
			s.JobsSubmitted++
		}
	}
	if !r.t0.IsZero() {
		s.Elapsed = now.Sub(r.t0)
		s.SinceChange = now.Sub(r.lastChange)
	}
	return s
}

// Result is the replay as a sim.Result, in the compressed workload's
// seconds (Scale converts it), observed until until. stalled says the run
// was ended by stall detection.
func (r *Recorder) Result(name, config string, stalled bool, until time.Time) *sim.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := func(t time.Time) float64 {
		if t.IsZero() {
			return -1
		}
		return t.Sub(r.t0).Seconds()
	}
	res := &sim.Result{
		Workload: r.w.Name, Scheduler: name, Config: config,
		Timeline: append([]sim.Sample(nil), r.timeline...), JobsTotal: len(r.groups),
		SimulatedUntil: at(until), Steps: r.events,
		LowerBound: sim.LowerBound(r.w), Bounds: sim.BoundsOf(r.w),
	}
	for _, n := range r.w.Cluster.Nodes {
		res.TotalCPU += n.CPU
	}
	for i := range r.groups {
		g := &r.groups[i]
		spec := &r.w.Groups[i]
		j := sim.JobResult{Name: spec.Name, Size: spec.Size(), Submit: at(g.submit), Start: at(g.start), End: at(g.end),
			Completed: !g.end.IsZero(), Nodes: append([]string(nil), g.nodes...)}
		for _, p := range spec.Pods {
			j.CPU += p.CPU
		}
		if !j.Completed && g.bound > 0 {
			res.JobsHoldingAtStall++
		}
		res.Jobs = append(res.Jobs, j)
	}
	res.Summarize()
	if stalled {
		res.Stalled = true
		res.StalledAt = at(r.lastProgress)
		res.PendingAtStall = r.submittedPods - r.boundPods
		res.RunningAtStall = r.boundPods - r.finishedPods
	} else {
		res.JobsHoldingAtStall = 0
	}
	return res
}
