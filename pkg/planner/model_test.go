package planner

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

// The brute-force model and a harness that drives a Planner or a Multi
// through the same operations and compares every observable answer.

// Small time ranges keep brute force cheap: spans live in [0, horizon).
const (
	horizon  = 64
	maxStart = 48
	maxDur   = 16
	lowT     = -4  // model arrays cover [lowT, highT)
	highT    = 160 // beyond every query window used by the checks
)

type modelSpan struct {
	start, dur int64
	amts       []int64
}

type model struct {
	caps   []int64
	spans  map[SpanID]*modelSpan
	used   [][]int64 // used[d][t-lowT], recomputed when dirty
	bounds []int64   // sorted distinct span starts and ends, likewise
	dirty  bool
}

func newModel(caps []int64) *model {
	m := &model{caps: caps, spans: map[SpanID]*modelSpan{}, dirty: true}
	m.used = make([][]int64, len(caps))
	for d := range m.used {
		m.used[d] = make([]int64, highT-lowT)
	}
	return m
}

// refresh tabulates usage by adding each span over its window, and
// collects the span boundaries, after the spans changed.
func (m *model) refresh() {
	if !m.dirty {
		return
	}
	for d := range m.used {
		clear(m.used[d])
	}
	m.bounds = m.bounds[:0]
	for _, sp := range m.spans {
		for tt := sp.start; tt < sp.start+sp.dur; tt++ {
			for d := range m.used {
				m.used[d][tt-lowT] += sp.amts[d]
			}
		}
		m.bounds = append(m.bounds, sp.start, sp.start+sp.dur)
	}
	slices.Sort(m.bounds)
	m.bounds = slices.Compact(m.bounds)
	m.dirty = false
}

// usedAt is the sum of every span covering t. Times outside the arrays are
// only ever reached by long windows, where nothing is in use.
func (m *model) usedAt(t int64, d int) int64 {
	m.refresh()
	if t < lowT || t >= highT {
		return 0
	}
	return m.used[d][t-lowT]
}

func (m *model) usedMax(at, dur int64, d int) int64 {
	dur = max(dur, 1)
	end := at + min(dur, highT-at) // later times are idle
	best := m.usedAt(at, d)
	for t := at + 1; t < end; t++ {
		best = max(best, m.usedAt(t, d))
	}
	return best
}

func (m *model) fits(at, dur int64, a []int64) bool {
	if len(a) != len(m.caps) {
		return false
	}
	for d := range a {
		if a[d] < 0 || a[d] > m.caps[d] || (a[d] > 0 && m.usedMax(at, dur, d)+a[d] > m.caps[d]) {
			return false
		}
	}
	return true
}

func (m *model) earliest(on, dur int64, a []int64) (int64, bool) {
	if dur < 1 || !m.fits(highT, 1, a) {
		return 0, false
	}
	for t := max(on, 0); t <= MaxTime-dur; t++ {
		if m.fits(t, dur, a) {
			return t, true
		}
		if t >= highT {
			break // idle from here on, so it would have fit
		}
	}
	return 0, false
}

// nextChange is the first span boundary after `after`, whether or not
// usage changes there.
func (m *model) nextChange(after int64) (int64, bool) {
	m.refresh()
	i, _ := slices.BinarySearch(m.bounds, after+1)
	if i == len(m.bounds) {
		return 0, false
	}
	return m.bounds[i], true
}

// subject is what the harness drives: a Planner (one dimension) or a Multi.
type subject interface {
	add(start, dur int64, a []int64) (SpanID, error)
	remove(id SpanID) error
	reduce(id SpanID, by []int64) error
	span(id SpanID) (start, dur int64, a []int64, ok bool)
	usedAt(t int64, d int) int64
	usedMax(at, dur int64, d int) int64
	usedMaxAll(at, dur int64) []int64
	avail(at, dur int64, d int) int64
	fits(at, dur int64, a []int64) bool
	earliest(on, dur int64, a []int64) (int64, bool)
	next(after int64) (int64, bool)
	numSpans() int
	numPoints() int
	empty() bool
	reset()
}

type single struct{ p *Planner }

func (s single) add(start, dur int64, a []int64) (SpanID, error) { return s.p.Add(start, dur, a[0]) }
func (s single) remove(id SpanID) error                          { return s.p.Remove(id) }
func (s single) reduce(id SpanID, by []int64) error              { return s.p.Reduce(id, by[0]) }
func (s single) span(id SpanID) (int64, int64, []int64, bool) {
	st, du, a, ok := s.p.Span(id)
	return st, du, []int64{a}, ok
}
func (s single) usedAt(t int64, _ int) int64        { return s.p.UsedAt(t) }
func (s single) usedMax(at, dur int64, _ int) int64 { return s.p.UsedMax(at, dur) }
func (s single) usedMaxAll(at, dur int64) []int64   { return []int64{s.p.UsedMax(at, dur)} }
func (s single) avail(at, dur int64, _ int) int64   { return s.p.Avail(at, dur) }
func (s single) fits(at, dur int64, a []int64) bool { return s.p.Avail(at, dur) >= a[0] && a[0] >= 0 }
func (s single) next(after int64) (int64, bool)     { return s.p.NextChange(after) }
func (s single) numSpans() int                      { return s.p.NumSpans() }
func (s single) numPoints() int                     { return s.p.NumPoints() }
func (s single) empty() bool                        { return s.p.Empty() }
func (s single) reset()                             { s.p.Reset() }
func (s single) earliest(on, dur int64, a []int64) (int64, bool) {
	return s.p.EarliestFit(on, dur, a[0])
}

type multi struct{ m *Multi }

func (s multi) add(start, dur int64, a []int64) (SpanID, error) { return s.m.Add(start, dur, a) }
func (s multi) remove(id SpanID) error                          { return s.m.Remove(id) }
func (s multi) reduce(id SpanID, by []int64) error              { return s.m.Reduce(id, by) }
func (s multi) span(id SpanID) (int64, int64, []int64, bool)    { return s.m.Span(id) }
func (s multi) usedAt(t int64, d int) int64                     { return s.m.UsedAt(t, d) }
func (s multi) usedMax(at, dur int64, d int) int64              { return s.m.UsedMax(at, dur, d) }
func (s multi) usedMaxAll(at, dur int64) []int64 {
	out := make([]int64, s.m.Dims())
	s.m.UsedMaxAll(at, dur, out)
	return out
}
func (s multi) avail(at, dur int64, d int) int64   { return s.m.Avail(at, dur, d) }
func (s multi) fits(at, dur int64, a []int64) bool { return s.m.Fits(at, dur, a) }
func (s multi) next(after int64) (int64, bool)     { return s.m.NextChange(after) }
func (s multi) numSpans() int                      { return s.m.NumSpans() }
func (s multi) numPoints() int                     { return s.m.NumPoints() }
func (s multi) empty() bool                        { return s.m.Empty() }
func (s multi) reset()                             { s.m.Reset() }
func (s multi) earliest(on, dur int64, a []int64) (int64, bool) {
	return s.m.EarliestFit(on, dur, a)
}

// harness applies operations to a subject and its model in lockstep.
type harness struct {
	tb   testing.TB
	s    subject
	m    *model
	ids  []SpanID // live span IDs in creation order
	step int
}

func newHarness(tb testing.TB, caps []int64) *harness {
	var s subject
	if len(caps) == 1 {
		s = single{New(caps[0])}
	} else {
		s = multi{NewMulti(caps)}
	}
	return &harness{tb: tb, s: s, m: newModel(caps)}
}

func (h *harness) fatalf(format string, args ...any) {
	h.tb.Helper()
	h.tb.Fatalf("step %d: %s", h.step, fmt.Sprintf(format, args...))
}

// expectErr checks err against the sentinel the model predicts (nil for success).
func (h *harness) expectErr(op string, err, want error) {
	h.tb.Helper()
	if (err == nil) != (want == nil) || (want != nil && !errors.Is(err, want)) {
		h.fatalf("%s: got error %v, want %v", op, err, want)
	}
}

func (h *harness) add(start, dur int64, a []int64) {
	h.tb.Helper()
	var want error
	switch {
	case dur < 1 || start < 0 || start > MaxTime-dur:
		want = ErrInvalid
	default:
		for d := range a {
			if a[d] < 0 || a[d] > h.m.caps[d] {
				want = ErrInvalid
			}
		}
	}
	if want == nil && !h.m.fits(start, dur, a) {
		want = ErrOverCommit
	}
	id, err := h.s.add(start, dur, a)
	h.expectErr(fmt.Sprintf("add(%d,%d,%v)", start, dur, a), err, want)
	if err == nil {
		if _, dup := h.m.spans[id]; dup || id == 0 {
			h.fatalf("add returned bad id %d", id)
		}
		h.m.spans[id] = &modelSpan{start, dur, slices.Clone(a)}
		h.m.dirty = true
		h.ids = append(h.ids, id)
	}
}

func (h *harness) forget(id SpanID) {
	delete(h.m.spans, id)
	h.m.dirty = true
	h.ids = slices.DeleteFunc(h.ids, func(x SpanID) bool { return x == id })
}

func (h *harness) remove(id SpanID) {
	h.tb.Helper()
	var want error
	if h.m.spans[id] == nil {
		want = ErrNoSpan
	}
	h.expectErr(fmt.Sprintf("remove(%d)", id), h.s.remove(id), want)
	if want == nil {
		h.forget(id)
	}
}

func (h *harness) reduce(id SpanID, by []int64) {
	h.tb.Helper()
	sp := h.m.spans[id]
	var want error
	if sp == nil {
		want = ErrNoSpan
	} else {
		for d := range by {
			if by[d] < 0 || by[d] > sp.amts[d] {
				want = ErrInvalid
			}
		}
	}
	h.expectErr(fmt.Sprintf("reduce(%d,%v)", id, by), h.s.reduce(id, by), want)
	if want != nil {
		return
	}
	for d := range by {
		sp.amts[d] -= by[d]
	}
	h.m.dirty = true
	if !slices.ContainsFunc(sp.amts, func(x int64) bool { return x != 0 }) {
		h.forget(id)
	}
}

// snapshot captures everything observable, to prove Remove undoes Add.
func (h *harness) snapshot() []int64 {
	var out []int64
	for d := range h.m.caps {
		for t := int64(lowT); t < highT; t++ {
			out = append(out, h.s.usedAt(t, d))
		}
	}
	for t := int64(lowT); ; {
		n, ok := h.s.next(t)
		if !ok {
			break
		}
		out = append(out, n)
		t = n
	}
	return append(out, int64(h.s.numSpans()), int64(h.s.numPoints()))
}

// addRemove adds a span and removes it again; if the add succeeded the
// observable state must be exactly what it was before.
func (h *harness) addRemove(start, dur int64, a []int64) {
	h.tb.Helper()
	before := h.snapshot()
	n := len(h.ids)
	h.add(start, dur, a)
	if len(h.ids) == n {
		return
	}
	h.remove(h.ids[n])
	if after := h.snapshot(); !slices.Equal(before, after) {
		h.fatalf("add+remove of [%d,%d) %v changed state\nbefore %v\nafter  %v", start, dur, a, before, after)
	}
}

func (h *harness) reset() {
	h.s.reset()
	h.m.spans = map[SpanID]*modelSpan{}
	h.m.dirty = true
	h.ids = nil
}

// query is one randomly chosen read to compare.
type query struct {
	at, dur, on int64
	amts        []int64
}

// check compares the full state, plus the given sampled queries, with the model.
func (h *harness) check(queries []query) {
	h.tb.Helper()
	m, s := h.m, h.s
	if got, want := s.numSpans(), len(m.spans); got != want {
		h.fatalf("NumSpans = %d, want %d", got, want)
	}
	m.refresh()
	if got := s.numPoints(); got != len(m.bounds) {
		h.fatalf("NumPoints = %d, want %d", got, len(m.bounds))
	}
	if s.empty() != (len(m.spans) == 0) {
		h.fatalf("Empty = %v with %d spans", s.empty(), len(m.spans))
	}
	for id, sp := range m.spans {
		st, du, a, ok := s.span(id)
		if !ok || st != sp.start || du != sp.dur || !slices.Equal(a, sp.amts) {
			h.fatalf("Span(%d) = %d,%d,%v,%v want %d,%d,%v", id, st, du, a, ok, sp.start, sp.dur, sp.amts)
		}
	}
	for d := range m.caps {
		for t := int64(lowT); t < highT; t++ {
			want := m.usedAt(t, d)
			if want > m.caps[d] || want < 0 {
				h.fatalf("over-commit: dim %d used %d at %d, capacity %d", d, want, t, m.caps[d])
			}
			if got := s.usedAt(t, d); got != want {
				h.fatalf("UsedAt(%d, dim %d) = %d, want %d", t, d, got, want)
			}
		}
	}
	for after := int64(lowT); after < highT; after++ {
		got, gok := s.next(after)
		want, wok := m.nextChange(after)
		if got != want || gok != wok {
			h.fatalf("NextChange(%d) = %d,%v want %d,%v", after, got, gok, want, wok)
		}
	}
	for _, q := range queries {
		all := s.usedMaxAll(q.at, q.dur)
		for d := range m.caps {
			want := m.usedMax(q.at, q.dur, d)
			if all[d] != want {
				h.fatalf("UsedMaxAll(%d,%d)[%d] = %d, want %d", q.at, q.dur, d, all[d], want)
			}
			if got := s.usedMax(q.at, q.dur, d); got != want {
				h.fatalf("UsedMax(%d,%d, dim %d) = %d, want %d", q.at, q.dur, d, got, want)
			}
			if got := s.avail(q.at, q.dur, d); got != m.caps[d]-want {
				h.fatalf("Avail(%d,%d, dim %d) = %d, want %d", q.at, q.dur, d, got, m.caps[d]-want)
			}
		}
		if got, want := s.fits(q.at, q.dur, q.amts), m.fits(q.at, q.dur, q.amts); got != want {
			h.fatalf("Fits(%d,%d,%v) = %v, want %v", q.at, q.dur, q.amts, got, want)
		}
		got, gok := s.earliest(q.on, q.dur, q.amts)
		want, wok := m.earliest(q.on, q.dur, q.amts)
		if got != want || gok != wok {
			h.fatalf("EarliestFit(%d,%d,%v) = %d,%v want %d,%v", q.on, q.dur, q.amts, got, gok, want, wok)
		}
	}
}

// longQueries probe windows running up to MaxTime; the model handles them
// because everything past highT is idle.
func longQueries(caps []int64) []query {
	full := slices.Clone(caps)
	one := make([]int64, len(caps))
	one[len(one)-1] = 1
	return []query{
		{at: 5, dur: MaxTime - 5, on: 3, amts: one},
		{at: 0, dur: MaxTime, on: 0, amts: full},
		{at: 40, dur: math.MaxInt64, on: 70, amts: one},
		{at: MaxTime - 3, dur: 10, on: MaxTime - 3, amts: one},
		{at: 30, dur: MaxTime - 20, on: 10, amts: full},
	}
}
