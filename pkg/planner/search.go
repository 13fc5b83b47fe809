package planner

// Queries on the scalar tree. Each walks one or two root-to-leaf paths and
// uses subtree aggregates for everything hanging off them, so each costs
// O(depth) = O(log P) expected.

// usedAt returns the sum of deltas at keys <= at.
func (t *tree) usedAt(at int64) int64 {
	var s int64
	for n := t.root; n != 0; {
		nd := &t.nodes[n]
		if nd.key <= at {
			s += t.nodes[nd.left].sum + nd.delta
			n = nd.right
		} else {
			n = nd.left
		}
	}
	return s
}

// window returns used(lo) and the maximum of used(k) over keys lo < k < hi
// (ok=false if there is no such key). Together they give the maximum over
// [lo, hi) because usage only changes at keys.
func (t *tree) window(lo, hi int64) (usedLo, inside int64, ok bool) {
	// Descend to the first node inside (lo, hi): the split point below which
	// the range divides into a part bounded only below and one only above.
	var off int64
	n := t.root
	for n != 0 {
		nd := &t.nodes[n]
		if nd.key <= lo {
			off += t.nodes[nd.left].sum + nd.delta
			n = nd.right
		} else if nd.key >= hi {
			n = nd.left
		} else {
			break
		}
	}
	if n == 0 {
		return off, 0, false // the walk passed every key <= lo
	}
	s := &t.nodes[n]
	at := off + t.nodes[s.left].sum + s.delta
	best := at

	// Left part, keys in (lo, split): a node inside has its whole right
	// subtree inside, which its maxP covers.
	for m := s.left; m != 0; {
		nd := &t.nodes[m]
		if nd.key <= lo {
			off += t.nodes[nd.left].sum + nd.delta
			m = nd.right
			continue
		}
		v := off + t.nodes[nd.left].sum + nd.delta
		best = max(best, v)
		if nd.right != 0 {
			best = max(best, v+t.nodes[nd.right].maxP)
		}
		m = nd.left
	}
	// off now counts every key <= lo.

	// Right part, keys in (split, hi): symmetric, whole left subtrees inside.
	for m := s.right; m != 0; {
		nd := &t.nodes[m]
		if nd.key >= hi {
			m = nd.left
			continue
		}
		if nd.left != 0 {
			best = max(best, at+t.nodes[nd.left].maxP)
		}
		at += t.nodes[nd.left].sum + nd.delta
		best = max(best, at)
		m = nd.right
	}
	return off, best, true
}

// first returns used(lo) and the smallest key k > lo with used(k) > limit
// (above) or used(k) <= limit (!above).
//
// The keys > lo, in order, are: for each node where the walk toward lo
// turned left, deepest first, that node and then its right subtree. So the
// walk records those nodes and then scans them with a running prefix sum,
// testing each right subtree in O(1) via maxP/minP and descending into the
// first one that holds a match.
func (t *tree) first(lo, limit int64, above bool) (usedLo, key int64, ok bool) {
	var buf [64]int32
	stack := buf[:0]
	var cur int64
	for n := t.root; n != 0; {
		nd := &t.nodes[n]
		if nd.key <= lo {
			cur += t.nodes[nd.left].sum + nd.delta
			n = nd.right
		} else {
			stack = append(stack, n)
			n = nd.left
		}
	}
	usedLo = cur
	for i := len(stack) - 1; i >= 0; i-- {
		nd := &t.nodes[stack[i]]
		cur += nd.delta
		if (cur > limit) == above {
			return usedLo, nd.key, true
		}
		if r := nd.right; r != 0 {
			if t.subtreeHas(r, cur, limit, above) {
				return usedLo, t.descend(r, cur, limit, above), true
			}
			cur += t.nodes[r].sum
		}
	}
	return usedLo, 0, false
}

// subtreeHas reports whether some key in subtree n, entered with prefix off,
// has used > limit (above) or used <= limit (!above).
func (t *tree) subtreeHas(n int32, off, limit int64, above bool) bool {
	if above {
		return off+t.nodes[n].maxP > limit
	}
	return off+t.nodes[n].minP <= limit
}

// descend finds the first matching key in subtree n, which must hold one.
func (t *tree) descend(n int32, off, limit int64, above bool) int64 {
	for {
		nd := &t.nodes[n]
		if l := nd.left; l != 0 && t.subtreeHas(l, off, limit, above) {
			n = l
			continue
		}
		off += t.nodes[nd.left].sum + nd.delta
		if (off > limit) == above {
			return nd.key
		}
		n = nd.right
	}
}

// next returns the smallest key > after.
func (t *tree) next(after int64) (int64, bool) {
	var best int64
	ok := false
	for n := t.root; n != 0; {
		nd := &t.nodes[n]
		if nd.key > after {
			best, ok = nd.key, true
			n = nd.left
		} else {
			n = nd.right
		}
	}
	return best, ok
}
