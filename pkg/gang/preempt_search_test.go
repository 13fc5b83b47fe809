package gang

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fluence-sched/fluence/pkg/jobspec"
)

// testItem is a candidate of the search's own tests: a price, and what
// it frees in each domain.
type testItem struct {
	p     price
	frees []int64
}

func (t testItem) price() price { return t.p }

// TestCheapestRoomSynthetic checks the search alone, with an oracle of
// its own (a domain fits when what the victims free there reaches its
// need), against every subset: on 400 seeded cases of up to 12
// candidates over 3 domains the search finds the cheapest set within
// its cap, and with a cap of 4 probes it falls back to a set that fits.
func TestCheapestRoomSynthetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 3))
	var doms []preemptDomain
	for d := range 3 {
		// A request of its own per domain: the oracle knows it by it.
		doms = append(doms, preemptDomain{name: fmt.Sprintf("d%d", d), js: &jobspec.Jobspec{}, nodes: map[string]bool{fmt.Sprint(d): true}})
	}
	greedy := 0
	for i := range 400 {
		var cands []testItem
		for j := range 4 + rng.IntN(9) {
			it := testItem{p: price{prio: int32(rng.IntN(3)), lost: int64(rng.IntN(50)), key: string(rune('a' + j))}, frees: make([]int64, 3)}
			for d := range 3 {
				if rng.IntN(2) == 0 {
					it.frees[d] = int64(rng.IntN(4))
				}
			}
			cands = append(cands, it)
		}
		need := []int64{int64(3 + rng.IntN(8)), int64(3 + rng.IntN(8)), int64(3 + rng.IntN(8))}
		domOf := func(name string) int { return int(name[1] - '0') }
		in := func(it testItem, dom preemptDomain) bool {
			for d, f := range it.frees {
				if f > 0 && dom.nodes[string(rune('0'+d))] {
					return true
				}
			}
			return false
		}
		fitsIn := func(d int, set []testItem) bool {
			var sum int64
			for _, it := range set {
				sum += it.frees[d]
			}
			return sum >= need[d]
		}
		// Brute force.
		var want setCost
		wantOK := false
		for mask := 1; mask < 1<<len(cands); mask++ {
			var set []testItem
			for j, it := range cands {
				if mask&(1<<j) != 0 {
					set = append(set, it)
				}
			}
			for d := range 3 {
				if fitsIn(d, set) {
					if c := costOf(set); !wantOK || compareCost(c, want) < 0 {
						want, wantOK = c, true
					}
				}
			}
		}
		for _, limit := range []int{searchCap, 4} {
			s := &search{cap: limit}
			best, _ := cheapestRoom(s, doms, slices.Clone(cands), in, func(js *jobspec.Jobspec, set []testItem) bool {
				return fitsIn(slices.IndexFunc(doms, func(d preemptDomain) bool { return d.js == js }), set)
			})
			if s.greedy {
				greedy++
			}
			switch {
			case best.ok != wantOK:
				t.Fatalf("case %d cap %d: found %v, brute force %v", i, limit, best.ok, wantOK)
			case !best.ok:
			case !fitsIn(domOf(best.domain), best.set):
				t.Fatalf("case %d cap %d: %v does not fit in %s", i, limit, best.set, best.domain)
			case limit == searchCap && (s.greedy || compareCost(best.cost, want) != 0):
				t.Fatalf("case %d: cost %+v, the cheapest is %+v (greedy %v, %d probes)", i, best.cost, want, s.greedy, s.probes)
			}
		}
	}
	if greedy < 100 {
		t.Fatalf("the cap of 4 probes sent only %d cases to the greedy fallback", greedy)
	}
}
