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

// cursor scans the keys of a tree in increasing order for the first one
// whose used amount is above (or at or below) a limit. It never revisits a
// key, and skips any subtree without a match in O(1) from its maxP/minP, so
// each seek costs O(log P) amortized and a sequence of seeks over nearby
// keys, as EarliestFit does, shares the walk.
//
// The keys not yet passed are the stack entries from top to bottom: n > 0
// stands for node n followed by its whole right subtree, n < 0 for the whole
// subtree -n. cur is used() at the last key passed.
type cursor struct {
	t     *tree
	cur   int64
	stack nodeStack
}

// nodeStack is a stack of node entries held inline, so that a cursor on
// the caller's stack allocates nothing; it spills to the heap only if the
// tree is deeper than the inline part, which a treap almost never is.
type nodeStack struct {
	n      int
	inline [64]int32
	spill  []int32
}

func (s *nodeStack) push(x int32) {
	if s.n < len(s.inline) {
		s.inline[s.n] = x
	} else {
		s.spill = append(s.spill[:s.n-len(s.inline)], x)
	}
	s.n++
}

func (s *nodeStack) pop() int32 {
	s.n--
	if s.n < len(s.inline) {
		return s.inline[s.n]
	}
	return s.spill[s.n-len(s.inline)]
}

// cursorAfter positions a cursor after every key <= lo: descending toward
// lo, each node where the walk turns left is still ahead, together with
// its right subtree, and the deepest such node is the nearest.
func (t *tree) cursorAfter(lo int64, c *cursor) {
	*c = cursor{t: t}
	for n := t.root; n != 0; {
		nd := &t.nodes[n]
		if nd.key <= lo {
			c.cur += t.nodes[nd.left].sum + nd.delta
			n = nd.right
		} else {
			c.stack.push(n)
			n = nd.left
		}
	}
}

// seek advances to the next key k with used(k) > limit (above) or
// used(k) <= limit (!above) and returns it; ok is false if there is none.
func (c *cursor) seek(limit int64, above bool) (key int64, ok bool) {
	t := c.t
	for c.stack.n > 0 {
		e := c.stack.pop()
		if e < 0 {
			if !t.subtreeHas(-e, c.cur, limit, above) {
				c.cur += t.nodes[-e].sum
				continue
			}
			return c.descend(-e, limit, above), true
		}
		nd := &t.nodes[e]
		c.cur += nd.delta
		if nd.right != 0 {
			c.stack.push(-nd.right)
		}
		if (c.cur > limit) == above {
			return nd.key, true
		}
	}
	return 0, false
}

// descend finds the first matching key in subtree n, which must hold one,
// leaving what follows it in n on the stack.
func (c *cursor) descend(n int32, limit int64, above bool) int64 {
	t := c.t
	for {
		nd := &t.nodes[n]
		if l := nd.left; l != 0 {
			if t.subtreeHas(l, c.cur, limit, above) {
				c.stack.push(n)
				n = l
				continue
			}
			c.cur += t.nodes[l].sum
		}
		c.cur += nd.delta
		if (c.cur > limit) == above {
			if nd.right != 0 {
				c.stack.push(-nd.right)
			}
			return nd.key
		}
		n = nd.right
	}
}

// subtreeHas reports whether some key in subtree n, entered with prefix off,
// has used > limit (above) or used <= limit (!above).
func (t *tree) subtreeHas(n int32, off, limit int64, above bool) bool {
	if above {
		return off+t.nodes[n].maxP > limit
	}
	return off+t.nodes[n].minP <= limit
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
