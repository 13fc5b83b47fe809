package gang

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/match"
)

// Moving. A group all of whose running pods say they may be moved
// (Pod.Movable, the movable annotation, for restartable jobs) may be
// evicted to let in a group that must be within one domain, when it
// fits elsewhere now, outside that domain, in room free at that moment:
// its pods go as any victim's do, and when its controller makes them
// again the group is placed first, ahead of every group of its priority
// queued before it. A movable group of the preemptor's own priority is a
// candidate only so, for a preemptor bound to a domain, and only in the
// domains it could leave; one of lower priority is a candidate anyway,
// and is placed first again when it fits elsewhere. Either costs what it
// loses, as any victim does (preempt_cost.go): a move restarts its work.
//
// Never a loop: a group moved is not moved again for
// Preemption.MoveEvery (an hour unless configured), even with new pods.
// Each moved group is checked alone against the room free now; two moved
// by one preemption might want the same room, and the second then waits
// in line, first among its priority.

// move is a group moved to make room: when, and the place in line its
// next request takes, until it took it.
type move struct {
	at, line int64
	lined    bool
}

// moveEvery is Preemption.MoveEvery in ticks, an hour when unset.
func (c *Core) moveEvery(p *Preemption) int64 {
	if p.MoveEvery <= 0 {
		return c.seconds(3600)
	}
	return c.seconds(p.MoveEvery)
}

// forgetMoves forgets the moves older than MoveEvery: those groups may be
// moved again.
func (c *Core) forgetMoves(p *Preemption) {
	for _, key := range slices.Sorted(maps.Keys(c.moves)) {
		if c.now-c.moves[key].at >= c.moveEvery(p) {
			delete(c.moves, key)
		}
	}
}

// movable reports whether a running group may be moved now: every pod of
// its one running allocation says so, and it was not moved lately.
func (c *Core) movable(v *group) bool {
	if c.moves[v.id.Key] != nil {
		return false
	}
	running := 0
	for _, a := range v.allocs {
		if !a.running || c.unplaced[a.id] {
			continue
		}
		running++
		for _, s := range a.slots {
			if s.done {
				continue
			}
			if m := v.members[s.pod]; m == nil || !m.Movable {
				return false
			}
		}
	}
	return running == 1
}

// fitsElsewhere reports whether the victim's group would fit now outside
// the domain, in room free now.
func (c *Core) fitsElsewhere(v victim, d preemptDomain) bool {
	key, value, ok := strings.Cut(d.name, "=")
	if !ok {
		return false
	}
	var js *jobspec.Jobspec
	for _, a := range v.g.allocs {
		if a.running && slices.Contains(v.ids, a.id) {
			js = a.js
		}
	}
	if js == nil {
		return false
	}
	out := *js
	away := jobspec.Not(jobspec.Properties(key + "=" + value))
	out.Constraint = away
	if js.Constraint != nil {
		out.Constraint = jobspec.And(js.Constraint, away)
	}
	r, err := c.m.Fits(&out, probeJob, c.now)
	c.fail("preempt", v.g.id.Key, err)
	return err == nil && r.Status == match.Allocated
}

// moveLine is a place in line ahead of every request queued now.
func (c *Core) moveLine() int64 {
	line := c.now
	for _, key := range slices.Sorted(maps.Keys(c.groups)) {
		for _, a := range c.groups[key].allocs {
			if !a.running {
				line = min(line, a.submit)
			}
		}
	}
	return line - 1
}

// movers marks the victims chosen to be moved out of the domain, and
// returns them.
func (c *Core) movers(set []victim, d preemptDomain) []victim {
	var out []victim
	for i, v := range set {
		if v.mustMove || (v.movable && c.fitsElsewhere(v, d)) {
			set[i].moving = true
			out = append(out, set[i])
		}
	}
	return out
}

// recallMove takes up, after a restart, the move an adopted pod's group
// made (the moved-at annotation of its pods): the group is not moved
// again before MoveEvery has passed since, and it has had its place in
// line. A move older than MoveEvery is forgotten by forgetMoves.
func (c *Core) recallMove(g *group, p *Pod) {
	if !p.HasMovedAt {
		return
	}
	if mv := c.moves[g.id.Key]; mv == nil || mv.at < p.MovedAt {
		c.moves[g.id.Key] = &move{at: p.MovedAt, lined: true}
	}
}

// MovedAt returns when the pod's group was last moved to make room, to
// write on the pod at binding (the moved-at annotation): false for a
// group not moved within MoveEvery.
func (c *Core) MovedAt(uid string) (int64, bool) {
	key, ok := c.podKey[uid]
	if !ok {
		return 0, false
	}
	if mv := c.moves[key]; mv != nil {
		return mv.at, true
	}
	return 0, false
}

// noteMove records the move of a victim, for its next request's place
// in line, and says so.
func (c *Core) noteMove(v victim) string {
	c.moves[v.g.id.Key] = &move{at: c.now, line: c.moveLine()}
	return fmt.Sprintf("pod group %s (priority %d) is movable and fits elsewhere now: it is placed again first once its pods are made again", v.g.id.Key, v.g.priority)
}
