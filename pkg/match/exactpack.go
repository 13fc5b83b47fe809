package match

import (
	"slices"

	"github.com/fluence-sched/fluence/pkg/resource"
)

// Exact packing within a domain. The walk packs a level of sibling slots
// node by node, each node taking as many of the first slot kind as fit,
// then of the next: the first fit, in jobspec order. For one kind of slot
// that is exact; for several (a launcher and its workers, pods of mixed
// sizes) it can miss a packing that exists, the way first fit misses one
// in bin packing. Where the job asked to be within one domain (a rack)
// and the walk found no packing there, packExact searches the rack's
// nodes for one by backtracking, largest slots first, before the rack is
// given up on; what it finds is then claimed slot by slot, as the walk
// would, so a packing the nodes' free counts allowed but a claim refuses
// is undone. The search is bounded (exactBudget steps per selection, over
// all the domains it tries): past it a domain is given up as before, so a
// mixed group no rack holds costs a reservation search at most that many
// steps per probe.

// exactBudget bounds the assignments packExact tries per selection.
const exactBudget = 20000

// packExact claims the slots of level below the domain vertex u by an
// exhaustive search, and reports whether it found and claimed them all.
// level must be slots only, with fixed counts.
func (s *selector) packExact(u int32, level []*req) bool {
	if len(level) < 2 || !onlySlots(level) || !s.hasNodes {
		return false
	}
	for _, q := range level {
		if !q.count.IsFixed() {
			return false
		}
	}
	m := s.m
	g := m.g
	var dims []int
	for _, q := range level {
		for d, n := range q.need {
			if n > 0 && d != m.jobDim && !slices.Contains(dims, d) {
				dims = append(dims, d)
			}
		}
	}
	slices.Sort(dims)
	// The nodes a slot may go to, with their free units in dims.
	var nodes []int32
	var free [][]int64
	for v := u; v < g.SubtreeEnd(u); v++ {
		if g.NodeOf(v) != v || m.inner[v] < 0 {
			continue
		}
		vx := g.Vertex(v)
		if !s.sat && vx.Status == resource.Down {
			continue
		}
		if s.req.constraint != nil && !s.matchConstraint(v, vx) {
			continue
		}
		if m.policy.NodeExclusive && !s.committedFree(v) {
			continue
		}
		f := make([]int64, len(dims))
		i := m.inner[v]
		for k, d := range dims {
			f[k] = m.totals[int(i)*m.dims+d]
			if a := m.agg[i]; a != nil && !s.sat {
				f[k] -= a.UsedMax(s.at, s.dur, d)
			}
		}
		nodes = append(nodes, v)
		free = append(free, f)
	}
	var items []*req // one per slot
	constrained := false
	for _, q := range level {
		for range q.count.Max {
			items = append(items, q)
		}
		constrained = constrained || q.requires != nil
	}
	size := func(q *req) int64 {
		var t int64
		for _, d := range dims {
			t += q.need[d]
		}
		return t
	}
	// Largest first; equal slots next to each other, so that each goes to
	// a node no earlier than the one before it (no search of orderings
	// that differ only by which of two equal slots is where).
	slices.SortStableFunc(items, func(a, b *req) int {
		sa, sb := size(a), size(b)
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return 0
	})
	at := make([]int, len(items))
	allowed := func(q *req, n int) bool {
		return q.requires == nil || s.slotAllowed(nodes[n], q)
	}
	fits := func(q *req, n int) bool {
		for k, d := range dims {
			if q.need[d] > free[n][k] {
				return false
			}
		}
		return true
	}
	take := func(q *req, n int, sign int64) {
		for k, d := range dims {
			free[n][k] -= sign * q.need[d]
		}
	}
	var place func(j int) bool
	place = func(j int) bool {
		if j == len(items) {
			return true
		}
		q := items[j]
		first := 0
		if j > 0 && items[j-1] == q {
			first = at[j-1]
		}
		for n := first; n < len(nodes); n++ {
			if s.exactLeft--; s.exactLeft < 0 {
				return false
			}
			// Nodes are told apart only by their free units, unless a
			// slot's requires tells them apart by name or label.
			if !fits(q, n) || !allowed(q, n) || (!constrained && sameAsTried(free, first, n)) {
				continue
			}
			take(q, n, 1)
			at[j] = n
			if place(j + 1) {
				return true
			}
			take(q, n, -1)
		}
		return false
	}
	if !place(0) {
		return false
	}
	mark := len(s.claims)
	for j, q := range items {
		a := nodes[at[j]]
		if !s.satisfy(a, q.with, false) {
			s.rollback(mark)
			return false
		}
		s.slots = append(s.slots, slotRec{q: q, anchor: a, mark: len(s.claims)})
	}
	return true
}

// sameAsTried reports whether node n has the same free units as a node
// tried before it for the same slot: placing the slot there leads to the
// same outcomes.
func sameAsTried(free [][]int64, first, n int) bool {
	for p := first; p < n; p++ {
		if slices.Equal(free[p], free[n]) {
			return true
		}
	}
	return false
}
