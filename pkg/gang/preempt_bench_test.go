package gang

import (
	"fmt"
	"math/rand/v2"
	"testing"

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
	cands, _ := c.victims(g, &Preemption{})
	doms := c.preemptDomains(g, a)
	var s *search
	var best found[victim]
	b.ResetTimer()
	for b.Loop() {
		s = &search{cap: searchCap}
		best, _ = c.cheapestGroups(g, s, doms, cands, nil)
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
