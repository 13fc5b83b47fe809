package queue

import (
	"cmp"
	"slices"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/match"
)

// A group that could not start now fell short of something: the matcher
// says how much (match.Explain). Until that much may have been freed, its
// answer cannot change, and matching it again is wasted work: with a long
// queue, re-matching every waiting group after every completion was most
// of a loop's cost. The queue keeps a log of what was freed, node by node
// (completed and removed groups, reservation slots given up), and a group
// that fell short is matched again only once the log since its failure
// could cover the shortfall:
//
//   - short of a total (more of a resource than the cluster has free, the
//     matcher's root check): until that many units were freed;
//   - short of slots (a group of one pod shape: each node holds as many
//     of its slots as fit, so the count found is all there are): until the
//     slots the frees could add reach the count missing. On a node with
//     no reservation, where the queue knows what is free (it tracks what
//     its running groups hold), that is exact: the slots that fit after
//     the free less those that fit before. Elsewhere (a reservation's
//     share depends on the window, or a job the queue cannot weigh holds
//     the node) it is bounded: freeing R adds at most ceil(R/S) slots of
//     shape S in each resource S asks for, so at most the largest.
//
// Anything else that adds room (a node up, capacity added, pods placed
// outside the queue ended) clears every shortfall, as does anything the
// log cannot weigh (a group whose request is not plain slots). Node-
// exclusive match policies take a whole node for any job: freeing one pod
// frees the node, so no shortfall is kept under them.

// unit is an amount of one resource type.
type unit struct {
	typ string
	n   int64
}

// units is a list of amounts, one per type, in type order.
type units []unit

func byType(a, b unit) int { return cmp.Compare(a.typ, b.typ) }

// get returns the amount of typ (0 when absent).
func (us units) get(typ string) int64 {
	if i, ok := slices.BinarySearchFunc(us, unit{typ: typ}, byType); ok {
		return us[i].n
	}
	return 0
}

// add returns us plus sign x b.
func (us units) add(b units, sign int64) units {
	for _, u := range b {
		i, found := slices.BinarySearchFunc(us, u, byType)
		if found {
			us[i].n += sign * u.n
		} else {
			us = slices.Insert(us, i, unit{u.typ, sign * u.n})
		}
	}
	return us
}

// slotShape is what one slot holds.
type slotShape = units

// slotsOf reads a jobspec made only of slots of plain resources: slot
// label -> shape. ok is false for any other jobspec.
func slotsOf(js *jobspec.Jobspec) (map[string]slotShape, bool) {
	if js == nil || len(js.Resources) == 0 {
		return nil, false
	}
	shapes := map[string]slotShape{}
	for _, r := range js.Resources {
		if !r.IsSlot() || !r.Count.IsFixed() || len(r.With) == 0 {
			return nil, false
		}
		if _, dup := shapes[r.Label]; dup {
			return nil, false
		}
		var s slotShape
		for _, w := range r.With {
			if len(w.With) > 0 || !w.Count.IsFixed() || w.IsSlot() || w.Count.Min <= 0 {
				return nil, false
			}
			s = s.add(units{{w.Type, w.Count.Min}}, 1)
		}
		shapes[r.Label] = s
	}
	return shapes, true
}

// freedNode is what one event freed on one node.
type freedNode struct {
	node  int32
	freed units
	// exact: before is what was free there before the event (no
	// reservation on the node, every holder known).
	exact  bool
	before units
}

// shortfall is what a group fell short of at its last failed allocate.
type shortfall struct {
	// at is the log position at the failure; -1 when none is known.
	at int
	// slots missing of shape, when the group is one slot shape.
	slots int64
	shape slotShape
	// totals missing, by type.
	totals units
	// Progress through the log: events up to scanned are counted in gain
	// (slots they could add) and sums (units freed).
	scanned int
	gain    int64
	sums    units
}

// fits is how many slots of shape s the amounts hold.
func fits(free units, s slotShape) int64 {
	n := int64(-1)
	for _, su := range s {
		k := max(free.get(su.typ), 0) / su.n
		if n < 0 || k < n {
			n = k
		}
	}
	return max(n, 0)
}

// slotGain is how many slots of shape s an event adds on its node, at
// most.
func slotGain(fn freedNode, s slotShape) int64 {
	if fn.exact {
		// fits(before + freed) - fits(before), without building the sum:
		// every waiting group's check reads every logged event.
		after, before := int64(-1), int64(-1)
		for _, su := range s {
			b := fn.before.get(su.typ)
			a := max(b+fn.freed.get(su.typ), 0) / su.n
			b = max(b, 0) / su.n
			if after < 0 || a < after {
				after = a
			}
			if before < 0 || b < before {
				before = b
			}
		}
		return max(after, 0) - max(before, 0)
	}
	var g int64
	for _, su := range s {
		if r := fn.freed.get(su.typ); r > 0 {
			g = max(g, (r+su.n-1)/su.n)
		}
	}
	return g
}

// mayFit reports whether what was freed since e fell short could cover
// the shortfall; true when no shortfall is known.
func (q *Manager) mayFit(e *entry) bool {
	sf := &e.short
	if sf.at < 0 || sf.at < q.barrier {
		return true
	}
	for ; sf.scanned < len(q.log); sf.scanned++ {
		for _, fn := range q.log[sf.scanned] {
			if sf.slots > 0 {
				sf.gain += slotGain(fn, sf.shape)
			}
			if len(sf.totals) > 0 {
				sf.sums = sf.sums.add(fn.freed, 1)
			}
		}
	}
	if sf.slots > 0 && sf.gain >= sf.slots {
		return true
	}
	if len(sf.totals) > 0 && !slices.ContainsFunc(sf.totals, func(u unit) bool { return sf.sums.get(u.typ) < u.n }) {
		return true
	}
	return false
}

// noteShort records why a group could not start now, from the matcher's
// explanation, at the current log position.
func (q *Manager) noteShort(e *entry, ex *match.Explain) {
	e.short = q.shortOf(e, ex)
	e.short.at, e.short.scanned = len(q.log), len(q.log)
	if e.short.slots <= 0 && len(e.short.totals) == 0 {
		e.short.at = -1
	}
}

// shortOf reads what a group fell short of from the matcher's
// explanation (at is left to the caller).
func (q *Manager) shortOf(e *entry, ex *match.Explain) shortfall {
	var sf shortfall
	if ex == nil || q.m.Policy().NodeExclusive {
		return sf
	}
	for _, t := range ex.Totals {
		if t.Need > t.Found {
			sf.totals = sf.totals.add(units{{t.Type, t.Need - t.Found}}, 1)
		}
	}
	if len(e.slotShapes) == 1 && len(ex.Short) == 1 && len(ex.Missing) == 0 {
		for _, s := range e.slotShapes {
			sf.shape = s
		}
		sf.slots = ex.Short[0].Need - ex.Short[0].Found
	}
	return sf
}

// less takes from a shortfall what freeing per (units by node) could
// cover at most, so that it holds in any state with at most that much
// more room. It reports whether anything is still missing.
func (sf *shortfall) less(per map[int32]units) bool {
	if sf.slots > 0 {
		for v, us := range per {
			sf.slots -= slotGain(freedNode{node: v, freed: us}, sf.shape)
		}
	}
	if len(sf.totals) > 0 {
		var held units
		for _, us := range per {
			held = held.add(us, 1)
		}
		for i := range sf.totals {
			sf.totals[i].n -= held.get(sf.totals[i].typ)
		}
		sf.totals = slices.DeleteFunc(sf.totals, func(u unit) bool { return u.n <= 0 })
	}
	return sf.slots > 0 || len(sf.totals) > 0
}

// byNode sums a job's slots per node vertex; ok is false when a slot's
// shape is unknown.
func byNode(e *entry, slots []match.SlotPlacement) (map[int32]units, bool) {
	if e.slotShapes == nil {
		return nil, false // not plain slots: what it holds is not all in them
	}
	out := map[int32]units{}
	for _, sp := range slots {
		s, ok := e.slotShapes[sp.Label]
		if !ok {
			return nil, false
		}
		out[sp.Vertex] = out[sp.Vertex].add(s, 1)
	}
	return out, true
}

// holding records a job that started (sign 1) or ended (sign -1) on its
// nodes, so the queue knows what is free where. A job it cannot weigh
// leaves its nodes unknown for good.
func (q *Manager) holding(e *entry, slots []match.SlotPlacement, nodes []match.NodeUsage, sign int64) {
	per, ok := byNode(e, slots)
	if !ok {
		for _, n := range nodes {
			q.unknown[n.Vertex] = true
		}
		for _, sp := range slots {
			q.unknown[sp.Vertex] = true
		}
		return
	}
	for v, us := range per {
		q.used[v] = q.used[v].add(us, sign)
	}
}

// capacity is what a node vertex holds, by type: its pools' sizes and
// its unit vertices, below it.
func (q *Manager) capacity(v int32) units {
	if c, ok := q.caps[v]; ok {
		return c
	}
	g := q.m.Graph()
	var c units
	for u := v + 1; u < g.SubtreeEnd(v); u++ {
		vx := g.Vertex(u)
		c = c.add(units{{g.TypeName(vx.Type), vx.Size}}, 1)
	}
	q.caps[v] = c
	return c
}

// logFreed records what a running job held, node by node, as freed, and
// forgets it as held. A job whose request is not plain slots cannot be
// weighed: every shortfall is cleared instead.
func (q *Manager) logFreed(e *entry, info match.JobInfo) {
	per, ok := byNode(e, info.Slots)
	if !ok {
		q.holding(e, info.Slots, info.Nodes, -1)
		q.clearShortfalls()
		return
	}
	reserved := q.reservedNodes()
	ev := make([]freedNode, 0, len(per))
	for v, us := range per {
		fn := freedNode{node: v, freed: us}
		if !reserved[v] && !q.unknown[v] {
			fn.exact = true
			fn.before = slices.Clone(q.capacity(v)).add(q.used[v], -1)
		}
		q.used[v] = q.used[v].add(us, -1)
		ev = append(ev, fn)
	}
	slices.SortFunc(ev, func(a, b freedNode) int { return cmp.Compare(a.node, b.node) })
	q.log = append(q.log, ev)
}

// logUnblocked records reservation slots given up as freed: what they
// blocked depends on the window, so only the bound counts.
func (q *Manager) logUnblocked(e *entry, slots []match.SlotPlacement) {
	per, ok := byNode(e, slots)
	if !ok {
		q.clearShortfalls()
		return
	}
	ev := make([]freedNode, 0, len(per))
	for v, us := range per {
		ev = append(ev, freedNode{node: v, freed: us})
	}
	slices.SortFunc(ev, func(a, b freedNode) int { return cmp.Compare(a.node, b.node) })
	q.log = append(q.log, ev)
}

// reservedNodes are the nodes a reservation holds now.
func (q *Manager) reservedNodes() map[int32]bool {
	out := map[int32]bool{}
	for _, e := range q.reserved {
		if info, ok := q.m.Info(e.g.ID); ok {
			for _, sp := range info.Slots {
				out[sp.Vertex] = true
			}
		}
	}
	return out
}

// clearShortfalls forgets every shortfall: room was added in a way the
// log does not weigh.
func (q *Manager) clearShortfalls() {
	q.log = append(q.log, nil)
	q.barrier = len(q.log)
}

// heldReservation is a reservation as it stood, to tell whether the next
// loop made the same one.
type heldReservation struct {
	e    *entry
	info match.JobInfo
}

// reconcile logs, once per loop before any group is matched for an
// allocate only, what the reservations given up since the last loop held
// and the loop did not reserve again: a slot the same group reserves again
// on the same node, from the same time or earlier, for as long, blocks at
// least what it blocked; any other slot may be free now.
func (q *Manager) reconcile() {
	for _, old := range q.dropped {
		gone := old.info.Slots
		if old.e.state == Reserved {
			if info, ok := q.m.Info(old.e.g.ID); ok && info.Status == match.Reserved &&
				info.At <= old.info.At && info.Duration == old.info.Duration {
				gone = slotsNotIn(old.info.Slots, info.Slots)
			}
		}
		if len(gone) > 0 {
			q.logUnblocked(old.e, gone)
		}
	}
	q.dropped = q.dropped[:0]
}

// slotsNotIn returns the slots of a that b does not hold (as multisets).
func slotsNotIn(a, b []match.SlotPlacement) []match.SlotPlacement {
	rest := slices.Clone(b)
	var out []match.SlotPlacement
	for _, s := range a {
		if i := slices.Index(rest, s); i >= 0 {
			rest = slices.Delete(rest, i, i+1)
			continue
		}
		out = append(out, s)
	}
	return out
}
