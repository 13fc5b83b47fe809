package planner

// node is one time point of the scalar tree: a time at which refs spans
// start or end, changing usage by delta (0 when they cancel). Aggregates
// cover the node's subtree in key order: sum of deltas, and the largest and
// smallest prefix sum over its non-empty prefixes (relative to the
// subtree's start).
type node struct {
	key   int64
	delta int64
	sum   int64
	maxP  int64
	minP  int64
	left  int32
	right int32
	prio  uint32
	refs  int32
}

// tree is a treap of time points in a slice arena. Index 0 is a sentinel
// standing for "no node"; its sum stays 0 so offset arithmetic needs no
// branch. Freed nodes are chained through left.
type tree struct {
	nodes []node
	root  int32
	free  int32
	rng   uint32
	count int32
}

// nextPrio is a xorshift32 stream: deterministic per planner, no global state.
func nextPrio(state *uint32) uint32 {
	x := *state
	if x == 0 {
		x = 0x9e3779b9
	}
	x ^= x << 13
	x ^= x >> 17
	x ^= x << 5
	*state = x
	return x
}

func (t *tree) size() int { return int(t.count) }

func (t *tree) reset() {
	t.nodes = nil
	t.root, t.free, t.count = 0, 0, 0
}

func (t *tree) alloc(key, d int64, refs int32) int32 {
	if t.nodes == nil {
		// The sentinel plus both points of a first span.
		t.nodes = make([]node, 1, 3)
	}
	var n int32
	if t.free != 0 {
		n = t.free
		t.free = t.nodes[n].left
	} else {
		t.nodes = append(t.nodes, node{})
		n = int32(len(t.nodes) - 1)
	}
	t.nodes[n] = node{key: key, delta: d, sum: d, maxP: d, minP: d, prio: nextPrio(&t.rng), refs: refs}
	t.count++
	return n
}

func (t *tree) release(n int32) {
	t.nodes[n] = node{left: t.free}
	t.free = n
	t.count--
}

// pull recomputes n's aggregates from its children.
func (t *tree) pull(n int32) {
	nd := &t.nodes[n]
	s := t.nodes[nd.left].sum + nd.delta
	mx, mn := s, s
	if nd.left != 0 {
		l := &t.nodes[nd.left]
		mx = max(mx, l.maxP)
		mn = min(mn, l.minP)
	}
	if nd.right != 0 {
		r := &t.nodes[nd.right]
		mx = max(mx, s+r.maxP)
		mn = min(mn, s+r.minP)
		s += r.sum
	}
	nd.sum, nd.maxP, nd.minP = s, mx, mn
}

// add adds d to the delta at key and refs to its reference count (one per
// span starting or ending there), creating the point if needed and
// dropping it when no span starts or ends there any more. Points are kept
// even where deltas cancel, because callers such as reservation search
// treat every span boundary as a moment when the picture may change.
func (t *tree) add(key, d int64, refs int32) {
	if d == 0 && refs == 0 {
		return
	}
	t.root = t.upd(t.root, key, d, refs)
	if t.root == 0 {
		// Empty again: forget the free list so the arena does not stay
		// fragmented, but keep its capacity for the next span.
		t.nodes = t.nodes[:1]
		t.free = 0
	}
}

func (t *tree) upd(n int32, key, d int64, refs int32) int32 {
	if n == 0 {
		return t.alloc(key, d, refs)
	}
	switch k := t.nodes[n].key; {
	case key < k:
		c := t.upd(t.nodes[n].left, key, d, refs) // may grow the arena
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
		nd := &t.nodes[n]
		nd.delta += d
		nd.refs += refs
		if nd.refs == 0 {
			m := t.merge(nd.left, nd.right)
			t.release(n)
			return m
		}
	}
	t.pull(n)
	return n
}

func (t *tree) rotateRight(n int32) int32 {
	l := t.nodes[n].left
	t.nodes[n].left = t.nodes[l].right
	t.nodes[l].right = n
	t.pull(n)
	t.pull(l)
	return l
}

func (t *tree) rotateLeft(n int32) int32 {
	r := t.nodes[n].right
	t.nodes[n].right = t.nodes[r].left
	t.nodes[r].left = n
	t.pull(n)
	t.pull(r)
	return r
}

// merge joins two treaps where every key of a precedes every key of b.
func (t *tree) merge(a, b int32) int32 {
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
