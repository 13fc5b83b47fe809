package gang

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/match"
)

// Preemption: a waiting group may evict running groups of lower priority
// to start now, rather than wait for them to end.
//
// When. After each queue loop, a group waiting whole (not a pod joining a
// running group) may preempt when its priority policy allows it (not
// Never), no hold keeps it back, and its reserved start is further away
// than Preemption.After (0: only when it has no reservation at all). The
// planner knows when each running group should end, so a group whose
// reservation is near waits for it instead of evicting anyone.
//
// Whom. Running groups of strictly lower priority that have run at least
// Preemption.MinRuntime, whole: a group is never left partly running
// (unless its disruptionMode is single: preempt_pods.go). Of the sets of
// them that would let the group start now, in one of its domains when it
// must be within one, the cheapest is chosen (preempt_search.go): lowest
// priorities first, then least work lost since the victims' checkpoints
// (preempt_cost.go). The matcher answers, for each set tried, whether the
// group would fit were those groups gone (match.FitsWithout, which
// changes nothing). None is evicted when the group would not fit even
// with them all gone. A group bound to one domain may also move a
// movable group, even of its own priority (preempt_move.go).
//
// Then. The victims' pods are evicted (Effects.Evictions: the plugin
// marks each with the DisruptionTarget condition and deletes it with its
// grace period) and their planned end is brought to now plus
// Preemption.Timeout. The preemptor's reservation thus falls on the
// victims' nodes at that time, and the queue's backfill lets nothing of
// lower priority take them meanwhile; once the victims' pods are gone,
// the group starts. A victim that is still there at the timeout
// overruns, as any group running late: its end is extended, the
// preemptor's reservation moves with it, and the hold is released.
//
// One preemption is decided per loop: the next loop sees its effect.

// Preemption configures preemption; a nil Config.Preemption turns it off.
type Preemption struct {
	// After, in seconds: a waiting group preempts when its reserved start
	// is further from now than this, or it has no reservation. 0: only
	// when it has no reservation.
	After int64
	// MinRuntime, in seconds, is how long a group runs before it may be
	// preempted.
	MinRuntime int64
	// Timeout, in seconds, is how long the victims have to go before the
	// hold on their nodes is released. Default 120.
	Timeout int64
	// MoveEvery, in seconds, is how long a group that was moved runs
	// before it may be moved again (preempt_move.go). Default 3600.
	MoveEvery int64
}

// PreemptNever is the preemption policy that keeps a group from
// preempting (a PodGroup's or a pod's preemptionPolicy).
const PreemptNever = "Never"

// Eviction asks for a pod to be evicted: a member of Group, preempted by
// the group By.
type Eviction struct {
	Pod     Ref
	Group   string
	By      string
	Message string
	// Moved: the group is moved (preempt_move.go), not only evicted: it
	// fits elsewhere now and is placed again first.
	Moved bool
}

// preemptHold is a preemptor's: the groups it evicts, and when the hold
// on their nodes ends.
type preemptHold struct {
	victims []string
	until   int64
	// yielding are the groups that lost single pods to it and take no
	// node back until the hold ends.
	yielding []string
	// choice says where it took room and what it chose over, for
	// explain (choiceNote).
	choice string
}

// holdTimeout is Preemption.Timeout, 120 s when unset.
func holdTimeout(p *Preemption) int64 {
	if p.Timeout <= 0 {
		return 120
	}
	return p.Timeout
}

// preemptRetry is how long, in seconds, a group that could not preempt
// waits before it tries again (unless a victim's end frees it first).
const preemptRetry = 5

// victim is a running group a preemptor may evict.
type victim struct {
	g     *group
	ids   []int64 // its running allocations
	pods  int
	start int64
	// lost is what evicting it now loses: per pod, the ticks since its
	// checkpoint, or since it began; checkpointed, whether any pod had one.
	lost         int64
	checkpointed bool
	// held is what its pods hold on each node, by node name.
	held []nodeHeld
	// since is its victimRec's: per slot not done of its allocations in
	// ids, in their order, when the work its pod would lose began.
	since []int64
	// movable: it may be moved (preempt_move.go); mustMove: it is a
	// candidate only so (it is of the preemptor's own priority); moving:
	// it was chosen and fits elsewhere, so it is moved.
	movable, mustMove, moving bool
}

// preempt runs after a queue loop: it settles preemptions under way and
// lets one waiting group preempt.
func (c *Core) preempt() {
	p := c.cfg.Preemption
	if p == nil || c.m == nil {
		return
	}
	c.settlePreemptions()
	c.forgetMoves(p)
	if c.arrivals > 0 {
		return // the new nodes may make room: preempt once they joined
	}
	for _, g := range c.preemptors() {
		if c.tryPreempt(g, p) {
			return
		}
	}
}

// settlePreemptions ends the holds past their time or whose group
// started, and forgets the eviction of victims nothing of which runs.
func (c *Core) settlePreemptions() {
	for _, key := range slices.Sorted(maps.Keys(c.evicting)) {
		v := c.groups[key]
		if v == nil || !v.running() {
			if v != nil {
				v.evictedBy = ""
				c.touch(v) // its pods are asked for whole again
			}
			delete(c.evicting, key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(c.preempting)) {
		g := c.groups[key]
		if g == nil || g.preempt == nil || g.state != queued || c.now >= g.preempt.until {
			if g != nil && g.preempt != nil {
				c.stopYielding(g.preempt.yielding)
				g.preempt = nil
			}
			delete(c.preempting, key)
		}
	}
}

// running reports whether the group holds nodes.
func (g *group) running() bool {
	for _, a := range g.allocs {
		if a.running {
			return true
		}
	}
	return false
}

// preemptors lists the groups that may preempt now, highest priority
// first, then in queue order.
func (c *Core) preemptors() []*group {
	after := c.seconds(c.cfg.Preemption.After)
	var out []*group
	for _, g := range c.groups {
		if g.state != queued || g.underway() || g.preempt != nil || c.now < g.holdUntil || c.now < g.preemptNext {
			continue
		}
		if v := c.stillEvicting(g); v != "" {
			// Its victims outlasted the hold: their nodes are still its to
			// wait for, and evicting more would take twice the room.
			g.preemptNote = "the group it preempted, " + v + ", has not gone yet"
			continue
		}
		if c.preemptPolicy(g) == PreemptNever {
			g.preemptNote = "its preemptionPolicy is Never"
			continue
		}
		if g.reservedAt >= 0 && (after == 0 || g.reservedAt-c.now <= after) {
			// Its start is near enough: it waits.
			g.preemptNote = "its reserved start is near enough to wait for"
			if after > 0 {
				g.preemptNote = fmt.Sprintf("its reserved start is within %d s, near enough to wait for", c.cfg.Preemption.After)
			}
			continue
		}
		if c.waitingAlloc(g) == nil {
			continue
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *group) int {
		if a.priority != b.priority {
			return cmp.Compare(b.priority, a.priority)
		}
		if c := cmp.Compare(a.since, b.since); c != 0 {
			return c
		}
		return cmp.Compare(a.id.Key, b.id.Key)
	})
	return out
}

// stillEvicting names a group g preempted that still runs, "" if none.
func (c *Core) stillEvicting(g *group) string {
	for _, key := range slices.Sorted(maps.Keys(c.evicting)) {
		if v := c.groups[key]; v != nil && v.evictedBy == g.id.Key {
			return key
		}
	}
	return ""
}

// preemptPolicy is the group's own policy, else Never when any of its
// pods says Never.
func (c *Core) preemptPolicy(g *group) string {
	if g.id.PreemptionPolicy != "" {
		return g.id.PreemptionPolicy
	}
	for _, p := range g.members {
		if p.PreemptNever {
			return PreemptNever
		}
	}
	return ""
}

// waitingAlloc is the group's request in the queue, if any.
func (c *Core) waitingAlloc(g *group) *alloc {
	for _, a := range g.allocs {
		if !a.running && !c.unplaced[a.id] {
			return a
		}
	}
	return nil
}

// victims lists the running groups g may evict, the first time a group
// too young to evict now comes of age (-1: none), and, sorted, the queued
// allocations of g and of groups of lower priority (reservations that
// are no obstacle to it). Victims come in no particular order: every search
// sorts its candidates by price, a total order (a price ends with the
// group's key), so the choice does not depend on it, and sorting ten
// thousand keys here on every try cost more than the search. The list is
// the core's scratch (preempt_scratch.go): valid until the next call.
func (c *Core) victims(g *group, p *Preemption) ([]victim, int64, []int64) {
	minRun := c.seconds(p.MinRuntime)
	out := c.scratch.victims[:0]
	base := c.scratch.base[:0]
	next := int64(-1)
	for _, v := range c.groups {
		if v == g || v.priority < g.priority {
			for _, w := range v.allocs {
				if !w.running {
					if _, ok := c.m.Info(w.id); ok {
						base = append(base, w.id)
					}
				}
			}
		}
		if v == g || v.evictedBy != "" || v.priority > g.priority {
			continue
		}
		vc := victim{g: v}
		if g.id.TopologyKey != "" {
			vc.movable = c.movable(v)
		}
		if v.priority == g.priority {
			if !vc.movable {
				continue
			}
			vc.mustMove = true
		}
		rec := c.victimRecOf(v)
		if len(rec.ids) == 0 {
			continue
		}
		vc.ids, vc.held, vc.pods, vc.start, vc.checkpointed = rec.ids, rec.held, len(rec.since), rec.start, rec.checkpointed
		vc.since = rec.since
		for _, since := range rec.since {
			vc.lost += max(c.now-since, 0)
		}
		if c.now-vc.start < minRun {
			if at := vc.start + minRun; next < 0 || at < next {
				next = at
			}
			continue
		}
		out = append(out, vc)
	}
	slices.Sort(base)
	clear(out[len(out):cap(out)]) // stale entries would keep groups alive
	c.scratch.victims, c.scratch.base = out, base
	return out, next, base
}

// victimRec is what a group would give up were it evicted, as far as
// it does not depend on the time: kept on the group until something
// happens to it (touch), since reading it afresh for ten thousand lone
// pods on every preemption (each group's allocations, slots and pods)
// cost more than the search. CheckInvariants compares each kept record
// with one read afresh.
type victimRec struct {
	ids  []int64    // its running allocations Permit let through
	held []nodeHeld // what their live slots hold, by node
	// all is what every running allocation of it holds, by node, Permit
	// passed or not (preempt_nodes.go counts what is free).
	all   []nodeHeld
	since []int64 // per live slot, its pod's checkpoint, else its start
	start int64   // when the first of them began
	// checkpointed: some pod's checkpoint is after its allocation began.
	checkpointed bool
}

// victimRecOf is the group's record, read when it has none.
func (c *Core) victimRecOf(v *group) *victimRec {
	if v.victimRec == nil {
		v.victimRec = c.readVictimRec(v)
	}
	return v.victimRec
}

// readVictimRec reads a group's victimRec.
func (c *Core) readVictimRec(v *group) *victimRec {
	rec := &victimRec{}
	for _, a := range v.allocs {
		if !a.running || c.unplaced[a.id] {
			continue
		}
		// Only what Permit let through is a victim: an allocation placed
		// in this loop whose pods have not all passed Permit has not
		// started, and its pods may not be bound to be evicted.
		if a.committed {
			// An adopted allocation may have begun before this run (a
			// negative time).
			if len(rec.ids) == 0 || a.began < rec.start {
				rec.start = a.began
			}
			rec.ids = append(rec.ids, a.id)
		}
		for _, s := range a.slots {
			if s.done {
				continue
			}
			h := nodeHeld{s.node, shapeAmounts(s.shape)}
			rec.all = append(rec.all, h)
			if a.committed {
				rec.held = append(rec.held, h)
				since, ckpt := c.workSince(v, a, s)
				rec.since = append(rec.since, since)
				rec.checkpointed = rec.checkpointed || ckpt
			}
		}
	}
	rec.all, rec.held = mergeHeld(rec.all), mergeHeld(rec.held)
	return rec
}

// workSince is when the work a slot's pod would lose began: its
// checkpoint, or its allocation's start when it has none (or one older
// than that), and whether it had one.
func (c *Core) workSince(g *group, a *alloc, s *slot) (int64, bool) {
	if m := g.members[s.pod]; m != nil && m.HasCheckpoint && m.Checkpointed > a.began {
		return m.Checkpointed, true
	}
	return a.began, false
}

// tryPreempt evicts the cheapest set of groups that lets g start now, if
// there is one, and reports whether it did.
func (c *Core) tryPreempt(g *group, p *Preemption) bool {
	a := c.waitingAlloc(g)
	// Its own reservation is no obstacle, nor are those of groups of lower
	// priority (the queue plans them again after it): base.
	cands, older, base := c.victims(g, p)
	// Tried again after a while, or as soon as a group comes of age.
	g.preemptNext = c.now + c.seconds(preemptRetry)
	if older >= 0 {
		g.preemptNext = min(g.preemptNext, older)
	}
	if len(cands) == 0 {
		g.preemptNote = "no running group of lower priority may be evicted"
		if older >= 0 {
			g.preemptNote = fmt.Sprintf("the running groups of lower priority have not run the %d s a group runs before it may be preempted; the first will have at %s",
				p.MinRuntime, c.cfg.FormatTime(older))
		}
		return false
	}
	r, err := c.m.FitsWithout(a.js, probeJob, c.now, base)
	c.fail("preempt", g.id.Key, err)
	if err == nil && r.Status == match.Allocated {
		// Only reservations the queue plans after it stand in its way:
		// nothing to evict.
		g.preemptNote = "it fits now without evicting anyone"
		return false
	}
	doms := c.preemptDomains(g, a)
	s := &search{cap: searchCap}
	if c.preemptPods(g, s, a, doms, cands, base, p) {
		return true
	}
	best, second := c.cheapestGroups(g, s, a, doms, cands, base)
	switch {
	case !best.ok:
		g.preemptNote = fmt.Sprintf("even with all %d running groups of lower priority it may evict gone, it would not fit now", len(cands))
		if len(doms) > 1 || doms[0].name != "" {
			g.preemptNote += fmt.Sprintf(" in any of the %d domains of %s", len(doms), g.id.TopologyKey)
		}
		return false
	}
	g.preemptNote = ""
	for _, d := range doms {
		if d.name == best.domain {
			c.movers(best.set, d)
		}
	}
	c.evict(g, best.set, p, c.choiceNote(s, best, second))
	return true
}

// cheapestGroups is the cheapest set of whole groups that makes room for
// g in one of its domains, and the dearer one it beat (cheapestRoom).
func (c *Core) cheapestGroups(g *group, s *search, a *alloc, doms []preemptDomain, cands []victim, base []int64) (best, second found[victim]) {
	fits := func(js *jobspec.Jobspec, chosen []victim) bool {
		without := slices.Clone(base)
		for _, v := range chosen {
			without = append(without, v.ids...)
		}
		r, err := c.m.FitsWithout(js, probeJob, c.now, without)
		c.fail("preempt", g.id.Key, err)
		return err == nil && r.Status == match.Allocated
	}
	in := func(v victim, d preemptDomain) bool {
		for _, h := range v.held {
			if d.nodes[h.node] {
				// One of the preemptor's own priority goes only if it
				// can move.
				return !v.mustMove || c.fitsElsewhere(v, d)
			}
		}
		return false
	}
	if c.onePodRoom(g, a) {
		return nodeRoom(c, &c.scratch.victimNodes, s, a, cands, victimHeld, fits)
	}
	return cheapestRoom(s, doms, cands, in, fits)
}

// victimHeld is what a victim holds on each of its nodes.
func victimHeld(v *victim) []nodeHeld { return v.held }

// choiceNote says where a preemption takes room and what it chose over:
// "within example.com/rack=r2, rather than ns/b (priority 10, 1 pods, 3 h
// run, no checkpoint) within example.com/rack=r1".
func (c *Core) choiceNote(s *search, best, second found[victim]) string {
	// A one-pod preemptor's room is on a node (preempt_nodes.go).
	where := func(domain string) string {
		if node, ok := strings.CutPrefix(domain, "node "); ok {
			return "on node " + node
		}
		return "within " + domain
	}
	var parts []string
	if best.domain != "" {
		parts = append(parts, where(best.domain))
	}
	if second.ok {
		alt := "rather than " + c.victimsNote(second.set)
		if second.domain != "" {
			alt += " " + where(second.domain)
		}
		parts = append(parts, alt)
	}
	if s.greedy {
		parts = append(parts, fmt.Sprintf("chosen greedily past the search's %d matcher probes", s.cap))
	}
	return strings.Join(parts, ", ")
}

// preemptedByPrefix begins the message of every eviction fluence's
// preemption makes, which becomes the evicted pod's DisruptionTarget
// condition: preemptorOf reads the preemptor back from it.
const preemptedByPrefix = "preempted by pod group "

// singleNote marks the message of a pod evicted alone (disruptionMode
// single).
const singleNote = "disruptionMode single"

// preemptorOf returns the preemptor an eviction message of fluence's
// names, and whether it evicted the pod alone; "" for another message.
func preemptorOf(note string) (by string, single bool) {
	rest, ok := strings.CutPrefix(note, preemptedByPrefix)
	if !ok {
		return "", false
	}
	by, _, ok = strings.Cut(rest, " (priority ")
	if !ok || by == "" || strings.ContainsAny(by, " \t\n") {
		return "", false
	}
	return by, strings.Contains(rest, singleNote)
}

// evict carries out a preemption: the victims' pods are evicted, their
// planned end brought to the hold's, and the preemptor holds their nodes
// until then.
func (c *Core) evict(g *group, chosen []victim, p *Preemption, choice string) {
	until := c.now + c.seconds(holdTimeout(p))
	hold := &preemptHold{until: until, choice: choice}
	var named []string
	for _, v := range chosen {
		vg := v.g
		vg.evictedBy = g.id.Key
		c.evicting[vg.id.Key] = true
		hold.victims = append(hold.victims, vg.id.Key)
		named = append(named, c.victimNote(v))
		msg := fmt.Sprintf(preemptedByPrefix+"%s (priority %d), which needs its nodes to start; pod group %s (priority %d) is evicted whole",
			g.id.Key, g.priority, vg.id.Key, vg.priority)
		if v.moving {
			msg += "; " + c.noteMove(v)
			named[len(named)-1] += " (moved)"
		}
		for _, a := range vg.allocs {
			if !a.running || c.unplaced[a.id] {
				continue
			}
			if end := until - a.start; a.dur == 0 || a.dur > end {
				c.markQueue()
				if err := c.q.Extend(a.id, max(end, 1)); err == nil {
					a.dur = max(end, 1)
				} else {
					c.fail("preempt", vg.id.Key, err)
				}
				c.planned(vg, a)
			}
			for _, s := range a.slots {
				if s.done || s.pod == "" {
					continue
				}
				if m := vg.members[s.pod]; m != nil {
					c.fx.out.Evictions = append(c.fx.out.Evictions, Eviction{Pod: m.ref(), Group: vg.id.Key, By: g.id.Key, Message: msg, Moved: v.moving})
				}
			}
		}
		c.explain(vg, true, "FluencePreempted", "pod group "+vg.id.Key+" "+msg)
		c.condition(vg, Disrupted, msg)
		c.touch(vg)
	}
	g.preempt = hold
	c.preempting[g.id.Key] = true
	note := fmt.Sprintf("pod group %s (priority %d) evicts %s to start now", g.id.Key, g.priority, strings.Join(named, ", "))
	if choice != "" {
		note += " " + choice
	}
	c.explain(g, false, "FluencePreempting", fmt.Sprintf("%s; it holds their nodes until %s", note, c.cfg.FormatTime(until)))
	c.touch(g)
	c.markQueue()
	c.q.Freed()
}

// evictRest evicts the rest of a running group one of whose members
// another scheduler's preemption is taking, pod by pod: a gang that lost
// one member to make room holds its other nodes for nothing, so it goes
// whole, and its pods are placed whole again once none of them runs.
func (c *Core) evictRest(g *group, taken *Pod) {
	by := "the preemption of its member " + taken.String()
	g.evictedBy = by
	c.evicting[g.id.Key] = true
	msg := fmt.Sprintf("its member %s is being preempted by a scheduler other than fluence (DisruptionTarget: PreemptionByScheduler); pod group %s is evicted whole rather than left holding its other nodes", taken, g.id.Key)
	for _, a := range g.allocs {
		if !a.running {
			continue
		}
		for _, s := range a.slots {
			if s.done || s.pod == "" || s.pod == taken.UID {
				continue
			}
			if m := g.members[s.pod]; m != nil && !m.Preempted {
				c.fx.out.Evictions = append(c.fx.out.Evictions, Eviction{Pod: m.ref(), Group: g.id.Key, By: by, Message: msg})
			}
		}
	}
	c.explain(g, true, "FluencePreempted", "pod group "+g.id.Key+": "+msg)
	c.condition(g, Disrupted, msg)
	c.touch(g)
}
