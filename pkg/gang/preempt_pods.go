package gang

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/match"
)

// Single pods. A group whose disruptionMode is single (a Kubernetes
// PodGroup's spec.disruptionMode.single) says its pods may be disrupted
// one by one. A preemptor first tries to make room from such pods alone:
// if evicting some of them frees enough, only those go, and their groups
// run on without them; otherwise it evicts whole groups, those included.
//
// The unit is a group's pods on one node, not one pod: the engine holds
// what a group takes on a node together, and asking it what a single pod
// would free where two share a node would be a guess. Units are chosen
// as groups are (preempt_search.go), each costing its priority and the
// work its pods lose. A group losing pods takes no node back for the
// pods replacing them until the preemptor's hold ends; the slots of the
// evicted pods are not kept, and once a pod is gone the engine is rebuilt
// without it, which frees its share of the node.

// podUnit is a group's pods on one node that a preemptor may evict.
type podUnit struct {
	v     victim
	alloc int64
	node  string
	slots []*slot
	lost  int64 // what evicting them loses: the ticks since their work began (workSince)
	// held is what they hold there (preempt_nodes.go).
	held [1]nodeHeld
}

// preemptPods evicts the cheapest set of single pods that lets g start
// now, if there is one, and reports whether it did.
func (c *Core) preemptPods(g *group, s *search, a *alloc, doms []preemptDomain, cands []victim, base []int64, p *Preemption) bool {
	units := c.podUnits(cands)
	if len(units) == 0 {
		return false
	}
	fits := func(js *jobspec.Jobspec, chosen []podUnit) bool {
		without := make([]match.Without, 0, len(base)+len(chosen))
		for _, id := range base {
			without = append(without, match.Without{ID: id})
		}
		for _, u := range chosen {
			without = append(without, match.Without{ID: u.alloc, Vertices: []int32{c.vertexOf[u.node]}})
		}
		r, err := c.m.FitsWithoutParts(js, probeJob, c.now, without)
		c.fail("preempt", g.id.Key, err)
		return err == nil && r.Status == match.Allocated
	}
	in := func(u podUnit, d preemptDomain) bool { return d.nodes[u.node] && !u.v.mustMove }
	var best found[podUnit]
	if c.onePodRoom(g, a) {
		best, _ = nodeRoom(c, &c.scratch.unitNodes, s, a, units, func(u *podUnit) []nodeHeld { return u.held[:] }, fits)
	} else {
		best, _ = cheapestRoom(s, doms, units, in, fits)
	}
	if !best.ok {
		return false
	}
	g.preemptNote = ""
	c.evictPods(g, best.set, p)
	return true
}

// podUnits splits the single-mode victims into their pods on each node.
// The list, and each unit's slots, are the core's scratch
// (preempt_scratch.go): valid until the next call.
func (c *Core) podUnits(cands []victim) []podUnit {
	out, at := c.scratch.units[:0], c.scratch.unitAt
	if at == nil {
		at = map[string]int{}
	}
	for _, v := range cands {
		if !v.g.id.DisruptionSingle {
			continue
		}
		k := 0
		for _, a := range v.g.allocs {
			if !slices.Contains(v.ids, a.id) {
				continue
			}
			clear(at)
			for _, s := range a.slots {
				if s.done {
					continue
				}
				// The record lists every slot not done, in this order: when
				// its work began (workSince), read once per group.
				since := v.since[k]
				k++
				if s.pod == "" || s.evicting {
					continue
				}
				if _, ok := c.vertexOf[s.node]; !ok {
					continue
				}
				i, ok := at[s.node]
				if !ok {
					i = len(out)
					at[s.node] = i
					var slots []*slot // the last call's unit here lends its array
					if i < cap(out) {
						slots = out[:i+1][i].slots[:0]
					}
					out = append(out, podUnit{v: v, alloc: a.id, node: s.node, held: [1]nodeHeld{{node: s.node}}, slots: slots})
				}
				out[i].slots = append(out[i].slots, s)
				out[i].held[0].amt = out[i].held[0].amt.plus(shapeAmounts(s.shape))
				out[i].lost += max(c.now-since, 0)
			}
		}
	}
	// Past the new length, units would keep groups alive; their slot
	// arrays are dropped with them.
	clear(out[len(out):cap(out)])
	c.scratch.units, c.scratch.unitAt = out, at
	return out
}

// evictPods carries out a preemption of single pods: they are evicted,
// their slots will not be kept, and their groups yield to g until its
// hold ends.
func (c *Core) evictPods(g *group, chosen []podUnit, p *Preemption) {
	until := c.now + c.seconds(holdTimeout(p))
	hold := &preemptHold{until: until}
	var named []string
	for _, u := range chosen {
		vg := u.v.g
		var pods []string
		msg := fmt.Sprintf(preemptedByPrefix+"%s (priority %d), which needs node %s to start; pod group %s (priority %d, "+singleNote+") loses its pods there and runs on without them",
			g.id.Key, g.priority, u.node, vg.id.Key, vg.priority)
		for _, s := range u.slots {
			s.evicting = true
			m := vg.members[s.pod]
			if m == nil {
				continue
			}
			pods = append(pods, m.String())
			c.fx.out.Evictions = append(c.fx.out.Evictions, Eviction{Pod: m.ref(), Group: vg.id.Key, By: g.id.Key, Message: msg})
			// Told on the pods that go, not the group's others, which run on.
			c.fx.out.Events = append(c.fx.out.Events, Event{Pod: m.ref(), Warning: true, Reason: "FluencePreempted", Note: "pod " + m.String() + " " + msg})
		}
		name := fmt.Sprintf("%s (priority %d, its pods on %s: %s)", vg.id.Key, vg.priority, u.node, strings.Join(pods, ", "))
		named = append(named, name)
		hold.victims = append(hold.victims, name)
		if !slices.Contains(hold.yielding, vg.id.Key) {
			hold.yielding = append(hold.yielding, vg.id.Key)
		}
		vg.yieldTo = g.id.Key
		c.touch(vg)
	}
	g.preempt = hold
	c.preempting[g.id.Key] = true
	c.explain(g, false, "FluencePreempting", fmt.Sprintf("pod group %s (priority %d) evicts single pods of %s to start now; their nodes are held for it until %s",
		g.id.Key, g.priority, strings.Join(named, "; "), c.cfg.FormatTime(until)))
	c.touch(g)
}

// stopYielding lets groups that lost single pods to a preemptor take
// nodes again, its hold over.
func (c *Core) stopYielding(keys []string) {
	for _, key := range keys {
		if vg := c.groups[key]; vg != nil {
			vg.yieldTo = ""
			c.touch(vg)
		}
	}
}
