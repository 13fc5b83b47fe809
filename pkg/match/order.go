package match

import (
	"math/bits"
	"slices"
	"strconv"
)

// childIter yields the children of one vertex in the policy's order without
// allocating (except for the explicit orders, which are cached or built per
// call).
type childIter struct {
	kids  []int32
	ord   order
	i     int
	pass  int
	words []uint64
	list  []int32
}

func (m *Matcher) iterChildren(u int32) childIter {
	kids := m.g.Children(u)
	it := childIter{kids: kids, ord: m.policy.order}
	switch it.ord {
	case descending:
		it.i = len(kids) - 1
	case untouchedFirst:
		it.i = len(kids) - 1
		it.words = m.untouchedWords(u)
	case perfClass:
		it.list = m.perfOrder(u)
	}
	return it
}

func (it *childIter) next() (int32, bool) {
	switch it.ord {
	case ascending:
		if it.i < len(it.kids) {
			it.i++
			return it.kids[it.i-1], true
		}
	case descending:
		if it.i >= 0 {
			it.i--
			return it.kids[it.i+1], true
		}
	case untouchedFirst:
		// Pass 0 walks set bits (untouched children) downwards, pass 1
		// the clear ones: both skip whole words at a time.
		for it.pass < 2 {
			if it.i < 0 {
				it.pass++
				it.i = len(it.kids) - 1
				continue
			}
			w := it.i / 64
			word := it.words[w]
			if it.pass == 1 {
				word = ^word
			}
			if r := it.i % 64; r < 63 {
				word &= 1<<(r+1) - 1
			}
			if word == 0 {
				it.i = w*64 - 1
				continue
			}
			p := w*64 + bits.Len64(word) - 1
			it.i = p - 1
			return it.kids[p], true
		}
	default:
		if it.i < len(it.list) {
			it.i++
			return it.list[it.i-1], true
		}
	}
	return 0, false
}

// perfOrder returns u's children ordered by ascending perf_class property
// (default 9999, as in Fluxion's variation-aware policy), then uniq_id. The
// order is static between property changes, so it is cached.
func (m *Matcher) perfOrder(u int32) []int32 {
	if m.perfCache == nil {
		m.perfCache = map[int32][]int32{}
	}
	if l, ok := m.perfCache[u]; ok {
		return l
	}
	l := slices.Clone(m.g.Children(u))
	class := func(v int32) int64 {
		if s, ok := m.g.Vertex(v).Properties["perf_class"]; ok {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n
			}
		}
		return 9999
	}
	slices.SortStableFunc(l, func(a, b int32) int {
		ca, cb := class(a), class(b)
		switch {
		case ca < cb:
			return -1
		case ca > cb:
			return 1
		}
		return 0
	})
	m.perfCache[u] = l
	return l
}
