package gang

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// The exactness check: the victims a preemptor chooses are compared with
// a brute-force optimum on small random clusters. The brute force knows
// nothing of the core's search: it packs pods onto nodes itself (every
// assignment), enumerates every subset of the groups the preemptor may
// evict, and prices each with its own reading of the cost
// (preempt_cost.go): per priority, highest first, the work lost and the
// number of victims, then the victims' keys.

const (
	bfRack      = "example.com/rack"
	bfNodeLabel = "example.com/node"
	bfNow       = 1000 // when the preemptor arrives
	bfMinRun    = 100  // Preemption.MinRuntime
	bfPrio      = 100  // the preemptor's priority
)

// bfGroup is a running group of a case.
type bfGroup struct {
	key   string
	prio  int32
	start int64
	ckpt  []int64 // per pod, its checkpoint; -1 for none
	cpu   []int64 // per pod, its CPUs (cores)
	node  []int   // per pod, its node
}

// bfCase is a cluster of racks, the groups running on it, and a
// preemptor.
type bfCase struct {
	rackOf []int   // per node, its rack
	cpus   []int64 // per node, its CPUs (cores)
	groups []bfGroup
	pods   []int64 // the preemptor's pods' CPUs (cores)
	inRack bool    // the preemptor is required within one rack
	racks  int
	// flat: the rack label is no topology level of the graph, so a
	// request is confined to one rack by a constraint (topology.go).
	flat bool
}

func (bc bfCase) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "nodes (rack:cpus)")
	for n := range bc.cpus {
		fmt.Fprintf(&b, " n%d=r%d:%d", n, bc.rackOf[n], bc.cpus[n])
	}
	for _, g := range bc.groups {
		fmt.Fprintf(&b, "; %s prio=%d start=%d ckpt=%v cpu=%v nodes=%v", g.key, g.prio, g.start, g.ckpt, g.cpu, g.node)
	}
	fmt.Fprintf(&b, "; preemptor cpu=%v inRack=%v flat=%v", bc.pods, bc.inRack, bc.flat)
	return b.String()
}

// randomBFCase places random groups where they fit, pinned to their
// nodes, each started at its own time, some checkpointed. A preemptor
// required within one rack of a topology level has pods of mixed sizes,
// which the matcher packs exactly within a level's domain
// (TestTopologyPlacementIsExact); one placed anywhere, or within a rack
// of a label that is no level (a constraint on a match over the whole
// cluster), has pods of one size, as the matcher's first fit is exact
// only for those.
func randomBFCase(rng *rand.Rand) bfCase {
	var bc bfCase
	bc.racks = 2 + rng.IntN(2)
	for r := range bc.racks {
		for range 1 + rng.IntN(3) {
			bc.rackOf = append(bc.rackOf, r)
			bc.cpus = append(bc.cpus, int64(2+rng.IntN(5)))
		}
	}
	free := slices.Clone(bc.cpus)
	prios := []int32{5, 10, 10, 20, 200} // 200: above the preemptor, never a victim
	for i := range 2 + rng.IntN(6) {
		g := bfGroup{key: fmt.Sprintf("ns/g%d", i), prio: prios[rng.IntN(len(prios))], start: int64(rng.IntN(bfNow))}
		for range 1 + rng.IntN(3) {
			cpu := int64(1 + rng.IntN(3))
			var room []int
			for n := range free {
				if free[n] >= cpu {
					room = append(room, n)
				}
			}
			if len(room) == 0 {
				continue
			}
			n := room[rng.IntN(len(room))]
			free[n] -= cpu
			ckpt := int64(-1)
			if rng.IntN(2) == 0 {
				// Sometimes before the group began: no checkpoint of this run.
				ckpt = g.start - 50 + int64(rng.IntN(int(bfNow-g.start+50)))
			}
			g.cpu, g.node, g.ckpt = append(g.cpu, cpu), append(g.node, n), append(g.ckpt, ckpt)
		}
		if len(g.cpu) > 0 {
			bc.groups = append(bc.groups, g)
		}
	}
	slices.SortFunc(bc.groups, func(a, b bfGroup) int { return cmp.Compare(a.start, b.start) })
	bc.inRack = rng.IntN(4) != 0
	bc.flat = rng.IntN(3) == 0
	size := int64(1 + rng.IntN(4))
	for range 1 + rng.IntN(4) {
		if bc.inRack && !bc.flat {
			size = int64(1 + rng.IntN(4))
		}
		bc.pods = append(bc.pods, size)
	}
	return bc
}

// candidates are the groups the preemptor may evict: of lower priority,
// and run at least bfMinRun.
func (bc bfCase) candidates() []int {
	var out []int
	for i, g := range bc.groups {
		if g.prio < bfPrio && bfNow-g.start >= bfMinRun {
			out = append(out, i)
		}
	}
	return out
}

// fits reports whether the preemptor fits with the groups of gone gone:
// within one rack, or anywhere.
func (bc bfCase) fits(gone []int) bool {
	free := slices.Clone(bc.cpus)
	for i, g := range bc.groups {
		if slices.Contains(gone, i) {
			continue
		}
		for p, n := range g.node {
			free[n] -= g.cpu[p]
		}
	}
	if !bc.inRack {
		return someRackHolds([][]int64{free}, bc.pods)
	}
	racks := make([][]int64, bc.racks)
	for n, r := range bc.rackOf {
		racks[r] = append(racks[r], free[n])
	}
	return someRackHolds(racks, bc.pods)
}

// bfCost is the brute force's price of a set: per priority present in
// the case, highest first, the work lost and the victims; then the keys.
func (bc bfCase) bfCost(set []int) ([]int64, []string) {
	var vec []int64
	var keys []string
	for _, prio := range []int32{20, 10, 5} {
		var lost, n int64
		for _, i := range set {
			g := bc.groups[i]
			if g.prio != prio {
				continue
			}
			n++
			for _, ck := range g.ckpt {
				lost += bfNow - max(g.start, ck)
			}
		}
		vec = append(vec, lost, n)
	}
	for _, i := range set {
		keys = append(keys, bc.groups[i].key)
	}
	slices.Sort(keys)
	return vec, keys
}

func (bc bfCase) cheaper(a, b []int) bool {
	va, ka := bc.bfCost(a)
	vb, kb := bc.bfCost(b)
	if c := slices.Compare(va, vb); c != 0 {
		return c < 0
	}
	return slices.Compare(ka, kb) < 0
}

// optimum is the cheapest subset of the candidates that lets the
// preemptor fit, by enumerating them all; ok false when none does.
func (bc bfCase) optimum() (best []int, ok bool) {
	cands := bc.candidates()
	for mask := range 1 << len(cands) {
		var set []int
		for j, i := range cands {
			if mask&(1<<j) != 0 {
				set = append(set, i)
			}
		}
		if bc.fits(set) && (!ok || bc.cheaper(set, best)) {
			best, ok = set, true
		}
	}
	return best, ok
}

// runBFCase runs the case on a core and returns the keys of the groups
// the preemptor evicts, sorted, and its preemption's choice note.
func runBFCase(t *testing.T, bc bfCase) ([]string, string) {
	t.Helper()
	levels := []string{bfRack}
	if bc.flat {
		levels = nil
	}
	c, err := New(Config{Queue: queue.Config{Policy: queue.Easy}, RunID: "bf", TopologyLevels: levels,
		Preemption: &Preemption{After: 1, MinRuntime: bfMinRun, Timeout: 120}})
	if err != nil {
		t.Fatal(err)
	}
	for n, cpus := range bc.cpus {
		name := fmt.Sprintf("n%d", n)
		c.NodeSet(Node{Name: name, Labels: map[string]string{bfRack: fmt.Sprintf("r%d", bc.rackOf[n]), bfNodeLabel: name},
			Allocatable: Resources{MilliCPU: 1000 * cpus, MemoryBytes: 8 << 30, Pods: 110}}, 0)
	}
	fw := NewFramework(c, func(*Pod, string) error { return nil })
	for _, g := range bc.groups {
		name := strings.TrimPrefix(g.key, "ns/")
		id := NewGroupID("ns", name, int32(len(g.cpu)), SourceLabel)
		var pods []Pod
		for p, cpu := range g.cpu {
			uid := fmt.Sprintf("%s-%d", name, p)
			pod := Pod{UID: uid, Namespace: "ns", Name: uid, Owned: true, Priority: g.prio, Labeled: id,
				Requests: Resources{MilliCPU: 1000 * cpu}, Filter: labelFilter{sel: fmt.Sprintf("%s:n%d", bfNodeLabel, g.node[p])}}
			fw.Add(pod, id, g.start)
			pods = append(pods, pod)
		}
		fw.Run(g.start)
		if fw.Pending() != 0 {
			t.Fatalf("%v: %s was not placed where it was pinned", bc, g.key)
		}
		for p, pod := range pods {
			// The workload's checkpoint, as the informer shows it once bound.
			if ck := g.ckpt[p]; ck >= 0 {
				pod.NodeName = fmt.Sprintf("n%d", g.node[p])
				pod.Checkpointed, pod.HasCheckpoint = ck, true
				c.PodSeen(pod, g.start)
			}
		}
	}
	id := NewGroupID("ns", "h", int32(len(bc.pods)), SourceLabel)
	if bc.inRack {
		id.TopologyKey = bfRack
	}
	for i, cpu := range bc.pods {
		uid := fmt.Sprintf("h-%d", i)
		fw.Add(Pod{UID: uid, Namespace: "ns", Name: uid, Owned: true, Priority: bfPrio, Labeled: id,
			Requests: Resources{MilliCPU: 1000 * cpu}}, id, bfNow)
	}
	fw.Run(bfNow)
	if err := c.CheckInvariants(); err != nil {
		t.Fatalf("%v: %v", bc, err)
	}
	var evicted []string
	for _, key := range slices.Sorted(maps.Keys(c.groups)) {
		if c.groups[key].evictedBy == "ns/h" {
			evicted = append(evicted, key)
		}
	}
	choice := ""
	if h := c.groups["ns/h"]; h != nil && h.preempt != nil {
		choice = h.preempt.choice
	}
	return evicted, choice
}

// bfOutcome is what a case asked of the preemptor.
type bfOutcome int

const (
	bfFree     bfOutcome = iota // it fits without evicting anyone
	bfHopeless                  // it cannot fit even with every candidate gone
	bfPreempts                  // it must evict the brute force's optimum
)

// checkBFCase fails the test unless the groups evicted (got, sorted keys)
// are what the case asks: none when it fits already or cannot fit at
// all, else exactly the brute force's cheapest set, which holds no group
// it could do without. It returns that set.
func checkBFCase(t *testing.T, i int, bc bfCase, got []string) ([]int, bfOutcome) {
	t.Helper()
	if bc.fits(nil) {
		if len(got) != 0 {
			t.Fatalf("case %d %v: it fits without evicting, yet evicts %v", i, bc, got)
		}
		return nil, bfFree
	}
	best, ok := bc.optimum()
	if !ok {
		if len(got) != 0 {
			t.Fatalf("case %d %v: it cannot fit even with every candidate gone, yet evicts %v", i, bc, got)
		}
		return nil, bfHopeless
	}
	var want []string
	for _, g := range best {
		want = append(want, bc.groups[g].key)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("case %d %v: evicts %v, the cheapest set is %v", i, bc, got, want)
	}
	for j := range best {
		if bc.fits(slices.Delete(slices.Clone(best), j, j+1)) {
			t.Fatalf("case %d %v: evicts %v, more than needed", i, bc, want)
		}
	}
	return best, bfPreempts
}

// TestPreemptionIsOptimal runs 800 random cases (seeded): the preemptor
// evicts exactly the brute force's cheapest set, which holds no victim
// it could do without; nothing when even all candidates gone leave it no
// room (or when it fits without them); and the search stays exact.
func TestPreemptionIsOptimal(t *testing.T) {
	const cases = 800
	rng := rand.New(rand.NewPCG(37, 2026))
	var free, hopeless, preempted, multi, byCkpt, beatGreedy, flat int
	for i := range cases {
		bc := randomBFCase(rng)
		got, choice := runBFCase(t, bc)
		best, outcome := checkBFCase(t, i, bc, got)
		switch outcome {
		case bfFree:
			free++
			continue
		case bfHopeless:
			hopeless++
			continue
		}
		if strings.Contains(choice, "greedily") {
			t.Fatalf("case %d %v: the search ran out of probes: %s", i, bc, choice)
		}
		preempted++
		if bc.flat && bc.inRack {
			flat++
		}
		if len(best) > 1 {
			multi++
		}
		if bc.withoutCheckpoints().differs(best) {
			byCkpt++
		}
		if g := bc.greedy(); !slices.Equal(g, best) {
			beatGreedy++
		}
	}
	t.Logf("%d cases: %d preempted (%d within a rack of a label that is no level, %d evicting several groups, %d where checkpoints changed the choice, %d where the former greedy choice differed, so was dearer), %d could not fit even with every candidate gone, %d fit without preempting",
		cases, preempted, flat, multi, byCkpt, beatGreedy, hopeless, free)
	if preempted < 250 || hopeless < 50 || multi < 50 || byCkpt < 8 || flat < 50 {
		t.Fatalf("the generator no longer covers the cases: %d preempted, %d several, %d by checkpoint, %d hopeless", preempted, multi, byCkpt, hopeless)
	}
}

// withoutCheckpoints is the case with no pod checkpointed.
func (bc bfCase) withoutCheckpoints() bfCase {
	out := bc
	out.groups = slices.Clone(bc.groups)
	for i := range out.groups {
		out.groups[i].ckpt = slices.Repeat([]int64{-1}, len(out.groups[i].ckpt))
	}
	return out
}

// differs reports whether the case's optimum is another set than best.
func (bc bfCase) differs(best []int) bool {
	o, _ := bc.optimum()
	return !slices.Equal(o, best)
}

// greedy is the choice preemption made before the search: candidates
// ordered by priority, then pods x time run, then key; the shortest
// prefix that makes room, each then spared, dearest first, if the rest
// still make room.
func (bc bfCase) greedy() []int {
	cands := bc.candidates()
	work := func(i int) int64 { return int64(len(bc.groups[i].cpu)) * (bfNow - bc.groups[i].start) }
	slices.SortFunc(cands, func(a, b int) int {
		ga, gb := bc.groups[a], bc.groups[b]
		if ga.prio != gb.prio {
			return cmp.Compare(ga.prio, gb.prio)
		}
		if work(a) != work(b) {
			return cmp.Compare(work(a), work(b))
		}
		return cmp.Compare(ga.key, gb.key)
	})
	set, _ := fewest(cands, bc.fits)
	slices.Sort(set)
	return set
}

// TestLonePreemptionIsOptimal is TestPreemptionIsOptimal for a preemptor
// of one pod bound to no domain, whose room the core searches node by
// node (preempt_nodes.go): 600 random cases (seeded), each the brute
// force's cheapest set, the choice naming the node it made room on.
func TestLonePreemptionIsOptimal(t *testing.T) {
	const cases = 600
	rng := rand.New(rand.NewPCG(41, 2026))
	var preempted, hopeless, multi, byCkpt int
	for i := range cases {
		bc := randomBFCase(rng)
		bc.inRack = false
		bc.pods = bc.pods[:1]
		got, choice := runBFCase(t, bc)
		best, outcome := checkBFCase(t, i, bc, got)
		switch outcome {
		case bfFree:
			continue
		case bfHopeless:
			hopeless++
			continue
		}
		if !strings.HasPrefix(choice, "on node n") || strings.Contains(choice, "greedily") {
			t.Fatalf("case %d %v: choice %q, want the node it made room on, searched exactly", i, bc, choice)
		}
		preempted++
		if len(best) > 1 {
			multi++
		}
		if bc.withoutCheckpoints().differs(best) {
			byCkpt++
		}
	}
	t.Logf("%d cases: %d preempted (%d evicting several groups, %d where checkpoints changed the choice), %d could not fit even with every candidate gone",
		cases, preempted, multi, byCkpt, hopeless)
	if preempted < 150 || hopeless < 30 || multi < 30 || byCkpt < 5 {
		t.Fatalf("the generator no longer covers the cases: %d preempted, %d several, %d by checkpoint, %d hopeless", preempted, multi, byCkpt, hopeless)
	}
}
