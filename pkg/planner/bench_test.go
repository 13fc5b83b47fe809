package planner

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Benchmarks at P = 100 ... 100000 spans. Tree depth grows with log P
// (log2 100000 / log2 100 = 2.5); on top of that, large trees no longer fit
// in the CPU caches, so each level visited costs more. Linear growth would
// instead show a factor of 1000 between the extremes.

var benchSizes = []int{100, 1000, 10000, 100000}

type window struct{ start, dur, amount int64 }

// randWindows returns n windows over [0, 10p) with durations up to maxDur.
func randWindows(rng *rand.Rand, n, p int, maxDur, maxAmt int64) []window {
	w := make([]window, n)
	for i := range w {
		w[i] = window{rng.Int64N(10 * int64(p)), rng.Int64N(maxDur) + 1, rng.Int64N(maxAmt) + 1}
	}
	return w
}

// filled returns a planner holding p spans spread over [0, 10p).
func filled(p int, capacity, maxDur, maxAmt int64) *Planner {
	rng := rand.New(rand.NewPCG(uint64(p), 1))
	pl := New(capacity)
	for pl.NumSpans() < p {
		w := randWindows(rng, 1, p, maxDur, maxAmt)[0]
		pl.Add(w.start, w.dur, w.amount) // over-commits are simply skipped
	}
	return pl
}

func filledMulti(p int, caps []int64, maxDur int64) *Multi {
	rng := rand.New(rand.NewPCG(uint64(p), 2))
	m := NewMulti(caps)
	a := make([]int64, len(caps))
	for m.NumSpans() < p {
		w := randWindows(rng, 1, p, maxDur, 1)[0]
		for d := range a {
			a[d] = rng.Int64N(caps[d]/4 + 1)
		}
		m.Add(w.start, w.dur, a)
	}
	return m
}

func benchName(p int) string { return fmt.Sprintf("P=%d", p) }

// BenchmarkAdd times an Add followed by the Remove that undoes it, so the
// planner keeps exactly P spans throughout.
func BenchmarkAdd(b *testing.B) {
	for _, p := range benchSizes {
		b.Run(benchName(p), func(b *testing.B) {
			pl := filled(p, 1<<40, 100, 10)
			ws := randWindows(rand.New(rand.NewPCG(9, 9)), 4096, p, 100, 10)
			b.ReportMetric(float64(pl.NumPoints()), "points")
			i := 0
			for b.Loop() {
				w := ws[i&4095]
				i++
				id, err := pl.Add(w.start, w.dur, w.amount)
				if err != nil {
					b.Fatal(err)
				}
				pl.Remove(id)
			}
		})
	}
}

func BenchmarkUsedMax(b *testing.B) {
	for _, p := range benchSizes {
		b.Run(benchName(p), func(b *testing.B) {
			pl := filled(p, 1<<40, 100, 10)
			ws := randWindows(rand.New(rand.NewPCG(9, 9)), 4096, p, 1000, 1)
			i := 0
			for b.Loop() {
				w := ws[i&4095]
				i++
				pl.UsedMax(w.start, w.dur)
			}
		})
	}
}

// tiled returns a planner of capacity 8 holding p spans laid out as
// identical tiles of 10 random spans: every span starts in the first half
// of its 200-long tile and ends by 150, so each tile has a free tail of at
// least 50. A search for a window of up to 50 thus ends within two tiles
// and skips the same number of blocking regions whatever P is, which makes
// timings at different P comparable.
func tiled(p int) *Planner {
	rng := rand.New(rand.NewPCG(3, 3))
	tile := New(8)
	var spans []window
	for len(spans) < 10 {
		w := window{rng.Int64N(100), rng.Int64N(50) + 1, rng.Int64N(3) + 1}
		if _, err := tile.Add(w.start, w.dur, w.amount); err == nil {
			spans = append(spans, w)
		}
	}
	pl := New(8)
	for i := 0; pl.NumSpans() < p; i++ {
		w := spans[i%10]
		if _, err := pl.Add(int64(i/10)*200+w.start, w.dur, w.amount); err != nil {
			panic(err)
		}
	}
	return pl
}

// BenchmarkEarliestFit asks for 6 of 8 units for up to 50 time units from a
// random start in a tiled planner (see tiled).
func BenchmarkEarliestFit(b *testing.B) {
	for _, p := range benchSizes {
		b.Run(benchName(p), func(b *testing.B) {
			pl := tiled(p)
			rng := rand.New(rand.NewPCG(9, 9))
			ws := make([]window, 4096)
			for i := range ws {
				ws[i] = window{rng.Int64N(int64(p/10-2) * 200), rng.Int64N(50) + 1, 6}
			}
			i := 0
			for b.Loop() {
				w := ws[i&4095]
				i++
				if _, ok := pl.EarliestFit(w.start, w.dur, w.amount); !ok {
					b.Fatal("no fit")
				}
			}
		})
	}
}

func BenchmarkMultiAdd(b *testing.B) {
	caps := []int64{1 << 30, 1 << 30, 1 << 30}
	for _, p := range benchSizes {
		b.Run(benchName(p), func(b *testing.B) {
			m := filledMulti(p, caps, 100)
			ws := randWindows(rand.New(rand.NewPCG(9, 9)), 4096, p, 100, 10)
			i := 0
			for b.Loop() {
				w := ws[i&4095]
				i++
				id, err := m.Add(w.start, w.dur, []int64{w.amount, 0, 1})
				if err != nil {
					b.Fatal(err)
				}
				m.Remove(id)
			}
		})
	}
}

func BenchmarkMultiFits(b *testing.B) {
	caps := []int64{64, 32, 16}
	for _, p := range benchSizes {
		b.Run(benchName(p), func(b *testing.B) {
			m := filledMulti(p, caps, 40)
			ws := randWindows(rand.New(rand.NewPCG(9, 9)), 4096, p, 100, 1)
			a := []int64{8, 4, 2}
			i := 0
			for b.Loop() {
				w := ws[i&4095]
				i++
				m.Fits(w.start, w.dur, a)
			}
		})
	}
}

func BenchmarkMultiEarliestFit(b *testing.B) {
	caps := []int64{64, 32, 16}
	for _, p := range benchSizes {
		b.Run(benchName(p), func(b *testing.B) {
			m := filledMulti(p, caps, 40)
			ws := randWindows(rand.New(rand.NewPCG(9, 9)), 4096, p, 50, 1)
			a := []int64{40, 20, 10}
			i := 0
			for b.Loop() {
				w := ws[i&4095]
				i++
				if _, ok := m.EarliestFit(w.start, w.dur, a); !ok {
					b.Fatal("no fit")
				}
			}
		})
	}
}

var sinkPlanner *Planner

// BenchmarkEmptyPlannerAlloc shows what a lazily created vertex planner
// costs before it holds anything.
func BenchmarkEmptyPlannerAlloc(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkPlanner = New(16)
	}
}

// BenchmarkOneSpanPlannerAlloc is the typical vertex planner: one span.
func BenchmarkOneSpanPlannerAlloc(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		p := New(16)
		p.Add(10, 20, 1)
		sinkPlanner = p
	}
}
