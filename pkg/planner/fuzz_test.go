package planner

import (
	"math/rand/v2"
	"testing"
)

// FuzzPlannerOps reads the input as: one header byte choosing a Planner
// (even) or a 3-dimensional Multi (odd) and the capacities, then 4-byte
// operations. Every operation is applied to the subject and the model, and
// the whole observable state is compared after each.
func FuzzPlannerOps(f *testing.F) {
	f.Add([]byte{0x04, 0, 0, 9, 3, 0, 10, 9, 3, 4, 5, 9, 2})
	f.Add([]byte{0x07, 0, 0, 9, 0xff, 0, 10, 9, 0x55, 2, 0, 0, 0, 3, 1, 0, 1})
	f.Add([]byte{0x02, 0, 47, 15, 1, 4, 20, 5, 1, 1, 0, 0, 0, 1, 20, 3, 1})
	f.Add([]byte{0x09, 4, 3, 3, 0x3f, 0, 0, 15, 0x3f, 3, 1, 0, 0x11, 2, 0, 0, 0})
	rng := rand.New(rand.NewPCG(1, 2))
	for range 6 {
		seed := make([]byte, 1+4*40)
		for i := range seed {
			seed[i] = byte(rng.Uint32())
		}
		f.Add(seed)
	}
	f.Fuzz(runFuzzBody)
}

func runFuzzBody(t *testing.T, data []byte) {
	if len(data) == 0 {
		return
	}
	hdr := data[0]
	var caps []int64
	if hdr%2 == 0 {
		caps = []int64{1 + int64(hdr>>1)%6}
	} else {
		caps = []int64{1 + int64(hdr>>1)%3, 1 + int64(hdr>>3)%4, 1 + int64(hdr>>5)%2}
	}
	h := newHarness(t, caps)
	ops := data[1:]
	for i := 0; i+4 <= len(ops) && i < 4*80; i += 4 {
		h.step = i / 4
		op, b1, b2, b3 := ops[i], ops[i+1], ops[i+2], ops[i+3]
		start, dur := int64(b1%maxStart), 1+int64(b2%maxDur)
		a := fuzzAmounts(caps, b3)
		switch op % 5 {
		case 0, 1:
			h.add(start, dur, a)
		case 2:
			id := SpanID(1 << 20)
			if k := int(b1) % (len(h.ids) + 1); k < len(h.ids) {
				id = h.ids[k]
			}
			h.remove(id)
		case 3:
			if len(h.ids) == 0 {
				break
			}
			id := h.ids[int(b1)%len(h.ids)]
			by := make([]int64, len(caps))
			for d, x := range h.m.spans[id].amts {
				by[d] = min(x, a[d])
			}
			h.reduce(id, by)
		case 4:
			h.addRemove(start, dur, a)
		}
		h.check([]query{
			{at: int64(b1%(horizon+4)) - 2, dur: 1 + int64(b3%24), on: int64(b2 % (horizon + 4)), amts: a},
			{at: int64(b2 % horizon), dur: 1 + int64(b1%40), on: int64(b1%horizon) - 1, amts: fuzzAmounts(caps, b3^b2)},
		})
	}
}

// fuzzAmounts spreads one byte over the dimensions, two bits each, which
// sometimes exceeds a capacity so invalid amounts are exercised as well.
func fuzzAmounts(caps []int64, b byte) []int64 {
	if len(caps) == 1 {
		return []int64{int64(b) % (caps[0] + 2)}
	}
	a := make([]int64, len(caps))
	for d := range a {
		a[d] = int64(b>>(2*d)) & 3
	}
	return a
}
