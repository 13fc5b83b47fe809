package gang

import (
	"fmt"
	"slices"
	"strings"
)

// PodSeen records a pod added or changed: bound pods consume resources,
// whoever bound them; ended pods release them. It is the informer's view;
// Place is the scheduling cycle's.
func (c *Core) PodSeen(p Pod, now int64) {
	c.advance(now)
	defer c.claimsLeft(c.useClaims(&p))
	if p.Gated && p.Owned && !p.Done && !p.Deleting && p.NodeName == "" {
		c.setGated(p.UID, p.Labeled.Key)
	} else {
		c.setGated(p.UID, "")
	}
	if p.Done {
		c.podEnded(&p)
		return
	}
	if p.NodeName == "" && !p.Owned {
		c.nominated(&p)
		return
	}
	if p.NodeName == "" {
		key, known := c.podKey[p.UID]
		switch {
		case !known && p.Owned && !p.Deleting && !p.Gated && p.Labeled.Key != "":
			// Count the pods of labelled groups as they are created, so
			// the first of them to be scheduled finds the group whole.
			if g := c.groups[p.Labeled.Key]; g == nil || g.id.Size == p.Labeled.Size && g.id.Roles == p.Labeled.Roles {
				c.addMember(&p, p.Labeled, false)
			}
		case known && p.Deleting:
			c.podGone(p.UID)
		case known:
			if g := c.groups[key]; g != nil {
				if _, member := g.members[p.UID]; member {
					c.setMember(g, &p)
				}
			}
		}
		return
	}
	if key, ok := c.podKey[p.UID]; ok {
		if g := c.groups[key]; g != nil {
			if a, s := g.slotOf(p.UID); s != nil && s.node == p.NodeName {
				s.bound, s.reserved = true, true
				c.heldAsPlaced(a, s, &p)
				g.members[p.UID] = &p
				c.touch(g)
				c.letThrough(g, a)
				switch {
				case !p.Preempted || g.evictedBy != "":
				case g.id.DisruptionSingle:
					// Its pods may go one by one: the rest runs on, and the
					// node goes to the preemptor, not to a replacement.
					s.evicting = true
				default:
					c.evictRest(g, &p)
				}
				return
			}
			// A member bound without this scheduler's say: by hand, by
			// another scheduler, or by this scheduler's previous run (a
			// binding sent just before a restart lands late). It leaves
			// what it held here and counts where it is: adopted from its
			// record, or foreign.
			c.touch(g)
			c.leaveAllocs(g, &p)
			delete(g.members, p.UID)
			delete(c.podKey, p.UID)
		}
	}
	if p.Owned && p.Allocation != "" {
		c.adopt(&p)
		return
	}
	c.addForeign(&p)
}

// letThrough commits an allocation whose pods are all bound or waiting
// at Permit, and lets the waiting ones bind: a pod bound by the previous
// run (a binding that landed after a restart) completes its group without
// the others waiting out their Permit timeout.
func (c *Core) letThrough(g *group, a *alloc) {
	if a.committed {
		return
	}
	var waiting []Ref
	for _, s := range a.slots {
		if s.pod == "" || s.done || s.bound {
			continue
		}
		if !s.reserved {
			return
		}
		if p := g.members[s.pod]; p != nil {
			waiting = append(waiting, p.ref())
		}
	}
	c.commit(g, a)
	c.fx.out.Allow = append(c.fx.out.Allow, waiting...)
}

// PodRemoved handles a deleted pod.
func (c *Core) PodRemoved(uid string, now int64) {
	c.advance(now)
	defer c.claimsLeft(c.useClaims(&Pod{UID: uid, Done: true}))
	c.forgetFinished(uid)
	c.podGone(uid)
}

// addMember records a pod as a member of its group. A pod that was a
// member of another group (its group labels changed while it waited)
// leaves that one first, as if it had gone.
//
// resolved says id was resolved from everything that defines the group
// (a scheduling cycle's): its policy (priority, topology) is the
// group's. A pod only counted from its labels says nothing of it.
func (c *Core) addMember(p *Pod, id GroupID, resolved bool) *group {
	if key, ok := c.podKey[p.UID]; ok && key != id.Key {
		c.podGone(p.UID)
	}
	g := c.groups[id.Key]
	if g == nil {
		g = newGroup(id, c.now)
		c.groups[id.Key] = g
	}
	c.touch(g)
	if g.id.Source == SourceRecord && id.Source != SourceRecord {
		g.id = id // adopted after a restart; now its pods say what it is
	}
	if resolved {
		c.takePolicy(g, id)
	}
	if id.Unsupported != "" && g.unsupportedSaid != id.Unsupported {
		g.unsupportedSaid = id.Unsupported
		c.fx.out.Events = append(c.fx.out.Events, Event{Pod: p.ref(), Warning: true, Reason: "FluenceUnsupported",
			Note: fmt.Sprintf("pod group %s asks for %s, which fluence does not place yet: the group is placed without it", id.Key, id.Unsupported)})
	}
	if _, known := g.members[p.UID]; !known && g.state == rejected && g.early {
		g.state, g.reason, g.early = gathering, "", false
	}
	c.setMember(g, p)
	c.podKey[p.UID] = id.Key
	return g
}

// takePolicy takes what a group's definition asks besides its size. The
// group object's priority may change while the group waits; the next
// submission orders it by the newest. A changed topology constraint has
// the group planned again, and so do changed minimum resources before the
// group starts (they are judged before a request is built: a rejected
// group may fit now, a waiting one may no longer); once it started they
// have no say. The rest of its policy is kept as last read.
func (c *Core) takePolicy(g *group, id GroupID) {
	g.id.Priority, g.id.HasPriority = id.Priority, id.HasPriority
	g.id.PreemptionPolicy, g.id.DisruptionSingle = id.PreemptionPolicy, id.DisruptionSingle
	g.id.PermitTimeout = id.PermitTimeout
	if g.id.MinResources != id.MinResources {
		g.id.MinResources, g.checked = id.MinResources, 0 // judged afresh from its first pods too
		if !g.underway() {
			c.replan(g, "its minimum resources changed")
		}
	}
	if id.Roles != "" && id.TopologyKey == "" && id.TopologyPreferred == "" {
		// A role that asks for no domain goes in the one another role
		// asks for: its pods (a launcher without the workers' annotation)
		// would otherwise undo that ask at every cycle, and the group
		// would be planned again and again.
		return
	}
	if g.id.TopologyKey != id.TopologyKey || g.id.TopologyPreferred != id.TopologyPreferred {
		g.id.TopologyKey, g.id.TopologyPreferred = id.TopologyKey, id.TopologyPreferred
		c.replan(g, "its topology constraint changed")
	}
}

// setMember records a pod of the group as it is now. A rejected group is
// judged again, and its pods woken, when one of its pods asks for
// something else than before (its malformed requirement fixed, its
// requests changed), as when the nodes change: the scheduling queue does
// not retry a rejected pod for its own update.
func (c *Core) setMember(g *group, p *Pod) {
	c.touch(g)
	old := g.members[p.UID]
	g.members[p.UID] = p
	switch {
	case old != nil && g.state == rejected && asksOtherwise(old, p):
		c.judgeAgain(g)
	case old != nil && old.waits() && !p.waits():
		// What it waited for came: its group, waiting for it, asks now.
		c.wakeUnbound(g)
	}
}

// asksOtherwise reports whether two views of a pod differ in what the
// group's request is built from.
func asksOtherwise(a, b *Pod) bool {
	return a.Invalid != b.Invalid || a.Requests != b.Requests || a.Duration != b.Duration || a.Apart != b.Apart || filterKey(a) != filterKey(b)
}

func (c *Core) addForeign(p *Pod) {
	node := p.NodeName
	if old, ok := c.foreign[node][p.UID]; ok && old == p.Requests {
		return
	}
	if old, ok := c.foreignNode[p.UID]; ok && old != node {
		c.memberGone(p.UID, ending{}) // nominated there, bound here
	}
	if c.foreign[node] == nil {
		c.foreign[node] = map[string]Resources{}
	}
	c.foreign[node][p.UID] = p.Requests
	c.markNode(node, false)
	c.foreignAt()[p.UID] = node
	if !c.dirty && c.m != nil {
		c.placeForeign(node)
		c.withdrawOverloaded(node)
	}
}

// nominated counts another scheduler's unbound pod on the node its
// preemption nominated it for, or stops counting it once the nomination
// is gone (the pod is deleted, or its scheduler gave the node up).
func (c *Core) nominated(p *Pod) {
	if p.Nominated != "" && !p.Deleting {
		at := *p
		at.NodeName = p.Nominated
		c.addForeign(&at)
		return
	}
	if _, ok := c.foreignNode[p.UID]; ok {
		c.memberGone(p.UID, ending{})
	}
}

// foreignAt indexes foreign pods by UID to their node.
func (c *Core) foreignAt() map[string]string {
	if c.foreignNode == nil {
		c.foreignNode = map[string]string{}
	}
	return c.foreignNode
}

// leaveAllocs takes a pod bound elsewhere out of its group's allocations.
// A queued request counting it is dropped (the group asks again without
// it). Its slot is withdrawn with the whole allocation while that may be;
// otherwise the slot stays held, marked done, until the allocation ends,
// since its node's share was planned with it.
func (c *Core) leaveAllocs(g *group, p *Pod) {
	c.detach(g, p.UID, func(a *alloc, s *slot) {
		s.pod = ""
		if !a.withdrawable() {
			s.done = true
			return
		}
		c.withdraw(g, a, fmt.Sprintf("pod %s was bound to %s, not to %s where the group was placed", p, p.NodeName, s.node))
	})
}

// adopt takes back a pod this scheduler bound before a restart: bound pods
// with the same record form one allocation, replayed at their nodes by
// the next rebuild.
func (c *Core) adopt(p *Pod) {
	rec := p.Allocation
	key := rec
	if i := strings.LastIndexByte(rec, '@'); i > 0 {
		key = rec[:i]
	}
	g := c.groups[key]
	if g == nil {
		ns, name, _ := strings.Cut(key, "/")
		g = newGroup(GroupID{Namespace: ns, Name: name, Key: key, Source: SourceRecord}, c.now)
		c.groups[key] = g
	}
	c.touch(g)
	var a *alloc
	for _, x := range g.allocs {
		if x.recorded == rec {
			a = x
		}
	}
	dur := p.Duration
	if dur == 0 {
		dur = c.cfg.DefaultDuration
	}
	// It began when its first pod started, maybe before this run: its
	// planned end is its duration from then (an overrun is extended as
	// any), and evicting it would lose the work done since.
	began := c.now - max(p.Ran, 0)
	if a == nil {
		a = &alloc{id: c.newID(), running: true, committed: true, recorded: rec, start: c.now, began: began}
		g.allocs = append(g.allocs, a)
		c.byAlloc[a.id] = g
		c.setUnplaced(a.id) // the engine takes it when the next rebuild replays it
	}
	a.began = min(a.began, began)
	a.dur = max(c.seconds(dur)-(c.now-a.began), 1)
	g.since = min(g.since, max(a.began, 0)) // it waited no less than nothing
	s := &slot{shape: c.shapeOf(p, 0), role: p.Role, node: p.NodeName, pod: p.UID, name: p.String(), reserved: true, bound: true}
	a.slots = append(a.slots, s)
	g.members[p.UID] = p
	c.podKey[p.UID] = key
	c.dirty = true
	// Its priority is its pods' (a group's is set when it is submitted,
	// which an adopted group never is): without it, any preemptor would
	// find it of priority 0 after a restart.
	g.priority = max(g.priority, p.Priority)
	c.carryEviction(g, a, s, p)
	c.recallMove(g, p)
	c.planned(g, a)
}

// carryEviction takes up, after a restart, the preemption by fluence that
// is evicting an adopted pod (its DisruptionTarget condition names the
// preemptor): its group is being evicted for that preemptor, which waits
// for it rather than choosing victims again, and its planned end is the
// hold's, as when the preemption was decided, so nothing of lower
// priority takes its nodes first. A pod evicted alone (disruptionMode
// single) is marked so; its group runs on.
func (c *Core) carryEviction(g *group, a *alloc, s *slot, p *Pod) {
	if !p.Preempted {
		return
	}
	by, single := preemptorOf(p.PreemptedNote)
	if by == "" {
		return
	}
	if single {
		s.evicting = true
		return
	}
	if g.evictedBy == "" {
		g.evictedBy = by
		c.evicting[g.id.Key] = true
		c.touch(g)
	}
	if c.cfg.Preemption != nil {
		if until := c.now + c.seconds(holdTimeout(c.cfg.Preemption)); a.start+a.dur > until {
			a.dur = max(until-a.start, 1)
		}
	}
}

// podGone releases what an ended or deleted pod held. A group's
// allocation is released when every pod holding it ended, never at the
// first; a pod that goes away before its allocation was let through
// withdraws the whole allocation.
func (c *Core) podGone(uid string) { c.memberGone(uid, ending{}) }

// memberGone is podGone for a pod that ended as end says.
func (c *Core) memberGone(uid string, end ending) {
	c.setGated(uid, "")
	c.gatherGone(uid)
	if node, ok := c.foreignNode[uid]; ok {
		delete(c.foreignNode, uid)
		delete(c.foreign[node], uid)
		c.markNode(node, false)
		if !c.dirty && c.m != nil {
			c.placeForeign(node)
			c.markQueue()
			c.q.Freed()
		}
		return
	}
	key, ok := c.podKey[uid]
	if !ok {
		return
	}
	delete(c.podKey, uid)
	g := c.groups[key]
	if g == nil {
		return
	}
	c.touch(g)
	p := g.members[uid]
	delete(g.members, uid)
	delete(g.avoid, uid)
	if g.state == invalid || g.state == rejected {
		g.state, g.reason, g.lastEvent, g.checked = gathering, "", "", 0
		for _, m := range g.sortedMembers() {
			if m.NodeName == "" {
				c.fx.activatePod(m.ref())
			}
		}
	}
	name := uid
	if p != nil {
		name = p.String()
	}
	c.detach(g, uid, func(a *alloc, s *slot) {
		switch {
		case s.bound:
			c.lose(g, a, s, name, end)
		case a.withdrawable():
			s.pod = "" // gone: nothing to turn away at Permit
			c.withdraw(g, a, fmt.Sprintf("pod %s went away before its group was bound", name))
		default:
			s.pod = "" // vacant: a replacement pod of the same shape takes it
		}
	})
	// A slot just left vacant goes at once to a replacement already seen.
	c.fillVacancies(g)
	c.forgetIfOver(g)
}

// withdraw cancels an allocation that may still be cancelled whole: the
// group is placed whole or not at all. Pods waiting at Permit are turned
// away with the group's own message; every pod of the group tries again.
func (c *Core) withdraw(g *group, a *alloc, why string) {
	c.touch(g)
	c.fx.out.Withdrawn = append(c.fx.out.Withdrawn, g.id.Key)
	c.dequeue("withdraw", g.id.Key, a.id)
	msg := "fluence: allocation of pod group " + g.id.Key + " withdrawn: " + why
	var joining []*Pod
	for _, s := range a.slots {
		if s.pod == "" {
			continue
		}
		p := g.members[s.pod]
		if p == nil {
			continue
		}
		if s.reserved {
			c.fx.out.Reject = append(c.fx.out.Reject, Rejection{Pod: p.ref(), Message: msg})
		}
		c.fx.activatePod(p.ref())
		joining = append(joining, p)
	}
	c.dropAlloc(g, a)
	if g.underway() {
		// The placement of pods joining a running group: the group runs
		// on, and only they are told.
		for _, p := range joining {
			c.fx.out.Events = append(c.fx.out.Events, Event{Pod: p.ref(), Warning: true, Reason: "FluenceGroupWithdrawn",
				Note: fmt.Sprintf("pod group %s: the placement of pod %s, joining it, was withdrawn; the pod is placed again: %s", g.id.Key, p, why)})
		}
		return
	}
	c.explain(g, true, "FluenceGroupWithdrawn", fmt.Sprintf("pod group %s: allocation withdrawn, the group is placed again: %s", g.id.Key, why))
}

func (c *Core) dropAlloc(g *group, a *alloc) {
	c.touch(g)
	g.allocs = slices.DeleteFunc(g.allocs, func(x *alloc) bool { return x == a })
	delete(c.byAlloc, a.id)
	delete(c.unplaced, a.id)
}

// detach takes a pod out of its group's allocations. A queued request
// counting it is dropped (the group asks again without it); settle decides
// what becomes of each placed slot the pod held; an allocation left with
// nothing live is released.
func (c *Core) detach(g *group, uid string, settle func(a *alloc, s *slot)) {
	c.touch(g)
	for _, a := range slices.Clone(g.allocs) {
		if !a.running {
			if slices.Contains(a.pods, uid) {
				c.dequeue("detach", g.id.Key, a.id)
				c.dropAlloc(g, a)
			}
			continue
		}
		for _, s := range a.slots {
			if s.pod == uid {
				settle(a, s)
			}
		}
		if c.byAlloc[a.id] != nil && a.finished() {
			c.dequeue("release", g.id.Key, a.id)
			c.dropAlloc(g, a)
		}
	}
}

// setGated records that a pod waits for its scheduling gates in the
// labelled group key, or, with key "", that it does not.
func (c *Core) setGated(uid, key string) {
	old, was := c.gated[uid]
	if was && old == key {
		return
	}
	c.markKey(old)
	c.markKey(key)
	if was {
		if c.gatedCount[old]--; c.gatedCount[old] == 0 {
			delete(c.gatedCount, old)
		}
		delete(c.gated, uid)
	}
	if key != "" {
		c.gated[uid] = key
		c.gatedCount[key]++
	}
}

// gatedNote says how many more pods of a group wait for their gates.
func gatedNote(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return " (1 more waits for its scheduling gates)"
	}
	return fmt.Sprintf(" (%d more wait for their scheduling gates)", n)
}
