package sim

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
)

// Options control a run.
type Options struct {
	// StallWindow: nothing starting or completing for this long while pods
	// are Pending counts as a stall. Default 300 s.
	StallWindow float64
	// MaxEvents bounds the run; exceeding it is an error. Default 50M.
	MaxEvents int
	// Progress, if set, is called now and then with the simulated time and
	// the groups completed so far.
	Progress func(now float64, completed, total int)
	// PodReleaseGap spaces the release of one group's pods: pod i frees its
	// resources at completion + release delay + i x gap. Deleting a job
	// deletes its pods one by one, and kube-scheduler retries pending pods
	// at every single deletion; a gap of 0 frees a group in one instant.
	// Negative means 0. The default is DefaultPodReleaseGap.
	PodReleaseGap float64
}

// DefaultPodReleaseGap is the modelled time between two pod terminations of
// one deleted job (not measured in the experiments; a parameter).
const DefaultPodReleaseGap = 0.1

// Env is the simulated cluster and clock one scheduler runs against.
type Env struct {
	opts     Options
	now      float64
	workload *Workload
	cluster  *Cluster
	groups   []*Group
	sched    Scheduler

	free []PodSpec // free resources per node (bound pods only)

	events eventQueue
	seq    int

	pending, running int // pods
	runningJobs      int
	completed        int
	usedCPU          int64
	totalCPU         int64
	lastProgress     float64

	timeline []Sample
	nevents  int

	// bindings is every pod's stay on a node, in the order bound; open
	// the index of each bound pod's stay, by group and pod.
	bindings []Binding
	open     map[[2]int]int

	// Preemption and gangs held in part (env_evict.go).
	partial      int     // groups with some, not all, of their pods bound
	partialPods  int     // the bound pods of those groups
	partialSince float64 // when partialPods last changed
	partialMax   int     // the most partly bound groups after a time's events
	partialArea  float64 // pod-seconds held by partly bound groups
	evictions    int
	evictedPods  int
	// evictedInPart counts evictions that left the rest of a group bound.
	evictedInPart int
}

// Sample is the cluster state after the events at one time.
type Sample struct {
	T           float64
	Pending     int
	Running     int
	UsedCPU     int64 // millicores held by bound pods
	RunningJobs int   // groups started and not yet released
	Completed   int
}

type eventKind uint8

const (
	evArrive eventKind = iota
	evComplete
	evRelease
	evNode
	evGone // an evicted pod is gone (env_evict.go)
)

type event struct {
	t    float64
	kind eventKind
	seq  int
	g    *Group
	pod  int
	node *NodeSpec // evNode: the node joining
	run  int       // evComplete: the group's run it ends
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].t != q[j].t {
		return q[i].t < q[j].t
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

func (e *Env) push(t float64, kind eventKind, g *Group) { e.pushPod(t, kind, g, -1) }

func (e *Env) pushPod(t float64, kind eventKind, g *Group, pod int) {
	e.seq++
	heap.Push(&e.events, event{t: t, kind: kind, seq: e.seq, g: g, pod: pod})
}

// PodReleaseGap is the time between two pod releases of one group.
func (e *Env) PodReleaseGap() float64 { return e.opts.PodReleaseGap }

// Now is the simulated time in seconds.
func (e *Env) Now() float64 { return e.now }

// Cluster is the simulated cluster.
func (e *Env) Cluster() *Cluster { return e.cluster }

// Workload is the workload being replayed; a scheduler must not change it.
func (e *Env) Workload() *Workload { return e.workload }

// Groups returns every group of the workload, arrived or not.
func (e *Env) Groups() []*Group { return e.groups }

// Free returns a node's free resources (allocatable minus bound pods).
func (e *Env) Free(node int) PodSpec { return e.free[node] }

// Fits reports whether a pod's requests fit a node's free resources.
func Fits(free, p PodSpec) bool {
	return p.CPU <= free.CPU && p.Memory <= free.Memory && p.GPU <= free.GPU
}

// Bind binds one pending pod to a node. It fails if the pod is already
// bound or the node lacks room: the invariant that no node is ever
// over-committed holds for every scheduler, model or not.
func (e *Env) Bind(g *Group, pod, node int) error {
	if pod < 0 || pod >= len(g.PodNode) || node < 0 || node >= len(e.free) {
		return fmt.Errorf("sim: bind %s pod %d to node %d: out of range", g.Spec.Name, pod, node)
	}
	if g.PodNode[pod] >= 0 {
		return fmt.Errorf("sim: %s pod %d is already bound", g.Spec.Name, pod)
	}
	if g.Submit < 0 {
		return fmt.Errorf("sim: %s has not arrived", g.Spec.Name)
	}
	p := g.Spec.Pods[pod]
	if !Fits(e.free[node], p) {
		return fmt.Errorf("sim: %s pod %d does not fit node %s (free %+v, request %+v): over-commit",
			g.Spec.Name, pod, e.cluster.Nodes[node].Name, e.free[node], p)
	}
	e.free[node].CPU -= p.CPU
	e.free[node].Memory -= p.Memory
	e.free[node].GPU -= p.GPU
	g.PodNode[pod] = node
	e.openBinding(g, pod, node, p.GPU)
	e.setBound(g, g.Bound+1)
	e.pending--
	e.running++
	e.usedCPU += p.CPU
	if g.Bound == len(g.PodNode) {
		g.Start = e.now
		e.runningJobs++
		e.lastProgress = e.now
		e.seq++
		heap.Push(&e.events, event{t: e.now + g.Spec.Runtime - g.saved, kind: evComplete, seq: e.seq, g: g, run: g.run})
	}
	return nil
}

// Reject records that the scheduler refused a group for good (it can
// never fit). Its pods stop counting as Pending.
func (e *Env) Reject(g *Group, reason string) {
	if g.Rejected || g.Started() {
		return
	}
	g.Rejected, g.RejectReason = true, reason
	e.pending -= len(g.PodNode) - g.Bound
}

// Run replays a workload under one scheduler.
func Run(w *Workload, s Scheduler, opts Options) (*Result, error) {
	if opts.StallWindow == 0 {
		opts.StallWindow = 300
	}
	if opts.MaxEvents == 0 {
		opts.MaxEvents = 50_000_000
	}
	if opts.PodReleaseGap == 0 {
		opts.PodReleaseGap = DefaultPodReleaseGap
	}
	opts.PodReleaseGap = max(opts.PodReleaseGap, 0)
	if len(w.Cluster.Nodes) == 0 {
		return nil, errors.New("sim: the cluster has no nodes")
	}
	if _, ok := s.(NodeObserver); len(w.NodeArrivals) > 0 && !ok {
		return nil, fmt.Errorf("sim: %s does not model nodes joining the cluster, and workload %s has %d", s.Name(), w.Name, len(w.NodeArrivals))
	}
	// The cluster grows during the run: the workload's own stays as it is.
	cluster := Cluster{Nodes: append([]NodeSpec(nil), w.Cluster.Nodes...)}
	e := &Env{opts: opts, workload: w, cluster: &cluster, sched: s}
	for _, n := range w.Cluster.Nodes {
		e.free = append(e.free, PodSpec{CPU: n.CPU, Memory: n.Memory, GPU: n.GPU})
		e.totalCPU += n.CPU
	}
	for i := range w.Groups {
		spec := &w.Groups[i]
		if len(spec.Pods) == 0 {
			return nil, fmt.Errorf("sim: group %s has no pods", spec.Name)
		}
		g := &Group{ID: i, Spec: spec, PodNode: make([]int, len(spec.Pods)), Submit: -1, Start: -1, End: -1, Released: -1,
			evicting: make([]bool, len(spec.Pods)), released: make([]bool, len(spec.Pods))}
		for p := range g.PodNode {
			g.PodNode[p] = -1
		}
		e.groups = append(e.groups, g)
		e.push(spec.Arrival, evArrive, g)
	}
	for i := range w.NodeArrivals {
		na := &w.NodeArrivals[i]
		e.seq++
		heap.Push(&e.events, event{t: na.At, kind: evNode, seq: e.seq, node: &na.Node})
	}
	if err := s.Start(e); err != nil {
		return nil, err
	}
	stalled := false
	for {
		t, ok := e.nextTime()
		if !ok {
			stalled = e.pending > 0
			break
		}
		if e.pending > 0 && len(e.events) == 0 && t-e.lastProgress > opts.StallWindow {
			// Only the scheduler's own wake-ups are left (timeouts,
			// retries) and nothing has started or completed for a whole
			// window: a livelock. Stop rather than spin forever.
			stalled = true
			e.now = e.lastProgress + opts.StallWindow
			break
		}
		e.now = t
		if err := e.processEventsAt(t); err != nil {
			return nil, err
		}
		if err := s.Schedule(); err != nil {
			return nil, fmt.Errorf("sim: %s at t=%.3f: %w", s.Name(), e.now, err)
		}
		e.sample()
		if e.nevents++; e.nevents > opts.MaxEvents {
			return nil, fmt.Errorf("sim: more than %d steps; raise MaxEvents", opts.MaxEvents)
		}
		if opts.Progress != nil && e.nevents%10000 == 0 {
			opts.Progress(e.now, e.completed, len(e.groups))
		}
	}
	if opts.Progress != nil {
		opts.Progress(e.now, e.completed, len(e.groups))
	}
	r := e.result(w, stalled)
	r.Bounds = BoundsOf(w)
	r.LowerBound = r.Bounds.Runtime
	return r, nil
}

// nextTime is the earliest event or scheduler wake-up.
func (e *Env) nextTime() (float64, bool) {
	t, ok := math.Inf(1), false
	if len(e.events) > 0 {
		t, ok = e.events[0].t, true
	}
	if w, wok := e.sched.Wakeup(); wok && w < t {
		if w < e.now {
			w = e.now
		}
		t, ok = w, true
	}
	return t, ok
}

func (e *Env) processEventsAt(t float64) error {
	for len(e.events) > 0 && e.events[0].t <= t {
		ev := heap.Pop(&e.events).(event)
		g := ev.g
		switch ev.kind {
		case evNode:
			e.cluster.Nodes = append(e.cluster.Nodes, *ev.node)
			e.free = append(e.free, PodSpec{CPU: ev.node.CPU, Memory: ev.node.Memory, GPU: ev.node.GPU})
			e.totalCPU += ev.node.CPU
			if err := e.sched.(NodeObserver).NodeAdded(len(e.cluster.Nodes) - 1); err != nil {
				return fmt.Errorf("sim: %s: node %s joins: %w", e.sched.Name(), ev.node.Name, err)
			}
		case evArrive:
			g.Submit = e.now
			e.pending += len(g.PodNode)
			if err := e.sched.Submit(g); err != nil {
				return fmt.Errorf("sim: %s: submit %s: %w", e.sched.Name(), g.Spec.Name, err)
			}
		case evGone:
			if err := e.gone(g, ev.pod); err != nil {
				return err
			}
		case evComplete:
			if ev.run != g.run {
				continue // a run cut short by an eviction
			}
			g.End = e.now
			e.completed++
			e.lastProgress = e.now
			for pod := range g.PodNode {
				e.pushPod(e.now+g.Spec.ReleaseDelay+float64(pod)*e.opts.PodReleaseGap, evRelease, g, pod)
			}
		case evRelease:
			if g.released[ev.pod] {
				continue // released early: evicted after completing
			}
			g.released[ev.pod] = true
			node := g.PodNode[ev.pod]
			p := g.Spec.Pods[ev.pod]
			e.free[node].CPU += p.CPU
			e.free[node].Memory += p.Memory
			e.free[node].GPU += p.GPU
			e.closeBinding(g, ev.pod)
			e.usedCPU -= p.CPU
			e.running--
			g.freed++
			if err := e.sched.PodReleased(g, ev.pod); err != nil {
				return fmt.Errorf("sim: %s: release %s pod %d: %w", e.sched.Name(), g.Spec.Name, ev.pod, err)
			}
			if g.freed < len(g.PodNode) {
				continue
			}
			g.Released = e.now
			e.runningJobs--
			if err := e.sched.Release(g); err != nil {
				return fmt.Errorf("sim: %s: release %s: %w", e.sched.Name(), g.Spec.Name, err)
			}
		}
	}
	return nil
}

func (e *Env) sample() {
	e.sampleEvict()
	s := Sample{T: e.now, Pending: e.pending, Running: e.running, UsedCPU: e.usedCPU, RunningJobs: e.runningJobs, Completed: e.completed}
	if n := len(e.timeline); n > 0 {
		last := e.timeline[n-1]
		if last.T == s.T {
			e.timeline[n-1] = s
			return
		}
		if last.Pending == s.Pending && last.Running == s.Running && last.UsedCPU == s.UsedCPU &&
			last.RunningJobs == s.RunningJobs && last.Completed == s.Completed {
			return
		}
	}
	e.timeline = append(e.timeline, s)
}
