package planner

// Queries on the vector tree; each mirrors its scalar namesake in search.go
// (see there for why the walks are correct and logarithmic). Vector
// variants do all dimensions in one walk; the 1-suffixed ones read a single
// dimension and need no scratch space.

func (t *mtree) at(n int32, f, d int) int64 { return t.vals[(int(n)*4+f)*t.dims+d] }

func (t *mtree) usedAt1(at int64, d int) int64 {
	var s int64
	for n := t.root; n != 0; {
		nd := &t.nodes[n]
		if nd.key <= at {
			s += t.at(nd.left, 1, d) + t.at(n, 0, d)
			n = nd.right
		} else {
			n = nd.left
		}
	}
	return s
}

// window1 is tree.window for dimension d.
func (t *mtree) window1(lo, hi int64, d int) (usedLo, inside int64, ok bool) {
	var off int64
	n := t.root
	for n != 0 {
		nd := &t.nodes[n]
		if nd.key <= lo {
			off += t.at(nd.left, 1, d) + t.at(n, 0, d)
			n = nd.right
		} else if nd.key >= hi {
			n = nd.left
		} else {
			break
		}
	}
	if n == 0 {
		return off, 0, false
	}
	s := t.nodes[n]
	at := off + t.at(s.left, 1, d) + t.at(n, 0, d)
	best := at
	for m := s.left; m != 0; {
		nd := &t.nodes[m]
		if nd.key <= lo {
			off += t.at(nd.left, 1, d) + t.at(m, 0, d)
			m = nd.right
			continue
		}
		v := off + t.at(nd.left, 1, d) + t.at(m, 0, d)
		best = max(best, v)
		if nd.right != 0 {
			best = max(best, v+t.at(nd.right, 2, d))
		}
		m = nd.left
	}
	for m := s.right; m != 0; {
		nd := &t.nodes[m]
		if nd.key >= hi {
			m = nd.left
			continue
		}
		if nd.left != 0 {
			best = max(best, at+t.at(nd.left, 2, d))
		}
		at += t.at(nd.left, 1, d) + t.at(m, 0, d)
		best = max(best, at)
		m = nd.right
	}
	return off, best, true
}

// window is tree.window for every dimension at once: it fills usedLo and
// inside and reports whether any key lies in (lo, hi). acc is scratch.
func (t *mtree) window(lo, hi int64, usedLo, inside, acc []int64) bool {
	clear(usedLo)
	n := t.root
	for n != 0 {
		nd := &t.nodes[n]
		if nd.key <= lo {
			addInto(usedLo, t.part(nd.left, 1), t.part(n, 0))
			n = nd.right
		} else if nd.key >= hi {
			n = nd.left
		} else {
			break
		}
	}
	if n == 0 {
		return false
	}
	s := t.nodes[n]
	copy(acc, usedLo)
	addInto(acc, t.part(s.left, 1), t.part(n, 0))
	copy(inside, acc)
	for m := s.left; m != 0; {
		nd := &t.nodes[m]
		if nd.key <= lo {
			addInto(usedLo, t.part(nd.left, 1), t.part(m, 0))
			m = nd.right
			continue
		}
		lsum, delta, rmax := t.part(nd.left, 1), t.part(m, 0), t.part(nd.right, 2)
		for d := range inside {
			v := usedLo[d] + lsum[d] + delta[d]
			inside[d] = max(inside[d], v)
			if nd.right != 0 {
				inside[d] = max(inside[d], v+rmax[d])
			}
		}
		m = nd.left
	}
	for m := s.right; m != 0; {
		nd := &t.nodes[m]
		if nd.key >= hi {
			m = nd.left
			continue
		}
		lsum, lmax, delta := t.part(nd.left, 1), t.part(nd.left, 2), t.part(m, 0)
		for d := range inside {
			if nd.left != 0 {
				inside[d] = max(inside[d], acc[d]+lmax[d])
			}
			acc[d] += lsum[d] + delta[d]
			inside[d] = max(inside[d], acc[d])
		}
		m = nd.right
	}
	return true
}

// addInto does dst += a + b element-wise.
func addInto(dst, a, b []int64) {
	for d := range dst {
		dst[d] += a[d] + b[d]
	}
}

// addTo does dst += a element-wise.
func addTo(dst, a []int64) {
	for d := range dst {
		dst[d] += a[d]
	}
}

// firstOver returns the smallest key k > lo at which used(k)[d] > limits[d]
// for some d, and fills usedLo with used(lo). cur is scratch.
func (t *mtree) firstOver(lo int64, limits, usedLo, cur []int64) (int64, bool) {
	var buf [64]int32
	stack := buf[:0]
	clear(usedLo)
	for n := t.root; n != 0; {
		nd := &t.nodes[n]
		if nd.key <= lo {
			addInto(usedLo, t.part(nd.left, 1), t.part(n, 0))
			n = nd.right
		} else {
			stack = append(stack, n)
			n = nd.left
		}
	}
	copy(cur, usedLo)
	for i := len(stack) - 1; i >= 0; i-- {
		n := stack[i]
		if addOver(cur, t.part(n, 0), limits) {
			return t.nodes[n].key, true
		}
		if r := t.nodes[n].right; r != 0 {
			if t.subtreeOver(r, cur, limits) {
				return t.descendOver(r, cur, limits), true
			}
			addTo(cur, t.part(r, 1))
		}
	}
	return 0, false
}

// addOver does cur += delta and reports whether cur exceeds limits anywhere.
func addOver(cur, delta, limits []int64) bool {
	over := false
	for d := range cur {
		cur[d] += delta[d]
		if cur[d] > limits[d] {
			over = true
		}
	}
	return over
}

func (t *mtree) subtreeOver(n int32, off, limits []int64) bool {
	mx := t.part(n, 2)
	for d := range off {
		if off[d]+mx[d] > limits[d] {
			return true
		}
	}
	return false
}

// descendOver finds the first over-limit key in subtree n, which must hold
// one; off is the prefix at entry and is clobbered.
func (t *mtree) descendOver(n int32, off, limits []int64) int64 {
	for {
		nd := &t.nodes[n]
		if l := nd.left; l != 0 && t.subtreeOver(l, off, limits) {
			n = l
			continue
		}
		addTo(off, t.part(nd.left, 1))
		if addOver(off, t.part(n, 0), limits) {
			return nd.key
		}
		n = nd.right
	}
}

// firstUnder1 returns the smallest key k > lo with used(k)[d] <= limit.
func (t *mtree) firstUnder1(lo int64, d int, limit int64) (int64, bool) {
	var buf [64]int32
	stack := buf[:0]
	var cur int64
	for n := t.root; n != 0; {
		nd := &t.nodes[n]
		if nd.key <= lo {
			cur += t.at(nd.left, 1, d) + t.at(n, 0, d)
			n = nd.right
		} else {
			stack = append(stack, n)
			n = nd.left
		}
	}
	for i := len(stack) - 1; i >= 0; i-- {
		n := stack[i]
		cur += t.at(n, 0, d)
		if cur <= limit {
			return t.nodes[n].key, true
		}
		if r := t.nodes[n].right; r != 0 {
			if cur+t.at(r, 3, d) <= limit {
				return t.descendUnder1(r, cur, d, limit), true
			}
			cur += t.at(r, 1, d)
		}
	}
	return 0, false
}

func (t *mtree) descendUnder1(n int32, off int64, d int, limit int64) int64 {
	for {
		nd := &t.nodes[n]
		if l := nd.left; l != 0 && off+t.at(l, 3, d) <= limit {
			n = l
			continue
		}
		off += t.at(nd.left, 1, d) + t.at(n, 0, d)
		if off <= limit {
			return nd.key
		}
		n = nd.right
	}
}

func (t *mtree) next(after int64) (int64, bool) {
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
