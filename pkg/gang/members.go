package gang

import (
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/fluence-sched/fluence/pkg/jobspec"
)

// A group's life goes on after it starts: members finish, fail, are
// deleted or evicted, their node is removed or refuses them after binding;
// pods arrive to replace them, or beyond the group's size (the size is
// the least that must start together; an elastic group has more pods).
// The rules:
//
//   - A member that succeeded counts toward the group's size while its
//     pod exists. An Indexed Job never runs a completed index again, so
//     the group must never wait for it to come back.
//   - A lost member leaves its slot vacant on its node, still held in the
//     engine: the pod that replaces it (same shape and requirements) takes
//     it at once. A slot whose node is gone or down, or whose node refused
//     or evicted the pod, is not kept for a replacement.
//   - Once a group is underway (a member placed or finished), each of its
//     pods still to be placed joins alone, as it fits: a replacement never
//     waits for a whole group that will never form again, and the pods
//     beyond the group's size are placed as room frees. A group whose
//     members all went without finishing is placed whole again.
//   - A joining pod keeps to the group's topology domain. If the domain can
//     no longer hold it, the group says so and the pod waits until the
//     nodes change.
//   - A group that has been placed reports whether it is whole now: Whole,
//     Elastic (whole, with pods beyond its size), or Broken (what is
//     missing and why), as a condition of its defining object.

// ending says how a member went.
type ending struct {
	succeeded bool
	// refused: its node turned the pod away after binding (the kubelet's
	// admission: OutOfcpu, OutOfmemory) or evicted it: the node is no
	// place to keep for its replacement.
	refused bool
	// why, for messages ("failed (OutOfcpu)"); "" for a pod deleted.
	why string
}

// endingOf reads how an ended pod went.
func endingOf(p *Pod) ending {
	switch {
	case p.Succeeded:
		return ending{succeeded: true}
	case p.FailReason == "":
		return ending{why: "failed"}
	}
	r := p.FailReason
	refused := strings.HasPrefix(r, "OutOf") || r == "UnexpectedAdmissionError" || r == "NodeAffinity" || r == "Evicted"
	return ending{refused: refused, why: "failed (" + r + ")"}
}

func (e ending) String() string {
	if e.why == "" {
		return "went away"
	}
	return e.why
}

// podEnded handles a pod that succeeded or failed.
func (c *Core) podEnded(p *Pod) {
	end := endingOf(p)
	if _, known := c.podKey[p.UID]; !known && end.succeeded && p.Owned && p.NodeName != "" && p.Allocation != "" {
		// It finished before this run began (a restart): its record says
		// whose member it was, and it counts toward that group as if it
		// had been seen running.
		c.adopt(p)
	}
	if end.succeeded && p.NodeName != "" {
		if g := c.groups[c.podKey[p.UID]]; g != nil {
			if _, s := g.slotOf(p.UID); s != nil {
				if g.finished == nil {
					g.finished = map[string]bool{}
				}
				g.finished[p.UID] = true
				c.finishedOf()[p.UID] = g.id.Key
			}
		}
	}
	c.memberGone(p.UID, end)
}

// finishedOf indexes finished members by UID to their group's key.
func (c *Core) finishedOf() map[string]string {
	if c.finishedKey == nil {
		c.finishedKey = map[string]string{}
	}
	return c.finishedKey
}

// forgetFinished stops counting a finished member whose pod was deleted.
func (c *Core) forgetFinished(uid string) {
	key, ok := c.finishedKey[uid]
	if !ok {
		return
	}
	delete(c.finishedKey, uid)
	g := c.groups[key]
	if g == nil {
		return
	}
	delete(g.finished, uid)
	c.touch(g)
	c.forgetIfOver(g)
}

// forgetIfOver forgets a group nothing of which runs, waits or finished
// with its pod still there.
func (c *Core) forgetIfOver(g *group) {
	if g.dormant() && len(g.finished) == 0 {
		delete(c.groups, g.id.Key)
		delete(c.held, g.id.Key)
		c.markGroup(g)
	}
}

// dormant reports whether the group is only remembered for its finished
// members: nothing of it runs or waits. Inspection and statistics leave
// it out; a pod that joins it wakes it.
func (g *group) dormant() bool { return len(g.members) == 0 && len(g.allocs) == 0 }

// lose settles the slot of a bound member that went.
func (c *Core) lose(g *group, a *alloc, s *slot, name string, end ending) {
	c.touch(g)
	if end.succeeded {
		s.done = true
		return
	}
	n := c.nodes[s.node]
	// A preempted group's slots are not kept: its nodes go to the group
	// that preempted it.
	keep := g.evictedBy == "" && !s.evicting && !end.refused && n != nil && !n.Down
	if keep {
		s.pod, s.bound, s.reserved = "", false, false
	} else {
		s.done = true
	}
	if s.evicting {
		// Evicted alone: the engine still counts what it held.
		c.releaseEvicted(g, a, s.node)
	}
	g.lastLost = fmt.Sprintf("member %s %s on %s", name, end, s.node)
	first := firstMember(g)
	if first == nil || g.evictedBy != "" {
		return // no member left to tell
	}
	where := "anywhere the group's constraints allow"
	if keep {
		where = "on " + s.node + ", where its slot is kept"
	}
	note := fmt.Sprintf("pod group %s: %s; a pod replacing it joins the group alone, %s", g.id.Key, g.lastLost, where)
	if !g.underway() {
		note = fmt.Sprintf("pod group %s: %s, and no member runs: the group is placed whole again", g.id.Key, g.lastLost)
	}
	c.fx.out.Events = append(c.fx.out.Events, Event{Pod: first.ref(), Warning: true, Reason: "FluenceMemberLost", Note: note})
}

// releaseEvicted frees, in the engine, what an allocation held on a node
// all of whose pods there were evicted alone (preempt_pods.go) and are
// gone. Until the last of them goes the node stays held: the preemptor
// is not placed beside pods still terminating. When the engine cannot
// release the part (or would be left with nothing of the allocation), it
// is rebuilt without the slots instead. When they were the last of the
// allocation, nothing is released here: detach, which settles the slot,
// releases the finished allocation whole (Complete), as any group's that
// ended.
func (c *Core) releaseEvicted(g *group, a *alloc, node string) {
	if a.finished() {
		return
	}
	for _, o := range a.slots {
		if o.node == node && !o.done {
			return
		}
	}
	v, ok := c.vertexOf[node]
	if !ok || c.m == nil || c.dirty || c.unplaced[a.id] {
		c.dirty = true
		return
	}
	c.markQueue()
	gone, err := c.q.Release(a.id, []int32{v})
	c.fail("release", g.id.Key, err)
	if err != nil || gone {
		c.dirty = true
	}
}

// underway reports whether the group has started: a member holds a slot
// or finished. Its pods then join it one by one.
func (g *group) underway() bool {
	if len(g.finished) > 0 {
		return true
	}
	for s := range g.heldSlots() {
		if s.pod != "" {
			return true
		}
	}
	return false
}

// vacantFor finds a vacant slot the pod may take: same shape and
// requirements, on a node that still takes work and that the pod may use.
func (c *Core) vacantFor(g *group, p *Pod) *slot {
	if p.waits() {
		return nil // what it asks is not known until what it waits for is seen
	}
	req := filterKey(p)
	for _, a := range g.allocs {
		if !a.running {
			continue
		}
		for _, s := range a.slots {
			// A worker of the same shape never stands in for a lost
			// launcher: the group's roles would no longer add up.
			if s.pod != "" || s.done || !c.fitsShape(p, s.shape) || s.requires != req || g.id.Roles != "" && s.role != p.Role {
				continue
			}
			n := c.nodes[s.node]
			if n == nil || n.Down || c.overloaded[s.node] || avoids(g, p.UID, s.node) {
				continue
			}
			if p.Filter != nil && !p.Filter.Admits(n) {
				continue
			}
			return s
		}
	}
	return nil
}

// avoids reports whether the node turned the pod away since the group was
// last let through.
func avoids(g *group, uid, node string) bool {
	for _, n := range g.avoid[uid] {
		if n == node {
			return true
		}
	}
	return false
}

// besideApart keeps a pod that may not share a node with its like (one
// rank per node) off the nodes where the group's members of that kind run,
// when it joins an underway group: a request of its own does not see them,
// and the node's filters would only turn it away.
func (c *Core) besideApart(g *group, p *Pod, con *jobspec.Constraint) *jobspec.Constraint {
	if !p.Apart || !g.underway() {
		return con
	}
	var busy []string
	for s := range g.heldSlots() {
		if m := g.members[s.pod]; s.pod != "" && m != nil && m.Apart && !slices.Contains(busy, s.node) {
			busy = append(busy, s.node)
		}
	}
	if len(busy) == 0 {
		return con
	}
	slices.Sort(busy)
	off := jobspec.Not(jobspec.Hosts(busy...))
	if con == nil {
		return off
	}
	return jobspec.And(con, off)
}

// fillVacancies gives the group's waiting pods the vacant slots they fit
// and wakes them to bind there. A pod already queued to join takes a slot
// freed since (its replacement was seen before the member's end: the
// informers do not order the two) and leaves the queue.
func (c *Core) fillVacancies(g *group) {
	if !g.underway() {
		return
	}
	for _, a := range slices.Clone(g.allocs) {
		if a.running || len(a.pods) != 1 {
			continue
		}
		if p := g.members[a.pods[0]]; p != nil {
			if s := c.vacantFor(g, p); s != nil {
				c.dequeue("fill-vacancy", g.id.Key, a.id)
				c.dropAlloc(g, a)
				c.takeSlot(g, s, p)
			}
		}
	}
	for _, p := range c.unslotted(g) {
		if s := c.vacantFor(g, p); s != nil {
			c.takeSlot(g, s, p)
		}
	}
}

// takeSlot gives a vacant slot to a pod and wakes it to bind there.
func (c *Core) takeSlot(g *group, s *slot, p *Pod) {
	s.pod, s.name = p.UID, p.String()
	c.touch(g)
	c.fx.activatePod(p.ref())
	if g.queuedPods() == 0 {
		g.reason = ""
		c.setReservedAt(g, -1)
	}
}

// joinPods asks, for each of an underway group's pods still to be placed,
// a request of its own: it joins the group as it fits.
func (c *Core) joinPods(g *group) {
	if g.joinRefused != "" && g.joinGen == c.nodeGen {
		return // the nodes did not change since the domain refused
	}
	g.joinRefused = ""
	submit := c.now
	if c.now < g.holdUntil {
		submit = g.heldSubmit
	}
	for _, p := range c.unslotted(g) {
		c.submitPods(g, []*Pod{p}, submit)
		if g.joinRefused != "" {
			return
		}
	}
}

// refuseJoin records that an underway group's pods cannot join it: the
// group keeps running; the pods wait until the nodes change.
func (c *Core) refuseJoin(g *group, pods []*Pod, why string) {
	c.touch(g)
	if key := g.id.TopologyKey; key != "" {
		if v, ok := c.domainOf(g, key); ok {
			why = fmt.Sprintf("within its topology domain %s=%s, where the group runs: %s", key, v, why)
		}
	}
	g.joinRefused, g.joinGen = why, c.nodeGen
	for _, p := range pods {
		c.fx.out.Events = append(c.fx.out.Events, Event{Pod: p.ref(), Warning: true, Reason: "FluenceMemberUnplaceable",
			Note: fmt.Sprintf("pod %s cannot join its running group %s: %s; it waits until the nodes change", p, g.id.Key, why)})
	}
}

// domainOf returns the value of the topology key on the nodes the group
// runs on, if any of them still exists.
func (c *Core) domainOf(g *group, key string) (string, bool) {
	for s := range g.heldSlots() {
		if n := c.nodes[s.node]; n != nil {
			if v, ok := n.Labels[key]; ok {
				return v, true
			}
		}
	}
	return "", false
}

// heldSlots yields the slots of the group's running allocations that hold
// their node: their pods run or will, or they wait for a replacement.
func (g *group) heldSlots() iter.Seq[*slot] {
	return func(yield func(*slot) bool) {
		for _, a := range g.allocs {
			if !a.running {
				continue
			}
			for _, s := range a.slots {
				if !s.done && !yield(s) {
					return
				}
			}
		}
	}
}

// reportWholes reports, for each group placed once that something
// happened to since, whether it is whole now.
func (c *Core) reportWholes() {
	if len(c.review) == 0 {
		return
	}
	for _, g := range c.groupsOf(c.review) {
		c.reportWhole(g)
	}
}

// reportWhole records the group's whole condition when it changed. It
// counts members running (bound) or finished; a group is first reported
// once it was whole, so its first placement, still binding, is not called
// broken.
func (c *Core) reportWhole(g *group) {
	if !g.everPlaced || g.id.Source != SourcePodGroup && g.id.Source != SourceNativePodGroup {
		return
	}
	running, binding := 0, 0
	for s := range g.heldSlots() {
		switch {
		case s.pod == "":
		case s.bound:
			running++
		default:
			binding++
		}
	}
	size, fin := int(g.id.Size), len(g.finished)
	have := running + fin
	if have >= size {
		g.everWhole = true
	}
	if !g.everWhole {
		return
	}
	waiting := g.queuedPods() + c.unslottedCount(g) + binding
	counts := fmt.Sprintf("%d of %d members running", running, size)
	if fin > 0 {
		counts = fmt.Sprintf("%d of %d members running or finished (%d finished)", have, size, fin)
	}
	cond := Condition{Group: g.id}
	switch {
	case have > size || have == size && waiting > 0:
		cond.Status = Elastic
		cond.Message = fmt.Sprintf("whole: %d members running or finished for a size of %d", have, size)
		if fin > 0 {
			cond.Message = fmt.Sprintf("whole: %d members running or finished (%d finished) for a size of %d", have, fin, size)
		}
		switch {
		case waiting == 1:
			cond.Message += "; 1 more waits to join"
		case waiting > 1:
			cond.Message += fmt.Sprintf("; %d more wait to join", waiting)
		}
	case have == size:
		cond.Status = Whole
		cond.Message = "whole: " + counts
	default:
		cond.Status = Broken
		cond.Message = "not whole: " + counts
		if g.lastLost != "" {
			cond.Message += "; last lost: " + g.lastLost
		}
		switch {
		case g.joinRefused != "":
			cond.Message += "; its pods cannot join it: " + g.joinRefused
		case waiting == 1:
			cond.Message += "; 1 pod waits to join"
		case waiting > 1:
			cond.Message += fmt.Sprintf("; %d pods wait to join", waiting)
		default:
			cond.Message += "; no pod waits to replace what is missing"
		}
	}
	if g.lastWhole == cond {
		return
	}
	g.lastWhole = cond
	c.fx.out.Conditions = append(c.fx.out.Conditions, cond)
}
