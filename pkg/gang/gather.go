package gang

import (
	"fmt"
	"maps"
	"slices"
)

// A pod of a labelled group that has fewer pods than its size can only be
// told, in a scheduling cycle, that its group waits for its pods. Such a
// cycle is not free for the scheduler around the core: it ends in a
// failure the framework records on the pod (a status patch, an event) and
// a back-off, and under load those writes hold up the cycles of pods that
// could be placed. So the caller asks the core before a pod enters the
// scheduling queue (kube-scheduler's PreEnqueue) and keeps out the pods
// the core holds; the core sends them to the queue (Effects.Activate)
// when the answer changes: the group has all its pods, is judged (rejected
// early, found invalid), starts, or a pod stops being its member.
//
// Only labelled groups are held: their pods carry the group's name and
// size, and the core counts them as the informer sees them (PodSeen). The
// members of other groups (a PodGroup's, a Job's) are learned in their
// cycles, so their pods must reach one.
//
// A held pod gets no scheduling failure, which is how users see a group
// wait; once the group has waited GatherNotice, its first pod gets a
// FluenceGroupWaiting event saying what it waits for.

// gatherWait is a labelled group whose pods the core holds out of the
// scheduling queue until it has them all.
type gatherWait struct {
	id    GroupID        // as the held pods' labels say
	pods  map[string]Ref // held pods by UID
	since int64          // when the first of them was held
	told  bool           // the notice went out
}

// Hold answers a pod's PreEnqueue: whether it stays out of the scheduling
// queue because its labelled group has fewer pods than its size, and why.
// The pod counts itself (the queue may see it before the informer feeds
// it to the core). A held pod is remembered and activated once the answer
// may differ. Hold makes no effect the caller must carry out at once: it
// runs under the scheduling queue's lock, and the next Ready takes them.
func (c *Core) Hold(p Pod, now int64) (bool, string) {
	c.advance(now)
	id := p.Labeled
	if id.Key == "" || !p.Owned || p.NodeName != "" || p.Done || p.Deleting || p.Gated {
		return false, ""
	}
	if key, member := c.podKey[p.UID]; member && key != id.Key {
		return false, "" // it is changing groups: its cycle sorts that out
	}
	have, short := c.quorumShort(id, p.UID, p.Role)
	if !short {
		return false, ""
	}
	w := c.gathering[id.Key]
	if w == nil {
		w = &gatherWait{id: id, pods: map[string]Ref{}, since: c.now}
		c.gathering[id.Key] = w
	}
	if old, ok := c.heldKey[p.UID]; ok && old != id.Key {
		c.dropHold(p.UID) // held again, under its new group
	}
	w.pods[p.UID] = p.ref()
	c.heldKey[p.UID] = id.Key
	if g := c.groups[id.Key]; g != nil {
		// The loop judges it early (it may never fit) while it gathers;
		// the touch also marks its status (Held) for publishing. Without a
		// group there is no status to mark.
		c.touch(g)
	}
	return true, c.gatherNote(id, have)
}

// quorumShort reports how many unbound pods a labelled group has, the pod
// uid counted whether the core saw it or not ("" for none), and whether
// that is short of the size the labels say with nothing else to decide:
// no allocation, nothing finished, not judged, no hold or eviction
// pending. Anything else is for a scheduling cycle to answer.
//
// A multi-role group is short while any role has fewer pods than its
// count, whatever the total: role is the role of the pod uid.
func (c *Core) quorumShort(id GroupID, uid, role string) (int, bool) {
	if id.Size <= 1 {
		return 0, false
	}
	g := c.groups[id.Key]
	if g == nil {
		if uid == "" {
			return 0, true
		}
		return 1, true
	}
	if g.id.Size != id.Size || g.id.Roles != id.Roles || g.state != gathering || len(g.allocs) > 0 || len(g.finished) > 0 ||
		g.everPlaced || g.evictedBy != "" || g.yieldTo != "" || c.now < g.holdUntil {
		return 0, false
	}
	have, byRole := 0, map[string]int{}
	for u, m := range g.members {
		if u != uid && m.NodeName == "" && !m.Deleting {
			have++
			byRole[m.Role]++
		}
	}
	if uid != "" {
		have++
		byRole[role]++
	}
	return have, have < int(id.Size) || roleShort(id, func(r string) int { return byRole[r] })
}

func (c *Core) gatherNote(id GroupID, have int) string {
	return fmt.Sprintf("waiting for the pods of group %s: %d of %d exist%s", id.Key, have, id.Size, gatedNote(c.gatedCount[id.Key]))
}

// releaseGathered activates the held pods of the groups touched since the
// last call that need hold them no more, and held pods that joined
// another group. It runs as the effects are taken, so the pod completing
// a group sends the group's pods to the queue in the same step.
func (c *Core) releaseGathered() {
	for _, key := range slices.Sorted(maps.Keys(c.gatherTouched)) {
		w := c.gathering[key]
		if w != nil {
			_, short := c.quorumShort(w.id, "", "")
			for _, uid := range slices.Sorted(maps.Keys(w.pods)) {
				if other, ok := c.podKey[uid]; !short || ok && other != key {
					c.gatherGone(uid)
				}
			}
			if len(w.pods) == 0 {
				delete(c.gathering, key)
			}
		}
		delete(c.gatherTouched, key) // judged now (gatherGone marks it again)
	}
}

// gatherGone releases a held pod that went away or left its group: a
// pod forgotten while the queue holds it would wait for nothing.
// Activating a deleted pod does nothing.
func (c *Core) gatherGone(uid string) {
	if r, ok := c.dropHold(uid); ok {
		c.fx.activatePod(r)
	}
}

// dropHold forgets a held pod: it is in a scheduling cycle, or gone.
func (c *Core) dropHold(uid string) (Ref, bool) {
	key, ok := c.heldKey[uid]
	if !ok {
		return Ref{}, false
	}
	delete(c.heldKey, uid)
	w := c.gathering[key]
	r := w.pods[uid]
	delete(w.pods, uid)
	c.gatherTouched[key] = true
	c.markKey(key)
	return r, true
}

// tickGathering runs in the loop: it tells the pods of a group that
// waited GatherNotice what they wait for, and judges again whether each
// held group still needs to hold (a hold after a refusal ends with time).
// Held groups are judged early (a group that can never fit is rejected
// before all its pods exist, and its pods released to hear why) with the
// other touched groups: Hold and every new pod touch them.
func (c *Core) tickGathering() {
	for _, key := range slices.Sorted(maps.Keys(c.gathering)) {
		w, g := c.gathering[key], c.groups[key]
		c.gatherTouched[key] = true
		if g == nil || w.told || c.now-w.since < c.seconds(c.cfg.GatherNotice) {
			continue // (no group: its pods have not reached the core yet)
		}
		w.told = true
		have, _ := c.quorumShort(w.id, "", "")
		c.explain(g, false, "FluenceGroupWaiting", fmt.Sprintf("pod group %s (%d pods) is waiting for its pods: %d of %d exist%s; they stay out of the scheduling queue until all of them exist",
			key, w.id.Size, have, w.id.Size, gatedNote(c.gatedCount[key])))
	}
	c.releaseGathered()
}

// checkGathering checks that the held pods and their groups index each
// other, and that a group whose pods need hold no more is due to be
// judged (releaseGathered): no pod is held for nothing.
func (c *Core) checkGathering(bad func(string, ...any)) {
	for _, uid := range slices.Sorted(maps.Keys(c.heldKey)) {
		key := c.heldKey[uid]
		if w := c.gathering[key]; w == nil {
			bad("held pod %s maps to group %s, which holds nothing", uid, key)
		} else if _, ok := w.pods[uid]; !ok {
			bad("held pod %s maps to group %s, which does not hold it", uid, key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(c.gathering)) {
		w := c.gathering[key]
		if w.id.Key != key {
			bad("held group %s is filed under key %s", w.id.Key, key)
		}
		for _, uid := range slices.Sorted(maps.Keys(w.pods)) {
			if c.heldKey[uid] != key {
				bad("group %s holds pod %s, which maps to %q", key, uid, c.heldKey[uid])
			}
		}
		if c.gatherTouched[key] {
			continue
		}
		if len(w.pods) == 0 {
			bad("group %s is recorded as holding pods but holds none", key)
		}
		if _, short := c.quorumShort(w.id, "", ""); !short {
			bad("group %s holds %d pods but is not short of its %d", key, len(w.pods), w.id.Size)
		}
	}
}
