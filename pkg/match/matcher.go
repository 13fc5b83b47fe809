package match

import (
	"errors"
	"fmt"
	"math"

	"github.com/fluence-sched/fluence/pkg/planner"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// Horizon is the end of schedulable time: a job of duration 0 (unlimited)
// holds its resources until then, and no window may reach past it.
const Horizon int64 = 1 << 40

// jobsCapacity bounds the jobs dimension of aggregates; it only needs to
// exceed any real number of concurrent jobs on one vertex.
const jobsCapacity = 1 << 40

// Options configure a Matcher.
type Options struct {
	// Policy is a match policy name (see PolicyNames); empty means first.
	Policy string
	// TightDomains visits, for a request of one unit of a type above the
	// nodes (a rack, a block), the candidate domains with the least free
	// room first, whatever the policy (tight.go).
	TightDomains bool
	// ExactDomains searches a domain (a rack) whose nodes the first fit
	// could not pack a mixed job into for any packing that holds it
	// (exactpack.go).
	ExactDomains bool
}

// Matcher owns the allocation state of one graph. It is not safe for
// concurrent use: callers serialize requests, as Fluxion's resource module
// does.
type Matcher struct {
	g      *resource.Graph
	policy Policy
	tight  bool
	exact  bool

	// dims: one aggregate dimension per vertex type, plus jobDim counting
	// the jobs that touch a subtree (Fluxion's exclusivity checker).
	dims   int
	jobDim int
	dimOf  []int // by TypeID

	// inner[v] is v's index among inner (non-leaf) vertices, or -1.
	inner []int32
	// totals[inner*dims+d] is the static number of units of dimension d in
	// the subtree of an inner vertex, itself included.
	totals []int64

	plan []*planner.Planner // by vertex, created on first claim
	agg  []*planner.Multi   // by inner index, created on first touch
	// Two caches of agg's usage per inner vertex and dimension: one for the
	// current time, one for the later instants reservation probes ask about.
	// Usage at a window's start bounds usage over the window from below, so
	// a cached value too high to fit rejects a subtree without walking its
	// planner. Each entry holds over [lo, hi), up to the planner's next
	// change, so it serves every loop until a job on that subtree starts or
	// ends; a commit or cancel touching the vertex clears its row.
	nowCache, probeCache usageCache
	// tags counts jobs (allocations and reservations) touching a vertex;
	// allocs counts live allocations only (the overrun guard).
	tags   []int32
	allocs []int32
	// untouched has one bit per child of an inner vertex, set while no job
	// touches that child; bitBase and childPos locate a child's bit. Only
	// `first` reads it, but keeping it costs one word write per transition.
	untouched []uint64
	bitBase   []int32 // by inner index: first word of its children's bits
	childPos  []int32 // by vertex: position among its parent's children

	jobs map[int64]*Job

	perfCache map[int32]*perfEntry // variation policy child orders (order.go)
	// ops counts operations that select. Properties change only between
	// operations, so a cache checked against them holds until the next.
	ops uint64

	// sc counts the slots a request would find without walking
	// (slotcount.go); maxAllocAt is the latest start of any allocation.
	sc         slotCounter
	maxAllocAt int64
	// probes is findReservation's bound (slotcount.go), kept for its
	// buffers.
	probes probeBound
	// acc and spanSum are commit's scratch (apply, accumulate).
	acc     usage
	spanSum []int64

	sel   selector
	stats Stats
}

// Stats are counters since the matcher was created.
type Stats struct {
	Vertices      int
	Edges         int
	Jobs          int
	MatchOK       int64
	MatchFailed   int64
	VisitedTotal  int64
	Reservations  int
	ReserveProbes int64
	// Counted counts failed selections the slot count settled without
	// walking the graph (slotcount.go).
	Counted int64
}

// New prepares a matcher for a finalized graph.
func New(g *resource.Graph, opts Options) (*Matcher, error) {
	if g == nil || !g.Finalized() {
		return nil, errors.New("match: graph must be finalized")
	}
	pol, err := LookupPolicy(opts.Policy)
	if err != nil {
		return nil, err
	}
	n := g.Len()
	m := &Matcher{
		g:      g,
		policy: pol,
		tight:  opts.TightDomains,
		exact:  opts.ExactDomains,
		dims:   g.NumTypes() + 1,
		jobDim: g.NumTypes(),
		dimOf:  make([]int, g.NumTypes()),
		inner:  make([]int32, n),
		plan:   make([]*planner.Planner, n),
		tags:   make([]int32, n),
		allocs: make([]int32, n),
		jobs:   map[int64]*Job{},
	}
	for t := range m.dimOf {
		m.dimOf[t] = t
	}
	var innerCount int32
	words := int32(0)
	m.childPos = make([]int32, n)
	for v := int32(0); v < int32(n); v++ {
		kids := g.Children(v)
		if len(kids) == 0 {
			m.inner[v] = -1
			continue
		}
		m.inner[v] = innerCount
		innerCount++
		for i, c := range kids {
			m.childPos[c] = int32(i)
		}
	}
	m.bitBase = make([]int32, innerCount)
	for v := int32(0); v < int32(n); v++ {
		if i := m.inner[v]; i >= 0 {
			m.bitBase[i] = words
			words += int32((len(g.Children(v)) + 63) / 64)
		}
	}
	m.untouched = make([]uint64, words)
	for v := int32(0); v < int32(n); v++ {
		if i := m.inner[v]; i >= 0 {
			k := len(g.Children(v))
			base := m.bitBase[i]
			for w := 0; w < k/64; w++ {
				m.untouched[base+int32(w)] = ^uint64(0)
			}
			if r := k % 64; r != 0 {
				m.untouched[base+int32(k/64)] = 1<<r - 1
			}
		}
	}
	m.agg = make([]*planner.Multi, innerCount)
	m.totals = make([]int64, int(innerCount)*m.dims)
	m.nowCache.init(int(innerCount) * m.dims)
	m.probeCache.init(int(innerCount) * m.dims)
	// Post-order accumulation: pre-order numbering means children have
	// larger indexes than their parents, so a reverse sweep suffices.
	for v := int32(n - 1); v >= 0; v-- {
		vx := g.Vertex(v)
		if i := m.inner[v]; i >= 0 {
			m.totals[int(i)*m.dims+m.dimOf[vx.Type]] += vx.Size
		}
		p := g.Parent(v)
		if p == resource.None {
			continue
		}
		pi := int(m.inner[p]) * m.dims
		if i := m.inner[v]; i >= 0 {
			for d := 0; d < m.dims; d++ {
				m.totals[pi+d] += m.totals[int(i)*m.dims+d]
			}
		} else {
			m.totals[pi+m.dimOf[vx.Type]] += vx.Size
		}
	}
	for i := int32(0); i < innerCount; i++ {
		m.totals[int(i)*m.dims+m.jobDim] = jobsCapacity
	}
	m.initSlotCounter()
	m.sel.init(m)
	m.stats.Vertices = n
	m.stats.Edges = n - 1
	return m, nil
}

// Graph returns the graph the matcher works on.
func (m *Matcher) Graph() *resource.Graph { return m.g }

// Policy returns the match policy in use.
func (m *Matcher) Policy() Policy { return m.policy }

// Stats returns the counters.
func (m *Matcher) Stats() Stats {
	s := m.stats
	s.Jobs = len(m.jobs)
	return s
}

// total returns the static units of dimension d in v's subtree.
func (m *Matcher) total(v int32, d int) int64 {
	if i := m.inner[v]; i >= 0 {
		return m.totals[int(i)*m.dims+d]
	}
	vx := m.g.Vertex(v)
	if m.dimOf[vx.Type] == d {
		return vx.Size
	}
	return 0
}

func (m *Matcher) totalsOf(v int32) []int64 {
	i := int(m.inner[v]) * m.dims
	return m.totals[i : i+m.dims]
}

// setTouched records in c's parent's bitset whether any job touches c (the
// same fact as tags[c] > 0, kept as bits so `first` skips whole words).
func (m *Matcher) setTouched(c int32, touched bool) {
	p := m.g.Parent(c)
	if p == resource.None {
		return
	}
	pos := m.childPos[c]
	w := m.bitBase[m.inner[p]] + pos/64
	bit := uint64(1) << (pos % 64)
	if touched {
		m.untouched[w] &^= bit
	} else {
		m.untouched[w] |= bit
	}
}

// untouchedWords returns the bit words of p's children.
func (m *Matcher) untouchedWords(p int32) []uint64 {
	i := m.inner[p]
	k := len(m.g.Children(p))
	base := m.bitBase[i]
	return m.untouched[base : base+int32((k+63)/64)]
}

// MarkDown marks a vertex (and so its subtree) down: allocation skips it,
// satisfiability still counts it.
func (m *Matcher) MarkDown(v int32) error { return m.mark(v, resource.Down) }

// MarkUp marks a vertex up again.
func (m *Matcher) MarkUp(v int32) error { return m.mark(v, resource.Up) }

func (m *Matcher) mark(v int32, s resource.Status) error {
	if v < 0 || int(v) >= m.g.Len() {
		return fmt.Errorf("match: vertex %d out of range", v)
	}
	m.g.SetStatus(v, s)
	return nil
}

// idle reports whether no job holds anything: every planner empty and every
// tag zero. Tests use it to prove cancel undoes commit exactly.
func (m *Matcher) idle() bool {
	for _, p := range m.plan {
		if p != nil && !p.Empty() {
			return false
		}
	}
	for _, a := range m.agg {
		if a != nil && !a.Empty() {
			return false
		}
	}
	for v := range m.tags {
		if m.tags[v] != 0 || m.allocs[v] != 0 {
			return false
		}
	}
	for v := int32(1); v < int32(m.g.Len()); v++ {
		pos := m.childPos[v]
		w := m.untouched[m.bitBase[m.inner[m.g.Parent(v)]]+pos/64]
		if w&(1<<(pos%64)) == 0 {
			return false
		}
	}
	return len(m.jobs) == 0
}

// usedAtStart returns the units of dimension d used in inner vertex i's
// subtree at time at, from the cache when it holds that instant.
// usageCache is one way of the window-start cache.
type usageCache struct {
	used, lo, hi []int64
}

func (c *usageCache) init(n int) {
	c.used, c.lo, c.hi = make([]int64, n), make([]int64, n), make([]int64, n)
}

// usedAtStart returns the units of dimension d used in inner vertex i's
// subtree at time at; now says which cache way serves the query.
func (m *Matcher) usedAtStart(i int32, d int, at int64, now bool) int64 {
	c := &m.nowCache
	if !now {
		c = &m.probeCache
	}
	k := int(i)*m.dims + d
	if c.lo[k] <= at && at < c.hi[k] {
		return c.used[k]
	}
	var u int64
	hi := int64(math.MaxInt64)
	if a := m.agg[i]; a != nil {
		u = a.UsedAt(at, d)
		if next, ok := a.NextChange(at); ok {
			hi = next
		}
	}
	c.used[k], c.lo[k], c.hi[k] = u, at, hi
	return u
}

// forgetStart drops inner vertex i's cached rows after its planner changed.
func (m *Matcher) forgetStart(i int32) {
	for k := int(i) * m.dims; k < int(i+1)*m.dims; k++ {
		m.nowCache.hi[k], m.probeCache.hi[k] = 0, 0
	}
	m.sc.forgetNode(i)
}
