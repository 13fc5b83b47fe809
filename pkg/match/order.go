package match

import "math/bits"

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
