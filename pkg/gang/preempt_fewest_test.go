package gang

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// fewest on random monotone oracles: candidates are lone pods spread over
// nodes, and room is one node freed of at least need CPUs. Its answer
// makes room, is the shortest room-making prefix pruned, and spares no
// single member it could; and its probes ask about O(n log n) victims,
// not O(n²): ten thousand candidates in a few hundred thousand.
func TestFewestIsMinimalAndBounded(t *testing.T) {
	type cand struct{ node, cpu int }
	for seed := range 200 {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		n := 1 + r.IntN(60)
		if seed%50 == 0 {
			n = 10000 // the scale a thousand nodes of lone pods gave
		}
		nodes := 1 + r.IntN(max(n/4, 1))
		cands := make([]cand, n)
		for i := range cands {
			cands[i] = cand{node: r.IntN(nodes), cpu: 1 + r.IntN(4)}
		}
		need := 1 + r.IntN(8)
		if n == 10000 {
			// Upstream's preemption workload: ten lone pods on each of a
			// thousand nodes, cheapest first in no order of node, and a
			// preemptor needing a node freed whole.
			for i := range cands {
				cands[i] = cand{node: i % 1000, cpu: 3}
			}
			r.Shuffle(n, func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
			need = 30
		}
		work := 0
		fits := func(set []cand) bool {
			work += len(set)
			freed := map[int]int{}
			for _, c := range set {
				freed[c.node] += c.cpu
				if freed[c.node] >= need {
					return true
				}
			}
			return false
		}
		set, ok := fewest(cands, fits)
		if !ok {
			if fits(cands) {
				t.Fatalf("seed %d: no answer, though every candidate gone makes room", seed)
			}
			continue
		}
		if !fits(set) {
			t.Fatalf("seed %d: %v does not make room", seed, set)
		}
		for i := range set {
			if fits(slices.Delete(slices.Clone(set), i, i+1)) {
				t.Fatalf("seed %d: %v makes room without its member %d", seed, set, i)
			}
		}
		if n == 10000 && work > 1000000 {
			t.Errorf("seed %d: %d candidates took probes over %d victims; want O(n log n)", seed, n, work)
		}
		if n == 10000 {
			t.Logf("seed %d: %d candidates, %d victims asked about, answer of %d", seed, n, work, len(set))
		}
	}
}
