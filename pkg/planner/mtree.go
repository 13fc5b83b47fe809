package planner

// mnode is the shape of one time point of the vector tree; its numbers
// live in mtree.vals so a node costs no separate allocation.
type mnode struct {
	key   int64
	left  int32
	right int32
	prio  uint32
	refs  int32 // spans starting or ending here, as in node
}

// mtree is the vector counterpart of tree: the same treap, with every
// number replaced by a vector of dims numbers. Node n owns
// vals[n*4*dims : (n+1)*4*dims], laid out as delta, sum, maxP, minP, each
// dims long. Node 0 is the all-zero sentinel.
type mtree struct {
	dims  int
	nodes []mnode
	vals  []int64
	root  int32
	free  int32
	rng   uint32
	count int32
}

func (t *mtree) size() int { return int(t.count) }

func (t *mtree) reset() {
	t.nodes, t.vals = nil, nil
	t.root, t.free, t.count = 0, 0, 0
}

// part returns field f (0 delta, 1 sum, 2 maxP, 3 minP) of node n.
func (t *mtree) part(n int32, f int) []int64 {
	b := (int(n)*4 + f) * t.dims
	return t.vals[b : b+t.dims : b+t.dims]
}

func (t *mtree) alloc(key int64, d []int64, refs int32) int32 {
	st := 4 * t.dims
	if t.nodes == nil {
		t.nodes = make([]mnode, 1, 3)
		t.vals = make([]int64, st, 3*st)
	}
	var n int32
	if t.free != 0 {
		n = t.free
		t.free = t.nodes[n].left
	} else {
		t.nodes = append(t.nodes, mnode{})
		t.vals = append(t.vals, make([]int64, st)...)
		n = int32(len(t.nodes) - 1)
	}
	t.nodes[n] = mnode{key: key, prio: nextPrio(&t.rng), refs: refs}
	for f := range 4 {
		copy(t.part(n, f), d)
	}
	t.count++
	return n
}

func (t *mtree) release(n int32) {
	t.nodes[n] = mnode{left: t.free}
	t.free = n
	t.count--
}

func (t *mtree) pull(n int32) {
	nd := &t.nodes[n]
	l, r := nd.left, nd.right
	delta, sum, mxs, mns := t.part(n, 0), t.part(n, 1), t.part(n, 2), t.part(n, 3)
	lsum, lmx, lmn := t.part(l, 1), t.part(l, 2), t.part(l, 3)
	rsum, rmx, rmn := t.part(r, 1), t.part(r, 2), t.part(r, 3)
	for d := range delta {
		s := lsum[d] + delta[d]
		mx, mn := s, s
		if l != 0 {
			mx = max(mx, lmx[d])
			mn = min(mn, lmn[d])
		}
		if r != 0 {
			mx = max(mx, s+rmx[d])
			mn = min(mn, s+rmn[d])
			s += rsum[d]
		}
		sum[d], mxs[d], mns[d] = s, mx, mn
	}
}

// add adds vector d to the delta at key and refs to its reference count;
// see tree.add.
func (t *mtree) add(key int64, d []int64, refs int32) {
	if refs == 0 && isZero(d) {
		return
	}
	t.root = t.upd(t.root, key, d, refs)
	if t.root == 0 {
		t.nodes = t.nodes[:1]
		t.vals = t.vals[:4*t.dims]
		t.free = 0
	}
}

// sub adds -d at key without allocating a negated copy.
func (t *mtree) sub(key int64, d []int64, refs int32) {
	var buf [16]int64
	v := scratch(buf[:], len(d))
	for i, x := range d {
		v[i] = -x
	}
	t.add(key, v, refs)
}

func isZero(v []int64) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// scratch returns n int64s, from buf when it is large enough so that small
// vectors live on the caller's stack.
func scratch(buf []int64, n int) []int64 {
	if n <= len(buf) {
		s := buf[:n]
		clear(s)
		return s
	}
	return make([]int64, n)
}

func (t *mtree) upd(n int32, key int64, d []int64, refs int32) int32 {
	if n == 0 {
		return t.alloc(key, d, refs)
	}
	switch k := t.nodes[n].key; {
	case key < k:
		c := t.upd(t.nodes[n].left, key, d, refs) // may grow the arenas
		t.nodes[n].left = c
		if c != 0 && t.nodes[c].prio > t.nodes[n].prio {
			return t.rotateRight(n)
		}
	case key > k:
		c := t.upd(t.nodes[n].right, key, d, refs)
		t.nodes[n].right = c
		if c != 0 && t.nodes[c].prio > t.nodes[n].prio {
			return t.rotateLeft(n)
		}
	default:
		delta := t.part(n, 0)
		for i, x := range d {
			delta[i] += x
		}
		t.nodes[n].refs += refs
		if t.nodes[n].refs == 0 {
			m := t.merge(t.nodes[n].left, t.nodes[n].right)
			clear(t.vals[int(n)*4*t.dims : int(n+1)*4*t.dims])
			t.release(n)
			return m
		}
	}
	t.pull(n)
	return n
}

func (t *mtree) rotateRight(n int32) int32 {
	l := t.nodes[n].left
	t.nodes[n].left = t.nodes[l].right
	t.nodes[l].right = n
	t.pull(n)
	t.pull(l)
	return l
}

func (t *mtree) rotateLeft(n int32) int32 {
	r := t.nodes[n].right
	t.nodes[n].right = t.nodes[r].left
	t.nodes[r].left = n
	t.pull(n)
	t.pull(r)
	return r
}

func (t *mtree) merge(a, b int32) int32 {
	if a == 0 {
		return b
	}
	if b == 0 {
		return a
	}
	if t.nodes[a].prio > t.nodes[b].prio {
		c := t.merge(t.nodes[a].right, b)
		t.nodes[a].right = c
		t.pull(a)
		return a
	}
	c := t.merge(a, t.nodes[b].left)
	t.nodes[b].left = c
	t.pull(b)
	return b
}
