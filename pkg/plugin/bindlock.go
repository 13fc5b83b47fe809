package plugin

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// A binding cycle does not wait for the core's lock. The core is busy
// for tens of milliseconds at a time when it decides a preemption (in a
// pod's PreFilter or in the loop), and a Bind that took the lock twice,
// before its API call and after it, waited out such decisions both
// times: measured at 1,000 nodes, the waits were most of a scheduled
// attempt's time. So what the Binding carries is read when the pod is
// reserved, in its scheduling cycle, which holds the lock anyway
// (bindNote); and that the binding landed reaches the core at once only
// if the lock is free, else at the core's next turn (boundLater).

// bindNoteKey keeps a pod's bindNote from Reserve to Bind.
const bindNoteKey fwk.StateKey = Name + "/bind"

// bindNote is what the pod's Binding carries: the allocation record, its
// topology domain and when the group was last moved. They are fixed from
// the moment the pod holds a slot in a started allocation (Reserve) to
// its Binding.
type bindNote struct {
	rec, domain string
	movedAt     int64
	moved       bool
}

func (n *bindNote) Clone() fwk.StateData { return n }

// noteLocked reads the pod's bindNote from the core; mu is held.
func (p *Plugin) noteLocked(uid string) *bindNote {
	n := &bindNote{rec: p.core.Record(uid), domain: p.core.Domain(uid)}
	n.movedAt, n.moved = p.core.MovedAt(uid)
	return n
}

// bindNoteOf is the note Reserve left in the cycle state, or the core's
// answer now for a cycle without one.
func (p *Plugin) bindNoteOf(state fwk.CycleState, pod *corev1.Pod) *bindNote {
	if state != nil {
		if d, err := state.Read(bindNoteKey); err == nil {
			return d.(*bindNote)
		}
	}
	var n *bindNote
	p.do(func(int64) { n = p.noteLocked(string(pod.UID)) })
	return n
}

// boundLater holds the pods whose Binding landed while the core was
// busy, in the order they landed.
type boundLater struct {
	mu   sync.Mutex
	pods []*corev1.Pod
}

// bound tells the core the pod's Binding landed: now if its lock is
// free, else at the next turn any goroutine takes (lockCore), and the
// loop is woken so that a turn comes. The informer's update of the pod
// says the same a little later; whichever reaches the core first counts.
func (p *Plugin) bound(pod *corev1.Pod) {
	if !p.mu.TryLock() {
		p.later.mu.Lock()
		p.later.pods = append(p.later.pods, pod)
		p.later.mu.Unlock()
		p.wake()
		return
	}
	p.drainBoundLocked()
	p.boundLocked(pod)
	p.unlockCore()
}

func (p *Plugin) boundLocked(pod *corev1.Pod) {
	p.traceStep("bound", pod)
	p.core.Bound(string(pod.UID))
}

// unlockCore releases the core's lock, then carries out the effects the
// core asked for (apply).
func (p *Plugin) unlockCore() {
	fx := p.core.Ready()
	p.mu.Unlock()
	p.apply(fx)
}

// lockCore takes the core's lock and first tells the core of the
// bindings that landed while it was held.
func (p *Plugin) lockCore() {
	p.mu.Lock()
	p.drainBoundLocked()
}

func (p *Plugin) drainBoundLocked() {
	p.later.mu.Lock()
	pods := p.later.pods
	p.later.pods = nil
	p.later.mu.Unlock()
	for _, pod := range pods {
		p.boundLocked(pod)
	}
}
