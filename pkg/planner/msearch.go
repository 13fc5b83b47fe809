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

// mcursor is the vector counterpart of cursor (see there). It seeks either
// the next key where any dimension is over its limit (dim < 0) or the next
// key where one dimension is at or under its limit (dim >= 0), and tracks
// in cur the used amounts of every dimension at the last key passed, so the
// caller can test each key it stops at. cur and limits are passed to each
// call rather than held, which lets them live on the caller's stack.
type mcursor struct {
	t     *mtree
	stack nodeStack
}

// seekAfter positions the cursor after every key <= lo and sets cur to
// used(lo).
func (c *mcursor) seekAfter(lo int64, cur []int64) {
	t := c.t
	clear(cur)
	for n := t.root; n != 0; {
		nd := &t.nodes[n]
		if nd.key <= lo {
			addInto(cur, t.part(nd.left, 1), t.part(n, 0))
			n = nd.right
		} else {
			c.stack.push(n)
			n = nd.left
		}
	}
}

// overDim returns the first dimension where cur exceeds limits, or -1.
func overDim(cur, limits []int64) int {
	for d, u := range cur {
		if u > limits[d] {
			return d
		}
	}
	return -1
}

// hit tests the current position.
func hit(dim int, cur, limits []int64) bool {
	if dim >= 0 {
		return cur[dim] <= limits[dim]
	}
	return overDim(cur, limits) >= 0
}

// has reports whether subtree n, entered at the current position, holds a match.
func (c *mcursor) has(n int32, dim int, cur, limits []int64) bool {
	t := c.t
	if dim >= 0 {
		return cur[dim]+t.at(n, 3, dim) <= limits[dim]
	}
	mx := t.part(n, 2)
	for d, u := range cur {
		if u+mx[d] > limits[d] {
			return true
		}
	}
	return false
}

// seek advances to the next matching key and returns it; ok is false if
// there is none.
func (c *mcursor) seek(dim int, cur, limits []int64) (key int64, ok bool) {
	t := c.t
	for c.stack.n > 0 {
		e := c.stack.pop()
		if e < 0 {
			if !c.has(-e, dim, cur, limits) {
				addTo(cur, t.part(-e, 1))
				continue
			}
			return c.descend(-e, dim, cur, limits), true
		}
		addTo(cur, t.part(e, 0))
		if r := t.nodes[e].right; r != 0 {
			c.stack.push(-r)
		}
		if hit(dim, cur, limits) {
			return t.nodes[e].key, true
		}
	}
	return 0, false
}

// descend finds the first match in subtree n, which must hold one.
func (c *mcursor) descend(n int32, dim int, cur, limits []int64) int64 {
	t := c.t
	for {
		nd := &t.nodes[n]
		if l := nd.left; l != 0 {
			if c.has(l, dim, cur, limits) {
				c.stack.push(n)
				n = l
				continue
			}
			addTo(cur, t.part(l, 1))
		}
		addTo(cur, t.part(n, 0))
		if hit(dim, cur, limits) {
			if nd.right != 0 {
				c.stack.push(-nd.right)
			}
			return nd.key
		}
		n = nd.right
	}
}

// last returns the largest key <= at.
func (t *mtree) last(at int64) (int64, bool) {
	var best int64
	ok := false
	for n := t.root; n != 0; {
		nd := &t.nodes[n]
		if nd.key <= at {
			best, ok = nd.key, true
			n = nd.right
		} else {
			n = nd.left
		}
	}
	return best, ok
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
