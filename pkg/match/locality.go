package match

import "slices"

// localityOrder implements the locality policy for a level asking for
// several units of one type among u's children: the children that could
// each be a unit are grouped into runs of consecutive ids, and units are
// taken from the longest run first (Fluxion's "greater interval first"),
// ties by lowest id. It returns nil where the policy does not apply, and the
// caller falls back to ascending order.
func (s *selector) localityOrder(u int32, level []*req) []int32 {
	if len(level) != 1 || level[0].slot || !level[0].known || level[0].count.Min < 2 {
		return nil
	}
	q := level[0]
	g := s.m.g
	var fit, rest []int32
	for _, c := range g.Children(u) {
		vx := g.Vertex(c)
		if vx.Type != q.typ {
			rest = append(rest, c)
			continue
		}
		mark := len(s.claims)
		saved := s.ex
		rem := int64(1)
		s.visit(c, level, []int64{rem})
		ok := len(s.claims) > mark
		s.rollback(mark)
		s.ex = saved
		if ok {
			fit = append(fit, c)
		}
	}
	if len(fit) == 0 {
		return nil
	}
	type run struct{ start, n int }
	var runs []run
	for i := 0; i < len(fit); {
		j := i + 1
		for j < len(fit) && g.Vertex(fit[j]).ID == g.Vertex(fit[j-1]).ID+1 {
			j++
		}
		runs = append(runs, run{i, j - i})
		i = j
	}
	slices.SortStableFunc(runs, func(a, b run) int { return b.n - a.n })
	out := make([]int32, 0, len(fit)+len(rest))
	for _, r := range runs {
		out = append(out, fit[r.start:r.start+r.n]...)
	}
	return append(out, rest...)
}
