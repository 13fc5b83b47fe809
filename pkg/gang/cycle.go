package gang

import (
	"cmp"
	"fmt"
)

// Place answers a pod's scheduling cycle (PreFilter): where the pod goes,
// or why it waits. id is the pod's resolved group.
func (c *Core) Place(p Pod, id GroupID, now int64) Verdict {
	c.advance(now)
	c.dropHold(p.UID) // in its cycle: no longer out of the queue
	if p.NodeName != "" || p.Done {
		return Verdict{Final: true, Reason: "fluence: pod " + p.String() + " is already bound or ended"}
	}
	g := c.addMember(&p, id, true)
	if why := id.rolesAgree(); why != "" {
		if g.state != invalid || g.reason != why {
			c.touch(g)
			g.state, g.reason, g.invalidBy = invalid, why, p.UID
			c.explain(g, true, "FluenceInvalidGroup", why)
		}
		return Verdict{Final: true, Reason: "fluence: " + why}
	}
	if (g.id.Size != id.Size || g.id.Roles != id.Roles) && !c.sizeChanged(g, &p, id) {
		why := fmt.Sprintf("pods of group %s disagree on its size: %s says %d, others say %d", id.Key, p.String(), id.Size, g.id.Size)
		if g.id.Size == id.Size {
			why = fmt.Sprintf("pods of group %s disagree on its roles: %s says %s, others say %s", id.Key, p.String(), cmp.Or(id.Roles, "none"), cmp.Or(g.id.Roles, "none"))
		}
		if g.state != invalid || g.reason != why {
			c.touch(g)
			g.state, g.reason, g.invalidBy = invalid, why, p.UID
			c.explain(g, true, "FluenceInvalidGroup", why)
		}
		return Verdict{Final: true, Reason: "fluence: " + why}
	}
	if g.state == invalid && g.invalidBy == p.UID {
		// The pod that disagreed now agrees (its labels were fixed).
		g.invalidBy = ""
		c.judgeAgain(g)
	}
	if !c.ensureEngine() {
		return waitf("no resource graph yet (no nodes?)")
	}
	if node, ok := c.slotFor(g, &p); ok {
		return Verdict{Node: node}
	}
	if g.state == invalid || g.state == rejected {
		return Verdict{Final: true, Reason: judged(g)}
	}
	c.trySubmit(g)
	if g.queuedPods() > 0 {
		// Cheap when nothing changed: the queue skips matches whose
		// answer cannot have changed.
		c.schedule()
	}
	c.rejudge()
	// This pod is in its scheduling cycle now: activating it would only
	// make the framework try it once more.
	delete(c.fx.activate, p.UID)
	if node, ok := c.slotFor(g, &p); ok {
		return Verdict{Node: node}
	}
	if g.state == rejected || g.state == invalid {
		return Verdict{Final: true, Reason: judged(g)}
	}
	if g.joinRefused != "" && g.underway() {
		return Verdict{Final: true, Reason: fmt.Sprintf("fluence: pod %s cannot join its running group %s: %s", p.String(), g.id.Key, g.joinRefused)}
	}
	if c.now < g.holdUntil {
		return waitf("pod group %s is placed again in %ds: a node turned its last placement away", g.id.Key, (g.holdUntil-c.now+c.cfg.TicksPerSecond-1)/c.cfg.TicksPerSecond)
	}
	switch {
	case g.evictedBy != "":
		cause := g.evictedBy // evictRest's: "the preemption of its member ..."
		if c.groups[cause] != nil {
			cause = "pod group " + cause + " preempts it"
		}
		return waitf("pod group %s is being evicted (%s); this pod waits until none of it runs, and the group is placed whole again", g.id.Key, cause)
	case g.yieldTo != "":
		return waitf("pod group %s lost pods to the preemption by %s; this pod waits until %s has started", g.id.Key, g.yieldTo, g.yieldTo)
	}
	if p.waits() && !g.underway() {
		c.condition(g, Waiting, fmt.Sprintf("waiting for pod %s: %s", p.String(), p.Waiting))
	}
	if p.waits() {
		return waitf("pod group %s waits for its pod %s: %s", g.id.Key, p.String(), p.Waiting)
	}
	if g.queuedPods() == 0 {
		free := c.unslotted(g)
		have, byRole := len(free)+g.liveSlots(), podsByRole(free)
		if have < int(g.id.Size) || !g.underway() && roleShort(g.id, byRole) {
			gated := gatedNote(c.gatedCount[g.id.Key])
			if rc := roleCounts(g.id, byRole); rc != "" {
				gated = " (" + rc + ")" + gated
			}
			if w := g.waitingMember(); w != nil {
				c.condition(g, Waiting, fmt.Sprintf("waiting for pod %s: %s", w, w.Waiting))
				return waitf("pod group %s waits for its pod %s: %s", g.id.Key, w, w.Waiting)
			}
			c.condition(g, Waiting, fmt.Sprintf("waiting for pods: %d of %d exist%s", have, g.id.Size, gated))
			return waitf("waiting for the pods of group %s: %d of %d exist%s", g.id.Key, have, g.id.Size, gated)
		}
		return waitf("group %s already has its %d pods placed; this pod waits for a slot", g.id.Key, g.id.Size)
	}
	why := g.reason
	if why == "" {
		why = "waits in the queue"
	}
	return Verdict{Reason: "fluence: pod group " + g.id.Key + " " + why}
}

// slotFor returns the pod's node if it holds a slot, taking over a vacant
// slot of the same shape and requirements (the member it replaces went
// away after others bound; members.go).
func (c *Core) slotFor(g *group, p *Pod) (string, bool) {
	if _, s := g.slotOf(p.UID); s != nil {
		return s.node, true
	}
	if s := c.vacantFor(g, p); s != nil {
		c.touch(g)
		s.pod, s.name = p.UID, p.String()
		return s.node, true
	}
	return "", false
}

// podSlot finds the pod's group, allocation and slot; the error names
// the pod and what it lacks.
func (c *Core) podSlot(uid string) (*group, *alloc, *slot, error) {
	g := c.groups[c.podKey[uid]]
	if g == nil {
		return nil, nil, nil, fmt.Errorf("fluence: pod %s has no group", c.name(uid))
	}
	c.markGroup(g) // its caller may change the slot
	a, s := g.slotOf(uid)
	if s == nil {
		return g, nil, nil, fmt.Errorf("fluence: pod %s holds no slot in group %s", c.name(uid), g.id.Key)
	}
	return g, a, s, nil
}

func (c *Core) name(uid string) string {
	if g := c.groups[c.podKey[uid]]; g != nil {
		if p := g.members[uid]; p != nil {
			return p.String()
		}
	}
	return "uid " + uid
}

// Reserve marks the pod's slot taken.
func (c *Core) Reserve(uid, node string) error {
	_, _, s, err := c.podSlot(uid)
	if err != nil {
		return err
	}
	if s.node != node {
		return fmt.Errorf("fluence: pod %s was placed on %s, not %s", c.name(uid), s.node, node)
	}
	s.reserved = true
	return nil
}

// Unreserve handles a failure after Reserve on node (Permit rejected or
// timed out, a later plugin or the binding failed). The allocation is
// withdrawn while none of it was let through; afterwards the pod keeps its
// slot and tries to bind again there. An Unreserve for another node than
// the pod's slot is for an allocation already gone (the pod was placed
// again since): it changes nothing.
func (c *Core) Unreserve(uid, node string, now int64) {
	c.advance(now)
	g, a, s, err := c.podSlot(uid)
	if err != nil || s.node != node {
		return
	}
	s.reserved = false
	if a.withdrawable() {
		c.withdraw(g, a, fmt.Sprintf("pod %s failed after it was reserved on %s", c.name(uid), s.node))
		return
	}
	if p := g.members[uid]; p != nil {
		c.fx.activatePod(p.ref())
	}
}

// Unreserved takes back a Reserve that was only tentative: kube-scheduler
// 1.37's workload cycle (GenericWorkload) reserves a PodGroup's pods to
// try a placement, reverts every Reserve, then reserves the chosen
// placement again. The allocation stays; the pod's slot waits for its
// next Reserve.
func (c *Core) Unreserved(uid, node string) {
	if _, _, s, err := c.podSlot(uid); err == nil && s.node == node {
		s.reserved = false
	}
}

// TurnedAway handles a pod its node turned away although the engine
// placed it there (the stock filters disagree: a taint, a port, a volume,
// or a finished pod the framework's cache still counts). The allocation is
// withdrawn while it may be, and the group is held off for a moment.
//
// lagging says the refusal was about what the engine counts itself (the
// node's CPU, memory, pods or GPUs): the engine's accounting is right and
// the framework's view will catch up (a pod that ended is still counted
// there), so the node is not left out of the next placements.
func (c *Core) TurnedAway(uid, why string, lagging bool, now int64) {
	c.advance(now)
	g, a, s, err := c.podSlot(uid)
	if err != nil || !a.withdrawable() {
		return
	}
	learned := false
	if !lagging {
		learned = c.avoidNode(g, uid, s.node)
	}
	c.withdraw(g, a, fmt.Sprintf("node %s turned pod %s away: %s", s.node, c.name(uid), why))
	// Placing the group again at once could meet the same refusal: hold
	// off for a few seconds. A refusal that taught something new keeps
	// the hold short, as the next placement differs; one that did not
	// doubles it, up to a minute, so a lasting disagreement does not
	// become a loop. The group asks again at once, in its old place, for
	// a start after the hold.
	if learned && !g.avoidSpent {
		g.holdStep = c.seconds(2)
	} else {
		g.holdStep = min(max(2*g.holdStep, c.seconds(2)), c.seconds(60))
	}
	c.setHoldUntil(g, c.now+g.holdStep)
	g.heldSubmit = a.submit
	c.held[g.id.Key] = true
	c.trySubmit(g)
}

// Permit reports whether the pod's whole allocation is reserved. When it
// is, the allocation is committed and its other waiting pods are let
// through (Effects.Allow).
func (c *Core) Permit(uid string) (bool, error) {
	g, a, s, err := c.podSlot(uid)
	if err != nil {
		return false, err
	}
	s.reserved = true
	// Check first, collect after: a group's pods each pass Permit once, and
	// collecting while checking cost each a list of those before it.
	for _, o := range a.slots {
		if o.pod != "" && !o.done && !o.bound && !o.reserved {
			return false, nil
		}
	}
	var siblings []Ref
	for _, o := range a.slots {
		if o.pod == "" || o.done || o.bound || o.pod == uid {
			continue
		}
		if p := g.members[o.pod]; p != nil {
			siblings = append(siblings, p.ref())
		}
	}
	c.commit(g, a)
	c.fx.out.Allow = append(c.fx.out.Allow, siblings...)
	return true, nil
}

// commit records that an allocation was let through whole: it is never
// withdrawn from now on. The first placement of a group to get this far
// ends the group's wait, measured to the last time the core was given
// (Permit and Reserve take none: they follow the pod's Place in the same
// cycle).
func (c *Core) commit(g *group, a *alloc) {
	a.committed = true
	g.placementHeld()
	if a.placing && !g.waitTold {
		g.waitTold = true
		c.fx.out.Placed = append(c.fx.out.Placed, GroupPlaced{Group: g.id.Key, Waited: c.now - g.since})
	}
}

// PermitTimeout returns how long, in seconds, the pod may wait at Permit
// for the rest of its allocation as its group asks
// (GroupID.PermitTimeout: a scheduler-plugins PodGroup's
// spec.scheduleTimeoutSeconds, as last read); 0 when the group asks
// nothing, and the scheduler's own timeout applies. When the wait ends
// before the allocation is whole, the caller unreserves the pod
// (Unreserve), which withdraws the whole allocation and turns the group's
// other waiting pods away: the group is placed again whole.
func (c *Core) PermitTimeout(uid string) int64 {
	if g := c.groups[c.podKey[uid]]; g != nil {
		return g.id.PermitTimeout
	}
	return 0
}

// Bound marks a pod bound once its binding succeeded, before the
// informer says so.
func (c *Core) Bound(uid string) {
	if g, _, s, err := c.podSlot(uid); err == nil {
		s.bound = true
		c.touch(g)
	}
}

// Record returns the allocation record to write on a pod at binding; ""
// for a pod outside any allocation.
func (c *Core) Record(uid string) string {
	rec, _ := c.Allocation(uid)
	return rec
}

// Domain returns the topology domain (key=value) of the pod's
// allocation, to write on the pod at binding; "" when its group asked for
// none or got none.
func (c *Core) Domain(uid string) string {
	g, a, _, err := c.podSlot(uid)
	switch {
	case err != nil:
		return ""
	case a.domain != "":
		return a.domain
	case g.id.TopologyKey != "":
		// A pod joining a running group, or an allocation replayed after a
		// restart: the group's domain is where its members run.
		if v, ok := c.domainOf(g, g.id.TopologyKey); ok {
			return g.id.TopologyKey + "=" + v
		}
	}
	return ""
}

// Allocation returns the record of the pod's allocation and how many
// slots it has; "" and 0 for a pod outside any allocation.
func (c *Core) Allocation(uid string) (string, int) {
	if _, a, _, err := c.podSlot(uid); err == nil {
		return a.recorded, len(a.slots)
	}
	return "", 0
}

// judged is a rejected or invalid group's answer to its pods' cycles. An
// invalid group's reason is a sentence naming the group; a rejected one's
// follows the group's name.
func judged(g *group) string {
	if g.state == invalid {
		return "fluence: " + g.reason
	}
	return "fluence: pod group " + g.id.Key + " " + g.reason
}
