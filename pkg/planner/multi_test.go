package planner

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func mustM(t *testing.T, m *Multi, start, dur int64, a ...int64) SpanID {
	t.Helper()
	id, err := m.Add(start, dur, a)
	if err != nil {
		t.Fatalf("Add(%d,%d,%v): %v", start, dur, a, err)
	}
	return id
}

// mstate captures what a caller can observe over [lo, hi).
func mstate(m *Multi, lo, hi int64) []int64 {
	var out []int64
	for d := range m.Dims() {
		for t := lo; t < hi; t++ {
			out = append(out, m.UsedAt(t, d))
		}
	}
	for t := lo - 1; ; {
		n, ok := m.NextChange(t)
		if !ok {
			break
		}
		out = append(out, n)
		t = n
	}
	return append(out, int64(m.NumSpans()), int64(m.NumPoints()))
}

func TestMultiBasics(t *testing.T) {
	m := NewMulti([]int64{4, 2, -1})
	if m.Dims() != 3 || m.Capacity(0) != 4 || m.Capacity(1) != 2 || m.Capacity(2) != 0 {
		t.Fatalf("dims/capacities wrong: %d %d %d %d", m.Dims(), m.Capacity(0), m.Capacity(1), m.Capacity(2))
	}
	if !m.Empty() {
		t.Fatal("not empty")
	}
	mustM(t, m, 0, 10, 4, 1, 0)
	mustM(t, m, 10, 10, 4, 1, 0) // adjacent at full capacity
	id := mustM(t, m, 0, 20, 0, 1, 0)
	if _, err := m.Add(5, 1, []int64{0, 1, 0}); !errors.Is(err, ErrOverCommit) {
		t.Errorf("Add over dim 1: %v", err)
	}
	out := make([]int64, 3)
	m.UsedMaxAll(0, 20, out)
	if !slices.Equal(out, []int64{4, 2, 0}) {
		t.Errorf("UsedMaxAll = %v", out)
	}
	m.UsedMaxAll(20, 10, out)
	if !slices.Equal(out, []int64{0, 0, 0}) {
		t.Errorf("UsedMaxAll(20,10) = %v", out)
	}
	if got := m.UsedMax(10, 1, 1); got != 2 {
		t.Errorf("UsedMax dim 1 = %d", got)
	}
	if got := m.Avail(0, 10, 0); got != 0 {
		t.Errorf("Avail dim 0 = %d", got)
	}
	if s, d, a, ok := m.Span(id); !ok || s != 0 || d != 20 || !slices.Equal(a, []int64{0, 1, 0}) {
		t.Errorf("Span = %d,%d,%v,%v", s, d, a, ok)
	} else {
		a[1] = 99 // a copy: must not leak into the planner
		if _, _, b, _ := m.Span(id); b[1] != 1 {
			t.Error("Span returned internal storage")
		}
	}
}

func TestMultiRejections(t *testing.T) {
	caps := []int64{4, 2, 3}
	cases := []struct {
		name       string
		start, dur int64
		a          []int64
		want       error
	}{
		{"one dimension over", 5, 2, []int64{0, 1, 0}, ErrOverCommit},
		{"last dimension over", 0, 1, []int64{0, 0, 2}, ErrOverCommit},
		{"short vector", 20, 1, []int64{1, 1}, ErrInvalid},
		{"long vector", 20, 1, []int64{1, 1, 1, 1}, ErrInvalid},
		{"negative", 20, 1, []int64{1, -1, 1}, ErrInvalid},
		{"over capacity", 20, 1, []int64{5, 0, 0}, ErrInvalid},
		{"zero duration", 20, 0, []int64{1, 1, 1}, ErrInvalid},
		{"past MaxTime", MaxTime, 1, []int64{1, 1, 1}, ErrInvalid},
		{"fits", 10, 5, []int64{4, 2, 1}, nil},
		{"all zero in busy window", 0, 10, []int64{0, 0, 0}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := NewMulti(caps)
			mustM(t, m, 0, 10, 1, 2, 2)
			before := mstate(m, -1, 25)
			_, err := m.Add(c.start, c.dur, c.a)
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
			if err != nil && !slices.Equal(before, mstate(m, -1, 25)) {
				t.Error("failed Add changed state")
			}
		})
	}
}

func TestMultiRemoveReduce(t *testing.T) {
	m := NewMulti([]int64{4, 4})
	empty := mstate(m, -1, 30)
	a := mustM(t, m, 0, 10, 3, 1)
	b := mustM(t, m, 5, 10, 1, 2)
	cases := []struct {
		name string
		id   SpanID
		by   []int64
		want error
	}{
		{"unknown", 42, []int64{0, 0}, ErrNoSpan},
		{"wrong length", a, []int64{1}, ErrInvalid},
		{"more than held", a, []int64{0, 2}, ErrInvalid},
		{"negative", a, []int64{-1, 0}, ErrInvalid},
		{"partial", a, []int64{2, 0}, nil},
		{"rest", a, []int64{1, 1}, nil},
		{"gone", a, []int64{0, 0}, ErrNoSpan},
	}
	for _, c := range cases {
		if err := m.Reduce(c.id, c.by); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
	if m.NumSpans() != 1 || m.UsedAt(2, 0) != 0 || m.UsedAt(7, 1) != 2 {
		t.Errorf("after reductions: spans %d used %d %d", m.NumSpans(), m.UsedAt(2, 0), m.UsedAt(7, 1))
	}
	if err := m.Remove(a); !errors.Is(err, ErrNoSpan) {
		t.Errorf("Remove reduced-away span: %v", err)
	}
	if err := m.Remove(b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(mstate(m, -1, 30), empty) || !m.Empty() {
		t.Error("not back to empty")
	}
}

func TestMultiFitsAndEarliest(t *testing.T) {
	// dim 0 full over [0,10), dim 1 full over [5,20), dim 2 half over [0,30).
	m := NewMulti([]int64{2, 2, 2})
	mustM(t, m, 0, 10, 2, 0, 1)
	mustM(t, m, 5, 15, 0, 2, 0)
	mustM(t, m, 10, 20, 0, 0, 1)
	fits := []struct {
		at, dur int64
		a       []int64
		want    bool
	}{
		{0, 5, []int64{0, 2, 1}, true},
		{0, 6, []int64{0, 2, 0}, false},
		{10, 10, []int64{2, 0, 1}, true},
		{0, 30, []int64{0, 0, 0}, true},
		{0, 30, []int64{0, 0, 1}, true},
		{0, 30, []int64{0, 0, 2}, false},
		{0, 1, []int64{3, 0, 0}, false},  // over capacity
		{0, 1, []int64{-1, 0, 0}, false}, // negative
		{40, 1, []int64{1, 1}, false},    // wrong length
	}
	for _, c := range fits {
		if got := m.Fits(c.at, c.dur, c.a); got != c.want {
			t.Errorf("Fits(%d,%d,%v) = %v", c.at, c.dur, c.a, got)
		}
	}
	earliest := []struct {
		on, dur int64
		a       []int64
		want    int64
		ok      bool
	}{
		{0, 1, []int64{1, 0, 0}, 10, true},
		{0, 1, []int64{0, 1, 0}, 0, true},
		{0, 6, []int64{0, 1, 0}, 20, true},
		{0, 1, []int64{1, 1, 0}, 20, true}, // dims block at different times
		{0, 5, []int64{0, 0, 2}, 30, true},
		{3, 2, []int64{0, 0, 1}, 3, true},
		{12, 3, []int64{0, 0, 0}, 12, true},
		{0, 1, []int64{0, 3, 0}, 0, false},
		{0, 0, []int64{0, 1, 0}, 0, false},
		{0, 1, []int64{0, 1}, 0, false},
		{MaxTime - 1, 2, []int64{0, 1, 0}, 0, false},
		{0, MaxTime - 30, []int64{2, 2, 2}, 30, true},
		{0, MaxTime - 29, []int64{2, 2, 2}, 0, false},
	}
	for _, c := range earliest {
		got, ok := m.EarliestFit(c.on, c.dur, c.a)
		if got != c.want || ok != c.ok {
			t.Errorf("EarliestFit(%d,%d,%v) = %d,%v want %d,%v", c.on, c.dur, c.a, got, ok, c.want, c.ok)
		}
	}
}

func TestMultiNextChangeAndReset(t *testing.T) {
	m := NewMulti([]int64{4, 4})
	mustM(t, m, 0, 10, 1, 0)
	mustM(t, m, 10, 10, 1, 0) // usage cancels at 10, yet 10 is a boundary
	mustM(t, m, 25, 5, 0, 0)  // an all-zero span still has boundaries
	want := []int64{0, 10, 20, 25, 30}
	var got []int64
	for t, ok := int64(math.MinInt64), true; ok; {
		if t, ok = m.NextChange(t); ok {
			got = append(got, t)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes %v, want %v", got, want)
	}
	for at := int64(-2); at < 35; at++ {
		i, _ := slices.BinarySearch(want, at+1) // first change > at
		wantLast, wantOK := int64(0), i > 0
		if wantOK {
			wantLast = want[i-1]
		}
		if last, ok := m.LastChange(at); last != wantLast || ok != wantOK {
			t.Errorf("LastChange(%d) = %d,%v want %d,%v", at, last, ok, wantLast, wantOK)
		}
	}
	m.Reset()
	if !m.Empty() || m.NumPoints() != 0 || m.UsedMax(0, 100, 1) != 0 {
		t.Error("Reset left state")
	}
	if id := mustM(t, m, 0, 1, 1, 1); id != 4 {
		t.Errorf("id after Reset = %d, want 4", id)
	}
}

// More dimensions than the on-stack scratch holds.
func TestMultiManyDims(t *testing.T) {
	caps := make([]int64, 20)
	for d := range caps {
		caps[d] = int64(d + 1)
	}
	m := NewMulti(caps)
	mustM(t, m, 0, 10, caps...)
	one := make([]int64, 20)
	one[19] = 1
	if m.Fits(5, 1, one) {
		t.Error("fits in a full planner")
	}
	if got, ok := m.EarliestFit(0, 5, one); got != 10 || !ok {
		t.Errorf("EarliestFit = %d,%v", got, ok)
	}
	out := make([]int64, 20)
	m.UsedMaxAll(0, 1, out)
	if !slices.Equal(out, caps) {
		t.Errorf("UsedMaxAll = %v", out)
	}
}
