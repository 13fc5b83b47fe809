package match

import (
	"slices"

	"github.com/fluence-sched/fluence/pkg/resource"
)

// Tightest domain first (Options.TightDomains). A request for one unit of
// a type above the nodes, rack[1] -> slot[n], asks for a whole job within
// one rack. Any rack that holds it would do; the best is the one it fills
// most, so that the emptier racks stay whole for the jobs that need them
// (best fit). At every vertex on the way down to the racks (the cluster,
// a zone, a block) the children that could hold the job are visited from
// the least free room to the most, and the first rack that holds the
// whole job is taken: the tightest zone, the tightest block in it, the
// tightest rack in that. The search is still exhaustive: a rack that
// cannot hold the job, for all its free room, is passed over for the
// next, so a job is placed whenever one rack can hold it.
//
// Room is measured in the one resource the job needs the largest share
// of, over the whole graph: a GPU job is fitted by GPUs, a CPU job by CPU.

// isDomainType: vertices of type t are inner and above the nodes.
func (m *Matcher) isDomainType(t resource.TypeID) bool {
	vs := m.g.ByType(t)
	if len(vs) == 0 {
		return false
	}
	v := vs[0]
	if _, hasNodes := m.g.NodeType(); !hasNodes || m.inner[v] < 0 {
		return false
	}
	return m.g.NodeOf(v) == resource.None
}

// tightDim is the dimension of q's need that is the largest share of the
// graph's total (ties: the lowest dimension), leaving out q's own type
// and the job count.
func (m *Matcher) tightDim(q *req) int {
	root := m.inner[m.g.Root()]
	if root < 0 {
		return 0
	}
	tot := m.totals[int(root)*m.dims : int(root+1)*m.dims]
	best, share := -1, 0.0
	for d, n := range q.need {
		if n <= 0 || d == m.jobDim || d == m.dimOf[q.typ] || tot[d] <= 0 {
			continue
		}
		if f := float64(n) / float64(tot[d]); best < 0 || f > share {
			best, share = d, f
		}
	}
	if best < 0 {
		return m.dimOf[q.typ]
	}
	return best
}

// tightOrder lists u's children for a domain request q: those whose
// subtree has room for one unit of q, by ascending free room in q's
// tight dimension, ties in id order; the leaves, if any, after them.
func (s *selector) tightOrder(u int32, q *req) []int32 {
	m := s.m
	type cand struct {
		v    int32
		free int64
	}
	var cands []cand
	var leaves []int32
	for _, c := range m.g.Children(u) {
		i := m.inner[c]
		if i < 0 {
			leaves = append(leaves, c)
			continue
		}
		if !s.fitsAgg(c, q.need) {
			continue
		}
		free := m.totals[int(i)*m.dims+q.tightDim]
		if a := m.agg[i]; a != nil && !s.sat {
			free -= a.UsedMax(s.at, s.dur, q.tightDim)
		}
		cands = append(cands, cand{c, free})
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		switch {
		case a.free < b.free:
			return -1
		case a.free > b.free:
			return 1
		}
		return 0
	})
	out := make([]int32, 0, len(cands)+len(leaves))
	for _, c := range cands {
		out = append(out, c.v)
	}
	return append(out, leaves...)
}
