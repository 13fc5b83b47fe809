package planner

import (
	"math/rand/v2"
	"testing"
)

// randAmounts draws a vector up to capacity, now and then over it or
// negative so that invalid arguments are exercised too.
func randAmounts(rng *rand.Rand, caps []int64) []int64 {
	a := make([]int64, len(caps))
	for d, c := range caps {
		switch r := rng.IntN(100); {
		case r < 3:
			a[d] = c + 1
		case r < 4:
			a[d] = -1
		case r < 30:
			a[d] = 0
		default:
			a[d] = rng.Int64N(c + 1)
		}
	}
	return a
}

func randQueries(rng *rand.Rand, caps []int64, n int) []query {
	qs := make([]query, n)
	for i := range qs {
		qs[i] = query{
			at:   rng.Int64N(horizon+8) - 3,
			dur:  rng.Int64N(24) + 1,
			on:   rng.Int64N(horizon+8) - 3,
			amts: randAmounts(rng, caps),
		}
	}
	return qs
}

// runRandom drives n random operations, checking every observable answer
// against the model after each one.
func runRandom(t *testing.T, caps []int64, seed uint64, n int) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	h := newHarness(t, caps)
	for i := range n {
		h.step = i
		start := rng.Int64N(maxStart)
		dur := rng.Int64N(maxDur) + 1
		switch r := rng.IntN(1000); {
		case r < 20: // invalid window
			h.add(rng.Int64N(5)-3, rng.Int64N(3)-1, randAmounts(rng, caps))
		case r < 450:
			h.add(start, dur, randAmounts(rng, caps))
		case r < 600:
			id := SpanID(rng.IntN(3)) * 1000 // mostly unknown
			if len(h.ids) > 0 && rng.IntN(10) > 0 {
				id = h.ids[rng.IntN(len(h.ids))]
			}
			h.remove(id)
		case r < 750:
			if len(h.ids) == 0 {
				h.reduce(7777, make([]int64, len(caps)))
				break
			}
			id := h.ids[rng.IntN(len(h.ids))]
			by := make([]int64, len(caps))
			for d, a := range h.m.spans[id].amts {
				by[d] = rng.Int64N(a + 1)
				if rng.IntN(20) == 0 {
					by[d] = a + 1 // invalid
				}
			}
			h.reduce(id, by)
		case r < 997:
			h.addRemove(start, dur, randAmounts(rng, caps))
		default:
			h.reset()
		}
		qs := randQueries(rng, caps, 6)
		if i%50 == 0 {
			qs = append(qs, longQueries(caps)...)
		}
		h.check(qs)
	}
}

func TestPropertyPlanner(t *testing.T) {
	for seed := range uint64(4) {
		runRandom(t, []int64{5}, seed, 3000)
	}
}

func TestPropertyMulti(t *testing.T) {
	for seed := range uint64(4) {
		runRandom(t, []int64{4, 7, 2}, seed+100, 3000)
	}
}

// Dimensions of capacity 0 are left out of the tree: answers must be as
// if they were there (always 0 used, nothing above 0 fits).
func TestPropertyMultiZeroCapacities(t *testing.T) {
	for i, caps := range [][]int64{{0, 4, 0, 7, 2, 0}, {0, 0}, {3, 0}} {
		for seed := range uint64(2) {
			runRandom(t, caps, seed+200+uint64(10*i), 3000)
		}
	}
}
