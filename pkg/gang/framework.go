package gang

import (
	"cmp"
	"container/heap"
	"slices"
)

// Framework drives a Core the way kube-scheduler drives the plugin: pods
// wait in a queue, each scheduling cycle asks Place for one pod, a pod
// with a node is reserved and held at Permit until its allocation is
// whole, then bound. It is deterministic (pods are tried in queue order:
// priority, then creation, then name) and binds instantly, so the
// simulator and the core's scripted tests run the scheduler's lifecycle
// without an API server.
type Framework struct {
	Core *Core
	// Bind is called for each pod let through Permit; an error is a
	// failed binding (the pod is unreserved and tried again).
	Bind func(p *Pod, node string) error
	// Observe, if set, sees every batch of effects the framework takes
	// from the core that has events, conditions, evictions, placements,
	// internal errors, or groups placed, rejected or withdrawn.
	Observe func(Effects)
	// Filter, if set, stands for kube-scheduler's own filters, which the
	// engine does not model: a reason turns the pod away from the node
	// the core placed it on (Core.TurnedAway), as PostFilter does.
	Filter func(p *Pod, node string) string
	// PreEnqueue: every activation asks the core whether the pod stays
	// out of the queue (Core.Hold), as the scheduler's PreEnqueue does; a
	// held pod waits for the core to activate it.
	PreEnqueue bool

	pods map[string]*fwPod
	// active pods are tried in the next Run; the others sit in the
	// unschedulable pool until activated. order holds every activation
	// as a heap in queue order, so the next pod is found without scanning
	// all of them (a pod group of 128 pods made 128 cycles over up to 128
	// active pods); entries of pods no longer active are dropped as they
	// come up.
	active map[string]bool
	order  podHeap
	// backoff holds pods whose binding failed until the time given, as
	// kube-scheduler's back-off queue does (1 s, doubling to 10 s).
	backoff map[string]int64
}

type fwPod struct {
	pod     Pod
	group   GroupID
	waiting string // node, while held at Permit
	// failures counts failed bindings, for the back-off.
	failures int
}

// NewFramework returns a framework over core.
func NewFramework(core *Core, bind func(p *Pod, node string) error) *Framework {
	return &Framework{Core: core, Bind: bind, pods: map[string]*fwPod{}, active: map[string]bool{}, backoff: map[string]int64{}}
}

// Add queues a new pending pod of the given group. The core sees it too,
// as an informer would show it. A gated pod waits outside the queue, as
// kube-scheduler's PreEnqueue keeps it, until Ungate.
func (f *Framework) Add(p Pod, id GroupID, now int64) {
	f.pods[p.UID] = &fwPod{pod: p, group: id}
	if !p.Gated {
		f.activate(p.UID)
	}
	f.Core.PodSeen(p, now)
}

// Ungate lifts a pod's scheduling gates: the core sees the change and the
// pod joins the queue.
func (f *Framework) Ungate(uid string, now int64) {
	fp := f.pods[uid]
	if fp == nil || !fp.pod.Gated {
		return
	}
	fp.pod.Gated = false
	f.Core.PodSeen(fp.pod, now)
	f.activate(uid)
}

// Remove forgets a pod (bound pods leave the queue; deleted pods too).
func (f *Framework) Remove(uid string) {
	delete(f.pods, uid)
	delete(f.active, uid)
	delete(f.backoff, uid)
}

// Wakeup is the earliest time a pod's back-off ends, if any pod is in
// back-off.
func (f *Framework) Wakeup() (t int64, ok bool) {
	for _, until := range f.backoff {
		if !ok || until < t {
			t, ok = until, true
		}
	}
	return t, ok
}

// Pending returns how many pods are not bound yet.
func (f *Framework) Pending() int { return len(f.pods) }

// Run makes scheduling cycles at now until no pod is active: it returns
// the cycles' verdicts in order, for tests and traces.
func (f *Framework) Run(now int64) []Trace {
	var out []Trace
	for uid, until := range f.backoff {
		if until <= now {
			delete(f.backoff, uid)
			if _, ok := f.pods[uid]; ok {
				f.activate(uid)
			}
		}
	}
	f.apply(f.Core.Ready(), now, &out)
	for {
		uid, ok := f.next()
		if !ok {
			return out
		}
		f.cycle(uid, now, &out)
	}
}

// RunPod makes one scheduling cycle for one pending pod, out of queue
// order (tests use it to interleave a group's cycles with other events).
func (f *Framework) RunPod(uid string, now int64) []Trace {
	var out []Trace
	if _, ok := f.pods[uid]; ok {
		f.cycle(uid, now, &out)
	}
	return out
}

// TimeOut ends a pod's wait at Permit as kube-scheduler's timer does when
// the wait (Core.PermitTimeout, else the scheduler's own) is over before
// its allocation is whole: the pod is rejected and unreserved, and the
// core's effects carried out (the allocation withdrawn, the group's other
// waiting pods turned away, all of them tried again). The framework keeps
// no clock, so the caller says when: a pod not waiting is left alone.
func (f *Framework) TimeOut(uid string, now int64) []Trace {
	fp := f.pods[uid]
	if fp == nil || fp.waiting == "" {
		return nil
	}
	node := fp.waiting
	fp.waiting = ""
	out := []Trace{{Pod: fp.pod.String(), Verdict: Verdict{Reason: "rejected due to timeout at Permit"}}}
	f.Core.Unreserve(uid, node, now)
	f.apply(f.Core.Ready(), now, &out)
	return out
}

func (f *Framework) cycle(uid string, now int64, out *[]Trace) {
	delete(f.active, uid)
	fp := f.pods[uid]
	v := f.Core.Place(fp.pod, fp.group, now)
	*out = append(*out, Trace{Pod: fp.pod.String(), Verdict: v})

	if v.Node != "" && f.Filter != nil {
		if why := f.Filter(&fp.pod, v.Node); why != "" {
			*out = append(*out, Trace{Pod: fp.pod.String(), Verdict: Verdict{Reason: "node " + v.Node + " turned the pod away: " + why}})
			f.Core.TurnedAway(uid, why, false, now)
			f.apply(f.Core.Ready(), now, out)
			return
		}
	}
	if v.Node != "" {
		if err := f.Core.Reserve(uid, v.Node); err != nil {
			*out = append(*out, Trace{Pod: fp.pod.String(), Verdict: Verdict{Reason: err.Error()}})
		} else if ready, err := f.Core.Permit(uid); err != nil {
			f.Core.Unreserve(uid, v.Node, now)
		} else if ready {
			f.bind(uid, v.Node, now, out)
		} else {
			fp.waiting = v.Node
		}
	}
	f.apply(f.Core.Ready(), now, out)
}

// Trace is one scheduling cycle's outcome.
type Trace struct {
	Pod     string
	Verdict Verdict
	Bound   string // the node, when the pod was bound
}

// activate makes a known pod active, unless the core holds it out of
// the queue.
func (f *Framework) activate(uid string) {
	if f.PreEnqueue {
		if held, _ := f.Core.Hold(f.pods[uid].pod, f.Core.now); held {
			delete(f.active, uid)
			return
		}
	}
	f.active[uid] = true
	heap.Push(&f.order, f.pods[uid])
}

// next is the first active pod by priority, creation and name.
func (f *Framework) next() (string, bool) {
	for f.order.Len() > 0 {
		top := heap.Pop(&f.order).(*fwPod)
		uid := top.pod.UID
		// An entry stands only for the pod it was made for, while active.
		if f.pods[uid] == top && f.active[uid] {
			return uid, true
		}
	}
	return "", false
}

// podHeap orders activations as the queue does (comparePods).
type podHeap []*fwPod

func (h podHeap) Len() int           { return len(h) }
func (h podHeap) Less(i, j int) bool { return comparePods(&h[i].pod, &h[j].pod) < 0 }
func (h podHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *podHeap) Push(x any)        { *h = append(*h, x.(*fwPod)) }
func (h *podHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return p
}

func comparePods(a, b *Pod) int {
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Created, b.Created); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

func (f *Framework) bind(uid, node string, now int64, out *[]Trace) {
	fp := f.pods[uid]
	fp.waiting = ""
	if f.Bind != nil {
		if err := f.Bind(&fp.pod, node); err != nil {
			fp.failures++
			f.backoff[uid] = now + min(int64(1)<<min(fp.failures-1, 4), 10)*f.Core.cfg.TicksPerSecond
			f.Core.Unreserve(uid, node, now)
			*out = append(*out, Trace{Pod: fp.pod.String(), Verdict: Verdict{Reason: "binding failed: " + err.Error()}})
			return
		}
	}
	f.Core.Bound(uid)
	fp.pod.NodeName, fp.pod.Allocation = node, f.Core.Record(uid)
	bound := fp.pod
	f.Remove(uid)
	f.Core.PodSeen(bound, now)
	*out = append(*out, Trace{Pod: bound.String(), Bound: node})
}

// apply carries out effects: activations, Permit decisions.
func (f *Framework) apply(fx Effects, now int64, out *[]Trace) {
	if f.Observe != nil && (len(fx.Events) > 0 || len(fx.Conditions) > 0 || len(fx.Errors) > 0 || len(fx.Evictions) > 0 || len(fx.Placements) > 0 ||
		len(fx.Placed) > 0 || len(fx.Rejected) > 0 || len(fx.Withdrawn) > 0) {
		f.Observe(fx)
	}
	for _, r := range fx.Reject {
		if fp := f.pods[r.Pod.UID]; fp != nil && fp.waiting != "" {
			node := fp.waiting
			fp.waiting = ""
			f.Core.Unreserve(r.Pod.UID, node, now)
			*out = append(*out, Trace{Pod: r.Pod.String(), Verdict: Verdict{Reason: r.Message}})
		}
	}
	allow := slices.Clone(fx.Allow)
	for _, r := range allow {
		if fp := f.pods[r.UID]; fp != nil && fp.waiting != "" {
			f.bind(r.UID, fp.waiting, now, out)
		}
	}
	for _, r := range fx.Activate {
		if _, ok := f.pods[r.UID]; ok && f.backoff[r.UID] == 0 {
			f.activate(r.UID)
		}
	}
	if len(fx.Reject)+len(fx.Allow) > 0 {
		f.apply(f.Core.Ready(), now, out)
	}
}
