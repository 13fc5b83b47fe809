package planner

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

type spanArgs struct{ start, dur, amount int64 }

// build returns a planner of capacity c holding spans, failing the test if
// any of them is rejected.
func build(t *testing.T, c int64, spans ...spanArgs) (*Planner, []SpanID) {
	t.Helper()
	p := New(c)
	var ids []SpanID
	for _, s := range spans {
		id, err := p.Add(s.start, s.dur, s.amount)
		if err != nil {
			t.Fatalf("Add(%d,%d,%d): %v", s.start, s.dur, s.amount, err)
		}
		ids = append(ids, id)
	}
	return p, ids
}

// state captures what a caller can observe over [lo, hi).
func state(p *Planner, lo, hi int64) []int64 {
	var out []int64
	for t := lo; t < hi; t++ {
		out = append(out, p.UsedAt(t))
	}
	for t := lo - 1; ; {
		n, ok := p.NextChange(t)
		if !ok {
			break
		}
		out = append(out, n)
		t = n
	}
	return append(out, int64(p.NumSpans()), int64(p.NumPoints()))
}

func TestAdjacentSpansAtFullCapacity(t *testing.T) {
	p, _ := build(t, 4, spanArgs{0, 10, 4}, spanArgs{10, 10, 4})
	for _, c := range []struct{ at, want int64 }{{-1, 0}, {0, 4}, {9, 4}, {10, 4}, {19, 4}, {20, 0}} {
		if got := p.UsedAt(c.at); got != c.want {
			t.Errorf("UsedAt(%d) = %d, want %d", c.at, got, c.want)
		}
	}
	// The end of one and the start of the other cancel at 10, but 10 stays
	// a point: a span boundary.
	if got := p.NumPoints(); got != 3 {
		t.Errorf("NumPoints = %d, want 3", got)
	}
	if got, _ := p.NextChange(0); got != 10 {
		t.Errorf("NextChange(0) = %d, want 10", got)
	}
	if _, err := p.Add(19, 1, 1); !errors.Is(err, ErrOverCommit) {
		t.Errorf("Add into full window: err %v, want ErrOverCommit", err)
	}
	if _, err := p.Add(20, 5, 4); err != nil {
		t.Errorf("Add right after: %v", err)
	}
}

func TestAddRejections(t *testing.T) {
	base := []spanArgs{{0, 10, 3}, {5, 10, 1}, {20, 5, 4}}
	cases := []struct {
		name            string
		start, dur, amt int64
		want            error
	}{
		{"overlaps peak", 8, 4, 1, ErrOverCommit},
		{"covers full span", 0, 30, 1, ErrOverCommit},
		{"last unit of full span", 24, 1, 1, ErrOverCommit},
		{"zero duration", 30, 0, 1, ErrInvalid},
		{"negative duration", 30, -5, 1, ErrInvalid},
		{"negative start", -1, 5, 1, ErrInvalid},
		{"negative amount", 30, 5, -1, ErrInvalid},
		{"over capacity", 30, 5, 5, ErrInvalid},
		{"past MaxTime", MaxTime - 4, 5, 1, ErrInvalid},
		{"start past MaxTime", MaxTime + 1, 1, 1, ErrInvalid},
		{"overflowing duration", 10, math.MaxInt64, 1, ErrInvalid},
		{"fits exactly", 10, 5, 2, nil},
		{"zero amount in full window", 20, 5, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, _ := build(t, 4, base...)
			before := state(p, -2, 40)
			id, err := p.Add(c.start, c.dur, c.amt)
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
			if err != nil {
				if id != 0 {
					t.Errorf("failed Add returned id %d", id)
				}
				if err == c.want {
					t.Errorf("error %q carries no detail", err)
				}
				if after := state(p, -2, 40); !slices.Equal(before, after) {
					t.Errorf("failed Add changed state:\n%v\n%v", before, after)
				}
			}
		})
	}
}

func TestRemove(t *testing.T) {
	p, ids := build(t, 4, spanArgs{0, 10, 2}, spanArgs{5, 10, 2})
	empty := state(New(4), -2, 30)
	cases := []struct {
		id   SpanID
		want error
	}{
		{ids[0], nil},
		{ids[0], ErrNoSpan}, // twice
		{0, ErrNoSpan},
		{-3, ErrNoSpan},
		{99, ErrNoSpan},
		{ids[1], nil},
	}
	for i, c := range cases {
		if err := p.Remove(c.id); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("case %d: Remove(%d) = %v, want %v", i, c.id, err, c.want)
		}
	}
	if got := state(p, -2, 30); !slices.Equal(got, empty) || !p.Empty() {
		t.Errorf("after removing everything: %v, want %v", got, empty)
	}
}

func TestReduce(t *testing.T) {
	cases := []struct {
		name      string
		amt, by   int64
		want      error
		left      int64 // amount after; 0 means the span is gone
		usedAfter int64 // UsedAt(5)
	}{
		{"partial", 3, 1, nil, 2, 2},
		{"to zero removes", 3, 3, nil, 0, 0},
		{"by zero is a no-op", 3, 0, nil, 3, 3},
		{"zero span by zero removes", 0, 0, nil, 0, 0},
		{"more than amount", 3, 4, ErrInvalid, 3, 3},
		{"negative", 3, -1, ErrInvalid, 3, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, ids := build(t, 4, spanArgs{0, 10, c.amt})
			err := p.Reduce(ids[0], c.by)
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
			_, _, amt, ok := p.Span(ids[0])
			if (c.left == 0 && c.want == nil && (ok || p.NumSpans() != 0)) || amt != c.left {
				t.Errorf("Span after = %d, %v; want amount %d", amt, ok, c.left)
			}
			if got := p.UsedAt(5); got != c.usedAfter {
				t.Errorf("UsedAt(5) = %d, want %d", got, c.usedAfter)
			}
			if gone := c.left == 0 && c.want == nil; (p.NumPoints() == 0) != gone {
				t.Errorf("NumPoints = %d with span gone = %v", p.NumPoints(), gone)
			}
		})
	}
	p := New(4)
	if err := p.Reduce(1, 1); !errors.Is(err, ErrNoSpan) {
		t.Errorf("Reduce unknown: %v", err)
	}
}

func TestSpanAndIDs(t *testing.T) {
	p, ids := build(t, 10, spanArgs{3, 4, 5}, spanArgs{0, 1, 0}, spanArgs{7, 2, 1})
	if !slices.Equal(ids, []SpanID{1, 2, 3}) {
		t.Errorf("ids = %v, want 1,2,3", ids)
	}
	if s, d, a, ok := p.Span(1); !ok || s != 3 || d != 4 || a != 5 {
		t.Errorf("Span(1) = %d,%d,%d,%v", s, d, a, ok)
	}
	if _, _, _, ok := p.Span(4); ok {
		t.Error("Span(4) exists")
	}
	if err := p.Remove(3); err != nil {
		t.Fatal(err)
	}
	if id, _ := p.Add(0, 1, 1); id != 4 {
		t.Errorf("id after removing the newest = %d, want 4 (never reused)", id)
	}
}

// Many spans removed in random order exercise tombstones and compaction.
func TestSpanTableChurn(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	p := New(1 << 20)
	want := map[SpanID]spanArgs{}
	var live []SpanID
	for i := range 5000 {
		if len(live) > 0 && rng.IntN(3) == 0 {
			k := rng.IntN(len(live))
			if err := p.Remove(live[k]); err != nil {
				t.Fatal(err)
			}
			delete(want, live[k])
			live = slices.Delete(live, k, k+1)
			continue
		}
		s := spanArgs{int64(i), rng.Int64N(50) + 1, rng.Int64N(5) + 1}
		id, err := p.Add(s.start, s.dur, s.amount)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = s
		live = append(live, id)
	}
	for id := SpanID(1); id < 6000; id++ {
		s, d, a, ok := p.Span(id)
		w, wok := want[id]
		if ok != wok || (ok && (s != w.start || d != w.dur || a != w.amount)) {
			t.Fatalf("Span(%d) = %d,%d,%d,%v want %v,%v", id, s, d, a, ok, w, wok)
		}
	}
	if p.NumSpans() != len(want) {
		t.Errorf("NumSpans = %d, want %d", p.NumSpans(), len(want))
	}
}

func TestUsedMaxAndAvail(t *testing.T) {
	p, _ := build(t, 10, spanArgs{0, 10, 2}, spanArgs{5, 10, 3}, spanArgs{20, 5, 7})
	cases := []struct{ at, dur, want int64 }{
		{0, 5, 2},
		{0, 6, 5},
		{4, 1, 2},
		{5, 1, 5},
		{10, 10, 3},
		{15, 5, 0},
		{-10, 10, 0},
		{-10, 11, 2},
		{14, 7, 7},
		{24, 1, 7},
		{25, 100, 0},
		{0, 0, 2},  // treated as 1
		{5, -3, 5}, // treated as 1
		{0, math.MaxInt64, 7},
		{math.MaxInt64 - 1, math.MaxInt64, 0},
		{math.MinInt64, 10, 0},
		{math.MinInt64, math.MaxInt64, 0},
		{-1, math.MaxInt64, 7},
	}
	for _, c := range cases {
		if got := p.UsedMax(c.at, c.dur); got != c.want {
			t.Errorf("UsedMax(%d,%d) = %d, want %d", c.at, c.dur, got, c.want)
		}
		if got := p.Avail(c.at, c.dur); got != 10-c.want {
			t.Errorf("Avail(%d,%d) = %d, want %d", c.at, c.dur, got, 10-c.want)
		}
	}
}

func TestEarliestFit(t *testing.T) {
	// Capacity 4: full over [10,20), 2 over [30,35), 4 over [35,40), 2 over [40,50).
	p, _ := build(t, 4, spanArgs{10, 10, 4}, spanArgs{30, 10, 2}, spanArgs{35, 15, 2})
	cases := []struct {
		name         string
		on, dur, amt int64
		want         int64
		ok           bool
	}{
		{"inside busy region", 12, 5, 1, 20, true},
		{"busy region start", 10, 1, 1, 20, true},
		{"before busy region, too long", 5, 6, 1, 20, true},
		{"before busy region, fits", 5, 5, 1, 5, true},
		{"between spans", 22, 5, 4, 22, true},
		{"between spans, window reaches partial use", 22, 10, 2, 22, true},
		{"between spans, needs all", 22, 10, 4, 50, true},
		{"partial region blocks", 28, 3, 3, 50, true},
		{"fits in partial region", 30, 5, 2, 30, true},
		{"partial region then full", 30, 6, 2, 40, true},
		{"after all spans", 100, 7, 4, 100, true},
		{"at last end", 50, 1, 4, 50, true},
		{"negative start clamps to 0", -7, 10, 4, 0, true},
		{"zero amount anywhere", 12, 3, 0, 12, true},
		{"amount over capacity", 0, 1, 5, 0, false},
		{"negative amount", 0, 1, -1, 0, false},
		{"zero duration", 0, 0, 1, 0, false},
		{"window past MaxTime", MaxTime - 3, 4, 1, 0, false},
		{"window up to MaxTime", MaxTime - 4, 4, 1, MaxTime - 4, true},
		{"whole time line", 0, MaxTime, 1, 0, false},
		{"whole time line after spans", 50, MaxTime - 50, 4, 50, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := p.EarliestFit(c.on, c.dur, c.amt)
			if got != c.want || ok != c.ok {
				t.Errorf("EarliestFit(%d,%d,%d) = %d,%v want %d,%v", c.on, c.dur, c.amt, got, ok, c.want, c.ok)
			}
			if ok && p.Avail(got, c.dur) < c.amt {
				t.Errorf("answer %d does not fit", got)
			}
		})
	}
	// An exact gap between two full spans.
	g, _ := build(t, 4, spanArgs{0, 10, 4}, spanArgs{15, 5, 4})
	if got, _ := g.EarliestFit(0, 5, 4); got != 10 {
		t.Errorf("gap of 5: got %d, want 10", got)
	}
	if got, _ := g.EarliestFit(0, 6, 4); got != 20 {
		t.Errorf("gap too small: got %d, want 20", got)
	}
}

func TestNextChange(t *testing.T) {
	// [0,10)+2 then [10,20)+2 cancel at 10, which is still reported; [30,40)+1.
	p, _ := build(t, 4, spanArgs{0, 10, 2}, spanArgs{10, 10, 2}, spanArgs{30, 10, 1})
	cases := []struct {
		after, want int64
		ok          bool
	}{
		{math.MinInt64, 0, true},
		{-1, 0, true},
		{0, 10, true},
		{9, 10, true},
		{10, 20, true},
		{19, 20, true},
		{20, 30, true},
		{35, 40, true},
		{40, 0, false},
	}
	for _, c := range cases {
		if got, ok := p.NextChange(c.after); got != c.want || ok != c.ok {
			t.Errorf("NextChange(%d) = %d,%v want %d,%v", c.after, got, ok, c.want, c.ok)
		}
	}
}

func TestNearMaxTime(t *testing.T) {
	p, _ := build(t, 2, spanArgs{MaxTime - 10, 10, 1}, spanArgs{MaxTime - 1, 1, 1})
	checks := []struct {
		name      string
		got, want int64
	}{
		{"UsedAt(MaxTime-1)", p.UsedAt(MaxTime - 1), 2},
		{"UsedAt(MaxTime)", p.UsedAt(MaxTime), 0},
		{"UsedAt(MaxInt64)", p.UsedAt(math.MaxInt64), 0},
		{"UsedMax long", p.UsedMax(MaxTime-20, math.MaxInt64), 2},
		{"UsedMax from MaxInt64", p.UsedMax(math.MaxInt64, math.MaxInt64), 0},
		{"UsedMax before", p.UsedMax(MaxTime-20, 10), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if n, ok := p.NextChange(MaxTime - 2); n != MaxTime-1 || !ok {
		t.Errorf("NextChange = %d,%v", n, ok)
	}
	if n, ok := p.NextChange(MaxTime - 1); n != MaxTime || !ok {
		t.Errorf("NextChange = %d,%v", n, ok)
	}
	if _, ok := p.NextChange(MaxTime); ok {
		t.Error("change after MaxTime")
	}
	if got, ok := p.EarliestFit(MaxTime-15, 5, 2); got != MaxTime-15 || !ok {
		t.Errorf("EarliestFit before the tail = %d,%v", got, ok)
	}
	if _, ok := p.EarliestFit(MaxTime-15, 6, 2); ok {
		t.Error("EarliestFit found room past MaxTime")
	}
	if got, ok := p.EarliestFit(0, MaxTime-10, 2); got != 0 || !ok {
		t.Errorf("EarliestFit up to the tail = %d,%v", got, ok)
	}
	if _, err := p.Add(MaxTime-5, 5, 1); !errors.Is(err, ErrOverCommit) {
		t.Errorf("Add at MaxTime: %v", err)
	}
}

func TestEmptyAndReset(t *testing.T) {
	p := New(3)
	if !p.Empty() || p.NumSpans() != 0 || p.UsedAt(0) != 0 || p.UsedMax(0, MaxTime) != 0 {
		t.Fatal("new planner is not empty")
	}
	if _, ok := p.NextChange(-1); ok {
		t.Error("empty planner has a change")
	}
	if got, ok := p.EarliestFit(5, 10, 3); got != 5 || !ok {
		t.Errorf("EarliestFit on empty = %d,%v", got, ok)
	}
	_, ids := build(t, 3)
	ids = append(ids, must(p.Add(0, 5, 3)), must(p.Add(5, 5, 1)))
	p.Reset()
	if !p.Empty() || p.NumPoints() != 0 || p.UsedAt(2) != 0 {
		t.Error("Reset left spans behind")
	}
	if err := p.Remove(ids[0]); !errors.Is(err, ErrNoSpan) {
		t.Errorf("old id after Reset: %v", err)
	}
	if id := must(p.Add(0, 5, 3)); id <= ids[1] {
		t.Errorf("id after Reset = %d, want > %d", id, ids[1])
	}
}

func must(id SpanID, err error) SpanID {
	if err != nil {
		panic(err)
	}
	return id
}

func TestCapacityClamp(t *testing.T) {
	if c := New(-5).Capacity(); c != 0 {
		t.Errorf("New(-5).Capacity() = %d", c)
	}
	if c := New(math.MaxInt64).Capacity(); c != MaxCapacity {
		t.Errorf("New(MaxInt64).Capacity() = %d", c)
	}
	p := New(0)
	if _, err := p.Add(0, 5, 0); err != nil {
		t.Errorf("zero amount on zero capacity: %v", err)
	}
	big := New(MaxCapacity)
	must(big.Add(0, 10, MaxCapacity))
	must(big.Add(10, 10, MaxCapacity))
	if got := big.UsedMax(0, 20); got != MaxCapacity {
		t.Errorf("UsedMax at MaxCapacity = %d", got)
	}
	if got, _ := big.EarliestFit(0, 5, 1); got != 20 {
		t.Errorf("EarliestFit at MaxCapacity = %d", got)
	}
}
