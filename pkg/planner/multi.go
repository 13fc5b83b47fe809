package planner

import "fmt"

// Multi tracks several quantities (dimensions) with one shared span table:
// a span holds a vector of amounts. Unlike Fluxion's vector of per-type
// planners, one tree holds a vector per time point, so a multi-span costs
// two points rather than two per dimension and every query is one walk.
// A Multi is not safe for concurrent mutation; concurrent reads are safe.
//
// Dimensions of capacity 0 can hold nothing, so the tree leaves them out:
// a resource graph's aggregates track every vertex type, and most
// subtrees have none of several (a node has no zone below it, a CPU node
// no GPU), which made every update and walk carry those zeros.
type Multi struct {
	caps []int64
	// live lists the dimensions of capacity above 0 (the tree's, in
	// order); pos[d] is d's index in live, -1 for the others. When every
	// capacity is 0 the first dimension is kept, so the tree has one.
	live  []int
	pos   []int
	t     mtree
	spans spanTable[struct{}]
	amts  []int64 // live amounts of spans.recs[i] at [i*len(live), (i+1)*len(live))
}

// vecBuf sizes on-stack scratch vectors; more dimensions than this still
// work but allocate per query. The gang core's graphs have nine (cluster,
// zone, rack, node, cpu, memory, gpu, pods and the job count): at 8 every
// Add and Fits on their aggregates allocated.
const vecBuf = 16

// NewMulti returns an empty multi-planner, one dimension per capacity
// (each clamped to [0, MaxCapacity]).
func NewMulti(capacities []int64) *Multi {
	caps := make([]int64, len(capacities))
	pos := make([]int, len(capacities))
	var live []int
	for i, c := range capacities {
		caps[i] = clampCapacity(c)
		pos[i] = -1
		if caps[i] > 0 {
			pos[i] = len(live)
			live = append(live, i)
		}
	}
	if len(live) == 0 && len(caps) > 0 {
		pos[0], live = 0, []int{0}
	}
	return &Multi{caps: caps, live: live, pos: pos, t: mtree{dims: len(live)}}
}

// pack returns the live part of a full vector, in buf when it fits.
func (m *Multi) pack(v, buf []int64) []int64 {
	out := scratch(buf, len(m.live))
	for i, d := range m.live {
		out[i] = v[d]
	}
	return out
}

// unpack writes a live vector into a full one (dead dimensions 0).
func (m *Multi) unpack(v, out []int64) {
	clear(out)
	for i, d := range m.live {
		out[d] = v[i]
	}
}

// Dims returns the number of dimensions.
func (m *Multi) Dims() int { return len(m.caps) }

// Capacity returns dimension d's capacity.
func (m *Multi) Capacity(d int) int64 { return m.caps[d] }

// validVec is checkVec without building an error, for queries that only
// answer false and may run in hot loops.
func (m *Multi) validVec(v []int64) bool {
	if len(v) != len(m.caps) {
		return false
	}
	for d, x := range v {
		if x < 0 || x > m.caps[d] {
			return false
		}
	}
	return true
}

func (m *Multi) checkVec(what string, v []int64) error {
	if len(v) != len(m.caps) {
		return fmt.Errorf("%w: %s has %d entries, want %d", ErrInvalid, what, len(v), len(m.caps))
	}
	for d, x := range v {
		if x < 0 || x > m.caps[d] {
			return fmt.Errorf("%w: %s[%d] = %d with capacity %d", ErrInvalid, what, d, x, m.caps[d])
		}
	}
	return nil
}

// Add records amounts used over [start, start+dur). It fails (and changes
// nothing) with ErrOverCommit if any dimension would exceed its capacity.
func (m *Multi) Add(start, dur int64, amounts []int64) (SpanID, error) {
	if err := checkWindow(start, dur); err != nil {
		return 0, err
	}
	if err := m.checkVec("amounts", amounts); err != nil {
		return 0, err
	}
	if !isZero(amounts) {
		var buf [vecBuf]int64
		used := scratch(buf[:], len(m.caps))
		m.UsedMaxAll(start, dur, used)
		for d, a := range amounts {
			if a > m.caps[d]-used[d] {
				return 0, fmt.Errorf("%w: dimension %d amount %d over [%d,%d) with %d of %d used",
					ErrOverCommit, d, a, start, start+dur, used[d], m.caps[d])
			}
		}
	}
	// End first, as in Planner.Add, to keep transient sums bounded.
	var lbuf [vecBuf]int64
	l := m.pack(amounts, lbuf[:])
	m.t.sub(start+dur, l, 1)
	m.t.add(start, l, 1)
	id, _ := m.spans.add(start, dur, struct{}{})
	m.amts = append(m.amts, l...)
	return id, nil
}

// amounts returns span slot i's live amounts.
func (m *Multi) amounts(i int) []int64 {
	n := len(m.live)
	return m.amts[i*n : (i+1)*n : (i+1)*n]
}

func (m *Multi) kill(i int) {
	if m.spans.kill(i) {
		m.spans.compact(func(from, to int) { copy(m.amounts(to), m.amounts(from)) })
	}
	m.amts = m.amts[:len(m.spans.recs)*len(m.live)]
}

// Remove deletes a span, releasing its amounts over its whole window.
func (m *Multi) Remove(id SpanID) error {
	i := m.spans.find(id)
	if i < 0 {
		return fmt.Errorf("%w: %d", ErrNoSpan, id)
	}
	r, a := m.spans.recs[i], m.amounts(i)
	m.t.sub(r.start, a, -1)
	m.t.add(r.start+r.dur, a, -1)
	m.kill(i)
	return nil
}

// Reduce lowers a span's amounts by `by` (partial release); the span is
// removed when all its amounts reach 0.
func (m *Multi) Reduce(id SpanID, by []int64) error {
	i := m.spans.find(id)
	if i < 0 {
		return fmt.Errorf("%w: %d", ErrNoSpan, id)
	}
	if len(by) != len(m.caps) {
		return fmt.Errorf("%w: reduction has %d entries, want %d", ErrInvalid, len(by), len(m.caps))
	}
	a := m.amounts(i)
	for d, x := range by {
		had := int64(0)
		if p := m.pos[d]; p >= 0 {
			had = a[p]
		}
		if x < 0 || x > had {
			return fmt.Errorf("%w: reduce span %d dimension %d of amount %d by %d", ErrInvalid, id, d, had, x)
		}
	}
	var lbuf [vecBuf]int64
	l := m.pack(by, lbuf[:])
	var refs int32
	for p, x := range l {
		a[p] -= x
	}
	if isZero(a) {
		refs = -1 // the span goes, and with it its hold on its two points
	}
	r := m.spans.recs[i]
	m.t.sub(r.start, l, refs)
	m.t.add(r.start+r.dur, l, refs)
	if refs != 0 {
		m.kill(i)
	}
	return nil
}

// Span returns a live span's window and a copy of its amounts.
func (m *Multi) Span(id SpanID) (start, dur int64, amounts []int64, ok bool) {
	i := m.spans.find(id)
	if i < 0 {
		return 0, 0, nil, false
	}
	r := m.spans.recs[i]
	out := make([]int64, len(m.caps))
	m.unpack(m.amounts(i), out)
	return r.start, r.dur, out, true
}

// UsedAt returns the amount of dimension d in use at time t.
func (m *Multi) UsedAt(t int64, d int) int64 {
	p := m.pos[d]
	if p < 0 {
		return 0
	}
	return m.t.usedAt1(t, p)
}

// UsedMax is the maximum amount of dimension d used at any time in
// [at, at+dur). A dur below 1 is treated as 1.
func (m *Multi) UsedMax(at, dur int64, d int) int64 {
	p := m.pos[d]
	if p < 0 {
		return 0
	}
	used, inside, ok := m.t.window1(at, windowEnd(at, max(dur, 1)), p)
	if ok {
		return max(used, inside)
	}
	return used
}

// Avail is Capacity(d) - UsedMax(at, dur, d).
func (m *Multi) Avail(at, dur int64, d int) int64 { return m.caps[d] - m.UsedMax(at, dur, d) }

// UsedMaxAll fills out[d] with UsedMax(at, dur, d) for every d; out must
// have at least Dims() entries.
func (m *Multi) UsedMaxAll(at, dur int64, out []int64) {
	out = out[:len(m.caps)]
	n := len(m.live)
	var buf [3 * vecBuf]int64
	s := scratch(buf[:], 3*n)
	used, inside, acc := s[:n], s[n:2*n], s[2*n:]
	if m.t.window(at, windowEnd(at, max(dur, 1)), used, inside, acc) {
		for p := range used {
			used[p] = max(used[p], inside[p])
		}
	}
	m.unpack(used, out)
}

// Fits reports whether for every d: UsedMax(at,dur,d) + amounts[d] <=
// Capacity(d). Zero amounts are always fine; a wrong-length or negative
// vector never fits.
func (m *Multi) Fits(at, dur int64, amounts []int64) bool {
	if !m.validVec(amounts) {
		return false
	}
	if isZero(amounts) {
		return true
	}
	// Requests usually name one or two of the dimensions (cores, say, of
	// five tracked); one single-dimension walk each is then cheaper than
	// one walk summing every dimension.
	nz := 0
	for _, a := range amounts {
		if a != 0 {
			nz++
		}
	}
	if 2*nz <= len(amounts) {
		for d, a := range amounts {
			if a != 0 && a > m.caps[d]-m.UsedMax(at, dur, d) {
				return false
			}
		}
		return true
	}
	var buf [vecBuf]int64
	used := scratch(buf[:], len(m.caps))
	m.UsedMaxAll(at, dur, used)
	for d, a := range amounts {
		if a > m.caps[d]-used[d] {
			return false
		}
	}
	return true
}

// EarliestFit returns the earliest t >= onOrAfter (and t >= 0) with
// Fits(t, dur, amounts) and t+dur <= MaxTime; ok=false if some amount
// exceeds its capacity or the arguments are invalid.
func (m *Multi) EarliestFit(onOrAfter, dur int64, amounts []int64) (int64, bool) {
	if dur < 1 || dur > MaxTime || !m.validVec(amounts) {
		return 0, false
	}
	t := max(onOrAfter, 0)
	if t > MaxTime-dur {
		return 0, false
	}
	if isZero(amounts) {
		return t, true
	}
	// Dead dimensions ask for 0 (validVec) of 0 and never bind.
	n := len(m.live)
	var buf [2 * vecBuf]int64
	s := scratch(buf[:], 2*n)
	limits, cur := s[:n], s[n:]
	for p, d := range m.live {
		limits[p] = m.caps[d] - amounts[d]
	}
	c := mcursor{t: &m.t}
	c.seekAfter(t, cur)
	for {
		if d := overDim(cur, limits); d >= 0 {
			// No start before dimension d drops back can fit; it always
			// does, since usage returns to 0 after the last point.
			var ok bool
			if t, ok = c.seek(d, cur, limits); !ok {
				return 0, false // unreachable unless the tree is corrupt
			}
		} else {
			q, ok := c.seek(-1, cur, limits)
			if !ok || q-t >= dur {
				return t, true
			}
			t = q
			continue
		}
		if t > MaxTime-dur {
			return 0, false
		}
	}
}

// NextChange returns the smallest time > after at which a span starts or
// ends, ok=false if none (see Planner.NextChange).
func (m *Multi) NextChange(after int64) (int64, bool) { return m.t.next(after) }

// LastChange returns the largest time <= at at which a span starts or
// ends, ok=false if none: usage is the same from it to NextChange(at).
func (m *Multi) LastChange(at int64) (int64, bool) { return m.t.last(at) }

// NumSpans returns the number of live spans.
func (m *Multi) NumSpans() int { return m.spans.live() }

// NumPoints returns the number of distinct times at which spans start or end.
func (m *Multi) NumPoints() int { return m.t.size() }

// Empty reports whether the planner holds no spans.
func (m *Multi) Empty() bool { return m.spans.live() == 0 }

// Reset removes all spans and releases memory; span IDs keep increasing.
func (m *Multi) Reset() {
	m.t.reset()
	m.spans.reset()
	m.amts = nil
}
