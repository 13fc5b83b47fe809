package gang

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/queue"
)

// BenchmarkPreemptSearch times one preemption's choice of victims on
// 1,000 nodes of 8 CPUs in 50 racks of 20, every node held by gangs of
// four whole nodes (five per rack) of priorities 5, 10 and 20 and
// random ages, some checkpointed: a gang of eight whole nodes required
// within one rack must evict two gangs of one rack, of 50 racks to
// weigh. It reports the matcher probes made and whether the search
// stayed exact (cap 512).
func BenchmarkPreemptSearch(b *testing.B) {
	const rackKey = "example.com/rack"
	c, err := New(Config{Queue: queue.Config{Policy: queue.Easy}, RunID: "bench", TopologyLevels: []string{rackKey}})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		c.NodeSet(Node{Name: fmt.Sprintf("n%04d", i), Labels: map[string]string{rackKey: fmt.Sprintf("r%02d", i/20)},
			Allocatable: Resources{MilliCPU: 8000, MemoryBytes: 32 << 30, Pods: 110}}, 0)
	}
	fw := NewFramework(c, func(*Pod, string) error { return nil })
	rng := rand.New(rand.NewPCG(37, 4))
	prios := []int32{5, 10, 20}
	for i := range 250 {
		id := NewGroupID("ns", fmt.Sprintf("g%03d", i), 4, SourceLabel)
		id.TopologyKey = rackKey
		start := int64(i)
		prio := prios[rng.IntN(len(prios))]
		var pods []Pod
		for p := range 4 {
			uid := fmt.Sprintf("g%03d-%d", i, p)
			pod := Pod{UID: uid, Namespace: "ns", Name: uid, Owned: true, Priority: prio, Labeled: id, Requests: Resources{MilliCPU: 8000}}
			fw.Add(pod, id, start)
			pods = append(pods, pod)
		}
		fw.Run(start)
		if rng.IntN(2) == 0 {
			for _, pod := range pods {
				_, s := c.groups[id.Key].slotOf(pod.UID)
				pod.NodeName = s.node
				pod.Checkpointed, pod.HasCheckpoint = start+int64(rng.IntN(1000)), true
				c.PodSeen(pod, start)
			}
		}
	}
	if fw.Pending() != 0 {
		b.Fatalf("%d background pods not placed", fw.Pending())
	}
	const now = 2000
	id := NewGroupID("ns", "h", 8, SourceLabel)
	id.TopologyKey = rackKey
	for p := range 8 {
		uid := fmt.Sprintf("h-%d", p)
		fw.Add(Pod{UID: uid, Namespace: "ns", Name: uid, Owned: true, Priority: 100, Labeled: id, Requests: Resources{MilliCPU: 8000}}, id, now)
	}
	fw.Run(now)
	c.now = now
	g := c.groups["ns/h"]
	a := c.waitingAlloc(g)
	cands, _, _ := c.victims(g, &Preemption{})
	doms := c.preemptDomains(g, a)
	var s *search
	var best found[victim]
	b.ResetTimer()
	for b.Loop() {
		s = &search{cap: searchCap}
		best, _ = c.cheapestGroups(g, s, a, doms, cands, nil)
	}
	if !best.ok || len(best.set) != 2 {
		b.Fatalf("evicts %d groups, want 2", len(best.set))
	}
	b.ReportMetric(float64(s.probes), "probes/op")
	exact := 1.0
	if s.greedy {
		exact = 0
	}
	b.ReportMetric(exact, "exact")
}

// BenchmarkPreemptLonePods times the greedy search where upstream's
// preemption workload without PodGroups took fluence's scheduler over
// nine minutes: ten lone running pods of 300m on every 4-CPU node, and a
// lone preemptor of 3970m that needs one node freed whole. The victims
// are lone groups, cheapest first in no order of node, so the shortest
// room-making prefix holds thousands. "halving" is fewest; "one-by-one"
// the former prefix scan and member-by-member sparing it replaced (the
// baseline, run on the smaller cluster only: it is quadratic). Both
// report the victims their probes asked the planner about.
func BenchmarkPreemptLonePods(b *testing.B) {
	for _, nodes := range []int{200, 1000} {
		c, g, cands, fits := lonePodsCluster(b, nodes)
		_ = g
		for _, v := range []struct {
			name   string
			fewest func([]victim, func([]victim) bool) ([]victim, bool)
		}{{"halving", fewest[victim]}, {"one-by-one", fewestOneByOne[victim]}} {
			if v.name == "one-by-one" && nodes > 200 {
				continue
			}
			b.Run(fmt.Sprintf("nodes=%d/%s", nodes, v.name), func(b *testing.B) {
				asked := 0
				counted := func(set []victim) bool { asked += len(set); return fits(set) }
				var set []victim
				for b.Loop() {
					asked = 0
					ordered := slices.Clone(cands)
					slices.SortStableFunc(ordered, func(a, b victim) int { return comparePrice(a.price(), b.price()) })
					set, _ = v.fewest(ordered, counted)
				}
				if len(set) != 10 {
					b.Fatalf("evicts %d pods, want the 10 of one node", len(set))
				}
				b.ReportMetric(float64(asked), "victims-asked/op")
			})
		}
		_ = c
	}
}

// lonePodsCluster is BenchmarkPreemptLonePods' cluster, its preemptor
// and candidates, and the matcher question cheapestGroups asks.
func lonePodsCluster(b *testing.B, nodes int) (*Core, *group, []victim, func([]victim) bool) {
	b.Helper()
	c, err := New(Config{Queue: queue.Config{Policy: queue.Easy}, RunID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	for i := range nodes {
		c.NodeSet(Node{Name: fmt.Sprintf("n%04d", i), Allocatable: Resources{MilliCPU: 4000, MemoryBytes: 32 << 30, Pods: 110}}, 0)
	}
	rng := rand.New(rand.NewPCG(11, 3))
	for i := range nodes * 10 {
		uid := fmt.Sprintf("lo-%05d", i)
		c.PodSeen(Pod{UID: uid, Namespace: "ns", Name: uid, Owned: true, NodeName: fmt.Sprintf("n%04d", i%nodes),
			Allocation: "ns/pod:" + uid + "@bench-1", Ran: int64(rng.IntN(1000)), Requests: Resources{MilliCPU: 300}}, 0)
	}
	fw := NewFramework(c, func(*Pod, string) error { return nil })
	const now = 2000
	id := NewGroupID("ns", "h", 1, SourceLabel)
	fw.Add(Pod{UID: "h-0", Namespace: "ns", Name: "h-0", Owned: true, Priority: 100, Labeled: id, Requests: Resources{MilliCPU: 3970}}, id, now)
	fw.Run(now)
	c.now = now
	g := c.groups["ns/h"]
	if g == nil {
		b.Fatal("no group ns/h")
	}
	a := c.waitingAlloc(g)
	cands, _, _ := c.victims(g, &Preemption{})
	if len(cands) != nodes*10 {
		b.Fatalf("%d candidates, want %d", len(cands), nodes*10)
	}
	fits := func(set []victim) bool {
		var without []int64
		for _, v := range set {
			without = append(without, v.ids...)
		}
		r, err := c.m.FitsWithout(a.js, probeJob, c.now, without)
		return err == nil && r.Status == match.Allocated
	}
	return c, g, slices.Clone(cands), fits // victims' list is the core's scratch
}

// fewestOneByOne is fewest as it was: the prefix grown one candidate at a
// time, then each member spared alone, dearest first. Quadratic.
func fewestOneByOne[T any](cands []T, fits func([]T) bool) ([]T, bool) {
	n := 0
	for n < len(cands) && !fits(cands[:n+1]) {
		n++
	}
	if n == len(cands) {
		return nil, false
	}
	chosen := slices.Clone(cands[:n+1])
	for i := len(chosen) - 1; i >= 0 && len(chosen) > 1; i-- {
		rest := slices.Delete(slices.Clone(chosen), i, i+1)
		if fits(rest) {
			chosen = rest
		}
	}
	return chosen, true
}

// BenchmarkPreemptLonePodsByNode is BenchmarkPreemptLonePods' cluster
// searched as a lone preemptor's room is now: node by node
// (preempt_nodes.go), against the search over the whole cluster at once
// (cheapestRoom, greedy past its bounds) in the same run. "victims" is
// the candidates' listing every preemption starts with, for scale: the
// groups' records are kept from the first call, as they are between two
// preemptions for every group nothing happened to. It reports the
// matcher probes each search made.
func BenchmarkPreemptLonePodsByNode(b *testing.B) {
	for _, nodes := range []int{200, 1000} {
		c, g, cands, fits := lonePodsCluster(b, nodes)
		a := c.waitingAlloc(g)
		doms := c.preemptDomains(g, a)
		b.Run(fmt.Sprintf("nodes=%d/by-node", nodes), func(b *testing.B) {
			var s *search
			var best found[victim]
			for b.Loop() {
				s = &search{cap: searchCap}
				best, _ = c.cheapestGroups(g, s, a, doms, slices.Clone(cands), nil)
			}
			if !best.ok || len(best.set) != 10 || s.greedy {
				b.Fatalf("evicts %d pods (exact: %v), want the 10 of one node", len(best.set), !s.greedy)
			}
			b.ReportMetric(float64(s.probes), "probes/op")
		})
		b.Run(fmt.Sprintf("nodes=%d/whole-cluster", nodes), func(b *testing.B) {
			var s *search
			var best found[victim]
			in := func(victim, preemptDomain) bool { return true }
			for b.Loop() {
				s = &search{cap: searchCap}
				best, _ = cheapestRoom(s, doms, slices.Clone(cands), in, func(_ *jobspec.Jobspec, set []victim) bool { return fits(set) })
			}
			if !best.ok || len(best.set) != 10 {
				b.Fatalf("evicts %d pods, want the 10 of one node", len(best.set))
			}
			b.ReportMetric(float64(s.probes), "probes/op")
		})
		b.Run(fmt.Sprintf("nodes=%d/victims", nodes), func(b *testing.B) {
			for b.Loop() {
				c.victims(g, &Preemption{})
			}
		})
	}
}
