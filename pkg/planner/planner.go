package planner

import (
	"errors"
	"fmt"
	"math"
)

// MaxTime is the largest time any window may reach; callers cap windows below it.
const MaxTime int64 = 1 << 62

// MaxCapacity bounds capacities so that every prefix sum, and every difference
// of two prefix sums kept in the tree aggregates, fits in an int64.
const MaxCapacity int64 = 1 << 60

// SpanID names a span within one planner. IDs are assigned 1, 2, 3, ... in
// the order spans are added and are never reused by that planner, so 0 is
// never a valid ID and callers may use it as "no span".
type SpanID int64

var (
	// ErrOverCommit: adding would exceed capacity somewhere in the window.
	ErrOverCommit = errors.New("planner: over capacity")
	// ErrNoSpan: unknown span id.
	ErrNoSpan = errors.New("planner: no such span")
	// ErrInvalid: bad arguments.
	ErrInvalid = errors.New("planner: invalid argument")
)

// Planner tracks the use of one quantity over integer time. The zero value
// is not usable (capacity 0 accepts only zero amounts); use New. A Planner is
// not safe for concurrent mutation; concurrent read-only calls are safe.
type Planner struct {
	capacity int64
	t        tree
	spans    spanTable[int64] // val is the span's amount
}

// New returns an empty planner. It allocates nothing beyond the struct, so
// planners can be created eagerly for every vertex. capacity is clamped to
// [0, MaxCapacity].
func New(capacity int64) *Planner {
	return &Planner{capacity: clampCapacity(capacity)}
}

func clampCapacity(c int64) int64 {
	return min(max(c, 0), MaxCapacity)
}

// checkWindow validates [start, start+dur) without overflowing.
func checkWindow(start, dur int64) error {
	if dur < 1 || start < 0 || start > MaxTime || dur > MaxTime-start {
		return fmt.Errorf("%w: window start %d duration %d", ErrInvalid, start, dur)
	}
	return nil
}

// windowEnd returns at+dur (dur >= 1), saturated at MaxInt64 instead of
// overflowing; no point lies beyond MaxTime, so the clipped window is
// equivalent.
func windowEnd(at, dur int64) int64 {
	if at >= 0 && dur > math.MaxInt64-at {
		return math.MaxInt64
	}
	return at + dur
}

// Capacity returns the planner's total amount.
func (p *Planner) Capacity() int64 { return p.capacity }

// Add records amount used over [start, start+dur). It fails (and changes
// nothing) with ErrOverCommit if used+amount would exceed capacity at any
// time in the window.
func (p *Planner) Add(start, dur, amount int64) (SpanID, error) {
	if err := checkWindow(start, dur); err != nil {
		return 0, err
	}
	if amount < 0 || amount > p.capacity {
		return 0, fmt.Errorf("%w: amount %d with capacity %d", ErrInvalid, amount, p.capacity)
	}
	if amount > 0 {
		if used := p.UsedMax(start, dur); amount > p.capacity-used {
			return 0, fmt.Errorf("%w: amount %d over [%d,%d) with %d of %d used",
				ErrOverCommit, amount, start, start+dur, used, p.capacity)
		}
	}
	// End first: the transient state then only lowers prefix sums, which
	// keeps them within [-capacity, capacity].
	p.t.add(start+dur, -amount, 1)
	p.t.add(start, amount, 1)
	id, _ := p.spans.add(start, dur, amount)
	return id, nil
}

// Remove deletes a span, releasing its amount over its whole window.
func (p *Planner) Remove(id SpanID) error {
	i := p.spans.find(id)
	if i < 0 {
		return fmt.Errorf("%w: %d", ErrNoSpan, id)
	}
	r := p.spans.recs[i]
	p.t.add(r.start, -r.val, -1)
	p.t.add(r.start+r.dur, r.val, -1)
	p.kill(i)
	return nil
}

// Reduce lowers a span's amount by `by` (partial release); the span is
// removed when it reaches 0.
func (p *Planner) Reduce(id SpanID, by int64) error {
	i := p.spans.find(id)
	if i < 0 {
		return fmt.Errorf("%w: %d", ErrNoSpan, id)
	}
	r := &p.spans.recs[i]
	if by < 0 || by > r.val {
		return fmt.Errorf("%w: reduce span %d of amount %d by %d", ErrInvalid, id, r.val, by)
	}
	var refs int32
	if by == r.val {
		refs = -1 // the span goes, and with it its hold on its two points
	}
	p.t.add(r.start, -by, refs)
	p.t.add(r.start+r.dur, by, refs)
	r.val -= by
	if refs != 0 {
		p.kill(i)
	}
	return nil
}

func (p *Planner) kill(i int) {
	if p.spans.kill(i) {
		p.spans.compact(nil)
	}
}

// Span returns a live span's window and amount.
func (p *Planner) Span(id SpanID) (start, dur, amount int64, ok bool) {
	i := p.spans.find(id)
	if i < 0 {
		return 0, 0, 0, false
	}
	r := p.spans.recs[i]
	return r.start, r.dur, r.val, true
}

// UsedAt returns the amount in use at time t.
func (p *Planner) UsedAt(t int64) int64 { return p.t.usedAt(t) }

// UsedMax is the maximum amount used at any time in [at, at+dur). A dur
// below 1 is treated as 1.
func (p *Planner) UsedMax(at, dur int64) int64 {
	used, inside, ok := p.t.window(at, windowEnd(at, max(dur, 1)))
	if ok {
		return max(used, inside)
	}
	return used
}

// Avail is Capacity() - UsedMax(at, dur).
func (p *Planner) Avail(at, dur int64) int64 { return p.capacity - p.UsedMax(at, dur) }

// EarliestFit returns the earliest t >= onOrAfter (and t >= 0) with
// Avail(t, dur) >= amount and t+dur <= MaxTime; ok is false if there is
// none (amount > capacity) or the arguments are invalid.
func (p *Planner) EarliestFit(onOrAfter, dur, amount int64) (int64, bool) {
	if dur < 1 || dur > MaxTime || amount < 0 || amount > p.capacity {
		return 0, false
	}
	t := max(onOrAfter, 0)
	if t > MaxTime-dur {
		return 0, false
	}
	if amount == 0 {
		return t, true
	}
	limit := p.capacity - amount
	var c cursor
	p.t.cursorAfter(t, &c)
	for {
		if c.cur > limit {
			// Blocked at t: skip to where usage drops back. It always does,
			// since usage returns to 0 after the last point and limit >= 0.
			var ok bool
			if t, ok = c.seek(limit, false); !ok {
				return 0, false // unreachable unless the tree is corrupt
			}
		} else {
			q, ok := c.seek(limit, true)
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
// ends, ok=false if none. Usage may be unchanged there when an end and a
// start cancel; the time is reported anyway, since which spans hold the
// amount has changed.
func (p *Planner) NextChange(after int64) (int64, bool) { return p.t.next(after) }

// NumSpans returns the number of live spans.
func (p *Planner) NumSpans() int { return p.spans.live() }

// NumPoints returns the number of distinct times at which spans start or
// end; the cost of every query is logarithmic in it.
func (p *Planner) NumPoints() int { return p.t.size() }

// Empty reports whether the planner holds no spans.
func (p *Planner) Empty() bool { return p.spans.live() == 0 }

// Reset removes all spans and releases memory. Span IDs keep increasing so
// stale IDs from before the reset are reported as unknown.
func (p *Planner) Reset() {
	p.t.reset()
	p.spans.reset()
}
