package match

import (
	"math"
	"slices"

	"github.com/fluence-sched/fluence/pkg/resource"
)

// The counting precheck. A pod group's request is one slot shape, N times:
// slot[N]->{cpu, memory, pods}. When it does not fit, the selection walks
// every node, packs what fits tentatively and rolls it all back: on a
// 1,000-node graph that is most of what a queue loop costs, since most
// matches of a long queue fail (groups that do not fit now, reservation
// probes at times that do not work either).
//
// Where every resource the slot asks for is one pool per node (so a node
// holds min over the pools of free/need slots, nothing else to it), the
// number of slots the walk would find is a sum over nodes of that formula,
// read from the nodes' aggregate planners through a compact cache of
// their usage. The count follows the walk's own pruning (vertices down,
// busy, or with too little in their aggregate are passed over the same
// way, and counted the same way in Explain), so when it comes out short
// the selection fails with the same shortfall and node counts the walk
// would report, without walking; when it reaches N the walk runs as
// before and makes the selection. Either way the answer is the walk's.
//
// The count reads a node's free units at the window start. That is the
// free amount over the whole window when usage on the node cannot rise
// within it: no reservation touches the node (tags == allocs) and no
// allocation starts after the window start (every allocation starts at
// the time of its match, at most maxAllocAt). Elsewhere the count reads
// the planner over the window, as the walk does.

// slotCounter is the matcher's part of the precheck: which types are
// per-node pools, and a cache of node usage at a window start.
type slotCounter struct {
	ok bool // the graph has nodes and no node inside another
	// pool[t] is type t's pool index when every vertex of type t is a
	// leaf pool of at least 2 units directly below a node, one per node;
	// else -1.
	pool    []int
	poolDim []int // pool index -> dimension
	pools   int
	// ord[v] is node vertex v's ordinal, -1 for other vertices.
	ord []int32
	// ordOfInner[i] is the ordinal of the node with inner index i, or -1.
	ordOfInner []int32
	// tot[o*pools+p] and leaf[o*pools+p]: size and vertex of node o's pool
	// p (0 and -1 when the node has none).
	tot  []int64
	leaf []int32
	// now and probe cache usage at a window start, per node: one for the
	// current time, one for reservation probes (as usedAtStart does).
	now, probe nodeUsage
	// index says which nodes may hold a slot now (slotindex.go).
	index nodeIndex
	// nodes[o] is node o's vertex; kidsLo[v], kidsHi[v] the ordinals of
	// v's children when they are all nodes, in order (else -1).
	nodes          []int32
	kidsLo, kidsHi []int32
	// off turns the precheck off, noIndex its node index (tests and
	// benchmarks compare with them).
	off, noIndex bool
}

// nodeUsage holds, per node ordinal, usage per pool at an instant, valid
// over [lo, hi): up to the node planner's next change.
type nodeUsage struct {
	lo, hi []int64
	used   []int64
	// ver counts a row's refreshes, so what was derived from it can tell
	// whether it still describes the row (probeBound).
	ver []uint32
}

func (c *nodeUsage) init(nodes, pools int) {
	c.lo, c.hi, c.used = make([]int64, nodes), make([]int64, nodes), make([]int64, nodes*pools)
	c.ver = make([]uint32, nodes)
}

// initSlotCounter reads the graph's shape once.
func (m *Matcher) initSlotCounter() {
	sc := &m.sc
	g := m.g
	nt, ok := g.NodeType()
	if !ok {
		return
	}
	nodes := g.ByType(nt)
	sc.ord = make([]int32, g.Len())
	for v := range sc.ord {
		sc.ord[v] = -1
	}
	for o, v := range nodes {
		sc.ord[v] = int32(o)
	}
	for _, v := range nodes {
		for a := g.Parent(v); a != resource.None; a = g.Parent(a) {
			if sc.ord[a] >= 0 {
				return // a node inside a node: not a shape the count knows
			}
		}
	}
	sc.pool = make([]int, g.NumTypes())
	for t := range sc.pool {
		sc.pool[t] = -1
		vs := g.ByType(resource.TypeID(t))
		if len(vs) == 0 || resource.TypeID(t) == nt {
			continue
		}
		seen := map[int32]bool{}
		fit := true
		for _, v := range vs {
			p := g.Parent(v)
			if len(g.Children(v)) > 0 || g.Vertex(v).Size < 2 || p == resource.None || sc.ord[p] < 0 || seen[p] {
				fit = false
				break
			}
			seen[p] = true
		}
		if fit {
			sc.pool[t] = sc.pools
			sc.poolDim = append(sc.poolDim, m.dimOf[t])
			sc.pools++
		}
	}
	sc.tot = make([]int64, len(nodes)*sc.pools)
	sc.leaf = make([]int32, len(nodes)*sc.pools)
	for i := range sc.leaf {
		sc.leaf[i] = -1
	}
	for t, p := range sc.pool {
		if p < 0 {
			continue
		}
		for _, v := range g.ByType(resource.TypeID(t)) {
			o := int(sc.ord[g.Parent(v)])
			sc.tot[o*sc.pools+p] = g.Vertex(v).Size
			sc.leaf[o*sc.pools+p] = v
		}
	}
	sc.ordOfInner = make([]int32, len(m.agg))
	for i := range sc.ordOfInner {
		sc.ordOfInner[i] = -1
	}
	for o, v := range nodes {
		if i := m.inner[v]; i >= 0 {
			sc.ordOfInner[i] = int32(o)
		}
	}
	sc.now.init(len(nodes), sc.pools)
	sc.probe.init(len(nodes), sc.pools)
	sc.index.init(len(nodes), sc.pools)
	sc.nodes = nodes
	sc.kidsLo, sc.kidsHi = make([]int32, g.Len()), make([]int32, g.Len())
	for v := range sc.kidsLo {
		sc.kidsLo[v], sc.kidsHi[v] = -1, -1
		kids := g.Children(int32(v))
		if len(kids) == 0 {
			continue
		}
		lo := sc.ord[kids[0]]
		for i, k := range kids {
			if lo < 0 || sc.ord[k] != lo+int32(i) {
				lo = -1
				break
			}
		}
		if lo >= 0 {
			sc.kidsLo[v], sc.kidsHi[v] = lo, lo+int32(len(kids))
		}
	}
	sc.ok = true
}

// forgetNode drops the cached usage of the node with inner index i.
func (sc *slotCounter) forgetNode(i int32) {
	if !sc.ok {
		return
	}
	if o := sc.ordOfInner[i]; o >= 0 {
		sc.now.hi[o], sc.probe.hi[o] = 0, 0
		sc.index.markDirty(o)
	}
}

// poolNeed is one pool a slot takes from, and how much.
type poolNeed struct {
	p    int
	dim  int
	need int64
}

// countable returns what one slot takes from each pool when r is a
// request the count can judge: one slot request with a fixed count and no
// requires, of distinct per-node pool types with fixed counts, under no
// constraint, on a policy that visits every child (no locality order) and
// takes nodes as the slots need them (not whole).
func (m *Matcher) countable(r *request) []poolNeed {
	if !m.sc.ok || m.policy.NodeExclusive || m.policy.Locality || r.constraint != nil || len(r.top) != 1 {
		return nil
	}
	q := r.top[0]
	if !q.slot || !q.count.IsFixed() || q.requires != nil || len(q.with) == 0 {
		return nil
	}
	var out []poolNeed
	for _, w := range q.with {
		if w.slot || !w.known || len(w.with) > 0 || !w.count.IsFixed() || w.count.Min < 1 || !w.excl || w.subtree {
			return nil
		}
		p := m.sc.pool[w.typ]
		if p < 0 {
			return nil
		}
		for _, o := range out {
			if o.p == p {
				return nil // two requests of one type: the walk takes only the first
			}
		}
		out = append(out, poolNeed{p: p, dim: m.dimOf[w.typ], need: w.count.Min})
	}
	for d, n := range q.need {
		if n > 0 && !containsDim(out, d) {
			return nil
		}
	}
	return out
}

func containsDim(ps []poolNeed, d int) bool {
	for _, p := range ps {
		if p.dim == d {
			return true
		}
	}
	return false
}

// counting is the state of one count.
type counting struct {
	q     *req
	needs []poolNeed
	want  int64
	found int64
	// what the walk would have recorded in Explain
	visited, down, busy int64
	someDown            bool
	cache               *nodeUsage
	// index: the node index holds for this window start (countRange).
	index bool
}

// countShort reports whether the selection of r must fail, and if so
// records in s.ex what the walk would have: the slot shortfall and the
// nodes down and busy. It runs after rootFits.
func (s *selector) countShort(root int32, r *request) bool {
	if s.sat || s.replay || len(r.count) == 0 || s.m.sc.off {
		return false
	}
	m := s.m
	c := counting{q: r.top[0], needs: r.count, want: r.top[0].count.Min,
		someDown: m.g.NodesUp() < len(m.g.ByType(s.nodeType)), cache: &m.sc.now}
	if s.at != s.now {
		c.cache = &m.sc.probe
	} else if !c.someDown && !m.sc.noIndex {
		m.prepareIndex(s.at)
		c.index = true
	}
	s.countVisit(root, &c)
	if c.found >= c.want {
		// The walk will succeed; where the index holds it may pass over
		// the nodes that hold no slot, which take nothing (skipEmpty).
		s.indexed = c.index || (s.probe != nil && s.probe.built && s.probe.t == s.at)
		return false
	}
	s.ex.Visited += c.visited
	s.ex.NodesDown += c.down
	s.ex.NodesBusy += c.busy
	s.ex.Short = append(s.ex.Short, Shortfall{Type: c.q.describe(), Need: c.q.count.Min, Found: c.found})
	m.stats.Counted++
	return true
}

// countVisit mirrors visit for a vertex that is not a node (the root, a
// zone, a rack): passed over when down, busy, or short in its aggregate,
// else its children are counted.
func (s *selector) countVisit(v int32, c *counting) {
	m := s.m
	c.visited++
	vx := m.g.Vertex(v)
	if vx.Status == resource.Down || s.avail(v, vx) <= 0 || m.inner[v] < 0 || !s.fitsAgg(v, c.q.need) {
		return
	}
	if lo := m.sc.kidsLo[v]; lo >= 0 && c.index {
		s.countRange(lo, m.sc.kidsHi[v], c)
		return
	}
	ord := m.sc.ord
	for _, k := range m.g.Children(v) {
		if o := ord[k]; o >= 0 {
			s.countNode(o, k, c)
		} else {
			s.countVisit(k, c)
		}
		if c.found >= c.want {
			return // it fits: the walk decides where
		}
	}
}

// countNode mirrors visit and packSlots for a node: down, busy (nothing
// fits, or the node itself is held), or the slots it holds.
func (s *selector) countNode(o, v int32, c *counting) {
	m := s.m
	c.visited++
	if c.someDown && m.g.Vertex(v).Status == resource.Down {
		c.down++
		return
	}
	if p := m.plan[v]; p != nil && m.g.Vertex(v).Size-p.UsedMax(s.at, s.dur) <= 0 {
		c.busy++
		return
	}
	if m.inner[v] < 0 {
		return
	}
	k := s.slotsOn(o, v, c)
	if k == 0 {
		c.busy++
	}
	c.found += k
}

// slotsOn is the number of slots node o (vertex v) holds over the window.
func (s *selector) slotsOn(o, v int32, c *counting) int64 {
	m := s.m
	sc := &m.sc
	base := int(o) * sc.pools
	used := c.cache.at(m, o, v, s.at)
	k := int64(math.MaxInt64)
	for _, n := range c.needs {
		k = min(k, (sc.tot[base+n.p]-used[n.p])/n.need)
		if k <= 0 {
			return 0
		}
	}
	if m.tags[v] != m.allocs[v] || s.at < m.maxAllocAt {
		// Usage may rise within the window: read it over the window.
		a := m.agg[m.inner[v]]
		k = math.MaxInt64
		for _, n := range c.needs {
			k = min(k, (sc.tot[base+n.p]-a.UsedMax(s.at, s.dur, n.dim))/n.need)
			if k <= 0 {
				return 0
			}
		}
	}
	if c.someLeafDown(m, base) {
		return 0
	}
	return k
}

// someLeafDown: a pool the slot needs is marked down, so the walk cannot
// take it.
func (c *counting) someLeafDown(m *Matcher, base int) bool {
	for _, n := range c.needs {
		if m.g.Vertex(m.sc.leaf[base+n.p]).Status == resource.Down {
			return true
		}
	}
	return false
}

// at returns node o's usage per pool at time t.
func (u *nodeUsage) at(m *Matcher, o, v int32, t int64) []int64 {
	p := m.sc.pools
	row := u.used[int(o)*p : int(o+1)*p]
	if u.lo[o] <= t && t < u.hi[o] {
		return row
	}
	// The row holds from the planner's last change to its next: probes of
	// one reservation search, and of the next search, ask about nearby
	// times, so a row kept for the whole interval is read again.
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if a := m.agg[m.inner[v]]; a != nil {
		for k, d := range m.sc.poolDim {
			row[k] = a.UsedAt(t, d)
		}
		if next, ok := a.NextChange(t); ok {
			hi = next
		}
		if last, ok := a.LastChange(t); ok {
			lo = last
		}
	} else {
		clear(row)
	}
	u.lo[o], u.hi[o] = lo, hi
	u.ver[o]++
	return row
}

// probeBound bounds, for one reservation search, the slots a request could
// find at each probe time from above: per node, the slots its free units
// at the probe time hold, summed. A probe below the count the request
// needs cannot succeed and is passed over without a selection (a probe's
// failure explains nothing, so a bound is enough). The sum is kept from
// probe to probe: probe times only grow within a search, and only nodes
// whose usage row stops holding (a span on them starts or ends) are read
// again, found through a heap ordered by the end of their rows. The next
// search for the same slot shape (the queue's head group, again at the
// next loop) starts from the same per-node counts, reading again only the
// nodes whose rows changed.
type probeBound struct {
	m     *Matcher
	needs []poolNeed
	k     []int64  // slots per node at the last probe
	kver  []uint32 // the probe row version each k was read from
	heap  []int32  // node ordinals, by the end of their row (probe cache hi)
	sum   int64
	t     int64
	built bool
}

// start prepares the bound for a search of needs, keeping the per-node
// counts when the last search was for the same shape.
func (b *probeBound) start(m *Matcher, needs []poolNeed) {
	same := b.m == m && len(b.k) == len(m.sc.nodes) && slices.Equal(b.needs, needs)
	b.m, b.built = m, false
	if !same {
		b.needs = append(b.needs[:0], needs...)
		b.k, b.kver = b.k[:0], b.kver[:0]
	}
}

// slotsAt is the bound at time t (t never below the previous call's).
func (b *probeBound) slotsAt(t int64) int64 {
	m := b.m
	sc := &m.sc
	u := &sc.probe
	if !b.built {
		b.built, b.t = true, t
		if len(b.k) != len(sc.nodes) {
			b.k = slices.Grow(b.k[:0], len(sc.nodes))[:len(sc.nodes)]
			b.kver = slices.Grow(b.kver[:0], len(sc.nodes))[:len(sc.nodes)]
			for o := range b.kver {
				b.kver[o] = u.ver[o] - 1 // read every node
			}
		}
		b.heap = b.heap[:0]
		b.sum = 0
		for o := range sc.nodes {
			if b.kver[o] != u.ver[o] || !(u.lo[o] <= t && t < u.hi[o]) {
				b.k[o] = b.slotsOf(int32(o), t)
			}
			b.sum += b.k[o]
			b.heap = append(b.heap, int32(o))
		}
		for i := len(b.heap)/2 - 1; i >= 0; i-- {
			b.down(i)
		}
		return b.sum
	}
	b.t = t
	for len(b.heap) > 0 && u.hi[b.heap[0]] <= t {
		o := b.heap[0]
		k := b.slotsOf(o, t)
		b.sum += k - b.k[o]
		b.k[o] = k
		b.down(0) // its row now ends later
	}
	return b.sum
}

// slotsOf is node o's slots by its free units at t.
func (b *probeBound) slotsOf(o int32, t int64) int64 {
	sc := &b.m.sc
	used := sc.probe.at(b.m, o, sc.nodes[o], t)
	b.kver[o] = sc.probe.ver[o]
	base := int(o) * sc.pools
	k := int64(math.MaxInt64)
	for _, n := range b.needs {
		k = min(k, (sc.tot[base+n.p]-used[n.p])/n.need)
	}
	return max(k, 0)
}

func (b *probeBound) down(i int) {
	hi := b.m.sc.probe.hi
	h := b.heap
	for {
		l, r, s := 2*i+1, 2*i+2, i
		if l < len(h) && hi[h[l]] < hi[h[s]] {
			s = l
		}
		if r < len(h) && hi[h[r]] < hi[h[s]] {
			s = r
		}
		if s == i {
			return
		}
		h[i], h[s] = h[s], h[i]
		i = s
	}
}
