package plugin

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

// verdict is the plugin's answer for one pod in one scheduling cycle.
type verdict struct {
	node string // the pod's node when placed
	// final: the pod cannot be placed until it or the cluster changes
	// (UnschedulableAndUnresolvable); otherwise it waits (Unschedulable).
	final  bool
	reason string
}

// place answers PreFilter: where the pod goes, or why it waits. id is the
// pod's resolved group.
func (c *cluster) place(p *corev1.Pod, id GroupID, fx *effects) verdict {
	c.mu.Lock()
	defer c.mu.Unlock()
	gr := c.addMember(p, id)
	if gr.id.Size != id.Size {
		why := fmt.Sprintf("pods of group %s disagree on its size: %s says %d, others say %d", id.Key, describePod(p), id.Size, gr.id.Size)
		if gr.state != invalid || gr.reason != why {
			gr.state, gr.reason = invalid, why
			c.explain(gr, corev1.EventTypeWarning, "FluenceInvalidGroup", why, fx)
		}
		return verdict{final: true, reason: why}
	}
	c.ensureEngine(fx)
	if c.m == nil {
		return verdict{reason: "fluence: no resource graph yet (no nodes?)"}
	}
	if node, ok := c.slotFor(gr, p); ok {
		return verdict{node: node}
	}
	switch gr.state {
	case invalid, rejected:
		return verdict{final: true, reason: "fluence: pod group " + gr.id.Key + " " + gr.reason}
	}
	c.trySubmit(gr, fx)
	if gr.queuedPods() > 0 {
		// Cheap when nothing changed: the queue skips matches whose
		// answer cannot have changed.
		c.schedule(fx)
	}
	// This pod is in its scheduling cycle now: activating it would only
	// make the framework retry it once more.
	delete(fx.activate, p.Namespace+"/"+p.Name)
	if node, ok := c.slotFor(gr, p); ok {
		return verdict{node: node}
	}
	if gr.state == rejected || gr.state == invalid {
		return verdict{final: true, reason: "fluence: pod group " + gr.id.Key + " " + gr.reason}
	}
	if c.now() < gr.holdUntil {
		return verdict{reason: fmt.Sprintf("fluence: pod group %s is placed again in %ds: a node turned its last placement away", gr.id.Key, gr.holdUntil-c.now())}
	}
	if gr.queuedPods() == 0 {
		have := len(c.unslotted(gr)) + gr.liveSlots()
		if have < int(gr.id.Size) {
			return verdict{reason: fmt.Sprintf("fluence: waiting for the pods of group %s: %d of %d exist", gr.id.Key, have, gr.id.Size)}
		}
		return verdict{reason: fmt.Sprintf("fluence: group %s already has its %d pods placed; this pod waits for a slot", gr.id.Key, gr.id.Size)}
	}
	return verdict{reason: "fluence: pod group " + gr.id.Key + " " + gr.reason}
}

// addMember records the pod as a member of its group.
func (c *cluster) addMember(p *corev1.Pod, id GroupID) *group {
	gr := c.groups[id.Key]
	if gr == nil {
		gr = newGroup(id)
		c.groups[id.Key] = gr
	}
	if gr.id.Size == 0 { // adopted after a restart, size not known until now
		gr.id = id
	}
	c.setSortKey(id.Key, p.UID, p.CreationTimestamp.Time)
	gr.members[p.UID] = p
	c.podKey[p.UID] = id.Key
	return gr
}

// slotFor returns the pod's node if it holds a slot, taking over a vacant
// slot of the same shape (its first pod went away after others bound).
func (c *cluster) slotFor(gr *group, p *corev1.Pod) (string, bool) {
	if _, s := gr.slotOf(p.UID); s != nil {
		return s.node, true
	}
	shape := k8sadapter.PodShape(c.opts.PodRequests(p))
	for _, a := range gr.allocs {
		if !a.running || slices.Contains(a.pods, p.UID) {
			continue
		}
		for _, s := range a.slots {
			if s.pod == "" && !s.done && s.shape == shape {
				s.pod = p.UID
				return s.node, true
			}
		}
	}
	return "", false
}

// podSlot finds the pod's group, allocation and slot; the error names
// the pod and what it lacks.
func (c *cluster) podSlot(p *corev1.Pod) (*group, *alloc, *slot, error) {
	gr := c.groups[c.podKey[p.UID]]
	if gr == nil {
		return nil, nil, nil, fmt.Errorf("fluence: pod %s has no group", describePod(p))
	}
	a, s := gr.slotOf(p.UID)
	if s == nil {
		return gr, nil, nil, fmt.Errorf("fluence: pod %s holds no slot in group %s", describePod(p), gr.id.Key)
	}
	return gr, a, s, nil
}

// reserve marks the pod's slot taken (Reserve).
func (c *cluster) reserve(p *corev1.Pod, node string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _, s, err := c.podSlot(p)
	if err != nil {
		return err
	}
	if s.node != node {
		return fmt.Errorf("fluence: pod %s was placed on %s, not %s", describePod(p), s.node, node)
	}
	s.reserved = true
	return nil
}

// unreserve handles a failure after Reserve (Permit rejected or timed out,
// a later plugin or the binding failed): the allocation is withdrawn while
// none of its pods is bound.
func (c *cluster) unreserve(p *corev1.Pod, fx *effects) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gr, a, s, err := c.podSlot(p)
	if err != nil {
		return
	}
	s.reserved = false
	if !a.anyBound() {
		c.withdraw(gr, a, fmt.Sprintf("pod %s failed after it was reserved on %s", describePod(p), s.node), fx)
	}
}

// failed handles a pinned pod that its node turned away in Filter (the
// stock filters disagree with the engine: a taint, a port, a volume): the
// allocation is withdrawn while none of its pods is bound.
func (c *cluster) failed(p *corev1.Pod, why string, fx *effects) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gr, a, s, err := c.podSlot(p)
	if err != nil || a.anyBound() {
		return
	}
	c.withdraw(gr, a, fmt.Sprintf("node %s turned pod %s away: %s", s.node, describePod(p), why), fx)
	// The engine and the stock filters disagree about this node (often only
	// for a moment: the framework's cache has not yet seen a finished pod
	// go); placing the group again at once would likely choose it again.
	// Hold off for a few seconds, doubling on each repeat, so a lasting
	// disagreement does not turn into a hot loop. The group asks again at
	// once, in its old place, for a start after the hold.
	gr.holdStep = min(max(2*gr.holdStep, 2), 60)
	gr.holdUntil = c.now() + gr.holdStep
	gr.heldSubmit = a.submit
	c.held[gr.id.Key] = true
	c.trySubmit(gr, fx)
}

// permit reports whether the pod's whole allocation is reserved, and which
// waiting pods to let through with it.
func (c *cluster) permit(p *corev1.Pod) (ready bool, siblings []types.UID, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, a, s, err := c.podSlot(p)
	if err != nil {
		return false, nil, err
	}
	s.reserved = true
	for _, o := range a.slots {
		if o.pod == "" || o.done || o.bound {
			continue
		}
		if !o.reserved {
			return false, nil, nil
		}
		if o.pod != p.UID {
			siblings = append(siblings, o.pod)
		}
	}
	return true, siblings, nil
}

// recordOf returns the allocation annotation for a pod about to be bound;
// "" for a pod outside any allocation (a plain binding). An allocation on
// a node another scheduler filled is withdrawn when that is seen
// (withdrawOverloaded), so a pod still holding a slot here may bind.
func (c *cluster) recordOf(p *corev1.Pod) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, a, _, err := c.podSlot(p)
	if err != nil {
		return ""
	}
	return a.recorded
}

// boundOK marks a pod bound as soon as the binding call succeeded, before
// the informer says so.
func (c *cluster) boundOK(p *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, _, s, err := c.podSlot(p); err == nil {
		s.bound = true
	}
}

// loop runs a queue loop when something waits (the periodic and freed-
// resources wake-up).
func (c *cluster) loop(fx *effects) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.publish()
	if c.m != nil && !c.dirty && len(c.q.Pending()) == 0 && len(c.q.Blocked()) == 0 && !c.holdEnded() {
		return
	}
	c.ensureEngine(fx)
	if c.m == nil {
		return
	}
	for _, gr := range c.sortedGroups() {
		c.trySubmit(gr, fx)
	}
	c.schedule(fx)
}

// holdEnded reports whether a held group's hold is over, and forgets the
// groups whose hold is over (the loop submits them now).
func (c *cluster) holdEnded() bool {
	ended := false
	for key := range c.held {
		gr := c.groups[key]
		if gr == nil || c.now() >= gr.holdUntil {
			delete(c.held, key)
			ended = true
		}
	}
	return ended
}
