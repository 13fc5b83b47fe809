package gang

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// Levels of the benchmark cluster: 5 zones of 5 blocks of 5 racks of 40
// nodes, 5,000 nodes in all.
const (
	benchZone  = "topology.kubernetes.io/zone"
	benchBlock = "example.com/block"
	benchRack  = "example.com/rack"
)

// topologyBenchCore is a core over 5,000 nodes of 32 CPUs in a
// zone/block/rack hierarchy, with about half of every node's CPUs held by
// single pods of random sizes, so racks are fragmented unevenly.
func topologyBenchCore(b *testing.B) (*Core, *Framework) {
	b.Helper()
	c, err := New(Config{Queue: queue.Config{Policy: queue.Easy}, RunID: "bench",
		TopologyLevels: []string{benchZone, benchBlock, benchRack}})
	if err != nil {
		b.Fatal(err)
	}
	const nodes = 5000
	for i := range nodes {
		rack := i / 40
		c.NodeSet(Node{Name: fmt.Sprintf("node-%05d", i),
			Labels:      map[string]string{benchZone: fmt.Sprintf("z%d", rack/25), benchBlock: fmt.Sprintf("b%d", rack/5), benchRack: fmt.Sprintf("r%03d", rack)},
			Allocatable: Resources{MilliCPU: 32000, MemoryBytes: 128 << 30, Pods: 110}}, 0)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range nodes {
		// Racks differ in load: rack k is loaded by (k%4)/4 of 32 CPUs,
		// spread as pods of 2-8 CPUs.
		load := int64((i/40)%4) * 8000
		for p := 0; load > 0; p++ {
			cpu := min(load, int64(2000*(1+rng.IntN(4))))
			load -= cpu
			c.PodSeen(Pod{UID: fmt.Sprintf("bg-%d-%d", i, p), Namespace: "bg", Name: fmt.Sprintf("bg-%d-%d", i, p),
				Requests: Resources{MilliCPU: cpu}, NodeName: fmt.Sprintf("node-%05d", i)}, 0)
		}
	}
	return c, warmFramework(b, c)
}

// runAndClear runs the framework until the group of the pods is placed
// (timed), then removes the pods and runs a loop (untimed), so that the
// next iteration meets the same cluster; it reports whether every pod
// was placed.
func runAndClear(b *testing.B, c *Core, fw *Framework, uids []string, now int64) bool {
	fw.Run(now)
	b.StopTimer()
	placed := fw.Pending() == 0
	for _, uid := range uids {
		fw.Remove(uid)
		c.PodRemoved(uid, now)
	}
	c.Tick(now)
	c.Ready()
	b.StartTimer()
	return placed
}

// warmFramework is a framework over c whose engine (graph, matcher, the
// foreign pods' load) is built: the first decision builds it, so a
// benchmark makes one before its timed part.
func warmFramework(b *testing.B, c *Core) *Framework {
	b.Helper()
	fw := NewFramework(c, nil)
	id := NewGroupID("ns", "warm", 1, SourceLabel)
	fw.Add(Pod{UID: "warm", Namespace: "ns", Name: "warm", Owned: true, Requests: Resources{MilliCPU: 1000}, Labeled: id}, id, 0)
	fw.Run(0)
	if fw.Pending() != 0 {
		b.Fatal("the warm-up pod was not placed")
	}
	return fw
}

// BenchmarkTopologyPlacement is the time the core takes, at 5,000 nodes,
// to place one group of 8-64 pods that must be within one rack or one
// block, from its first pod's arrival to its last pod's binding: the
// pods' scheduling cycles, the request's build, the matcher's search for
// a domain and the commit. Each group is removed (untimed) once placed,
// so every iteration meets the same cluster. "unconfined" is the same
// groups with no topology, for a baseline in the same run. The matcher's
// search is about a tenth of the figure; most of it is the per-pod work
// of the cycles, which the baseline shares.
func BenchmarkTopologyPlacement(b *testing.B) {
	for _, tc := range []struct {
		name, required string
		mixed          bool
	}{
		{"unconfined", "", false},
		{"rack", benchRack, false},
		{"block", benchBlock, false},
		// Every other pod asks twice the CPUs: the exact packing is
		// tried where the first fit fails.
		{"rack-mixed", benchRack, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c, fw := topologyBenchCore(b)
			rng := rand.New(rand.NewPCG(3, 4))
			placed := 0
			b.ResetTimer()
			for i := range b.N {
				size := int32(8 + rng.IntN(57))
				cpu := int64(1000 * (1 + rng.IntN(4)))
				if tc.required == benchRack {
					// A rack holds at most 40 x 32 CPUs.
					cpu = min(cpu, 1280000/int64(size)/2)
				}
				id := NewGroupID("ns", fmt.Sprintf("g%d", i), size, SourceLabel)
				id.TopologyKey = tc.required
				now := int64(i + 1)
				uids := make([]string, size)
				for p := range size {
					uids[p] = fmt.Sprintf("g%d-%d", i, p)
					ask := cpu
					if tc.mixed && p%2 == 1 {
						ask *= 2
					}
					fw.Add(Pod{UID: uids[p], Namespace: "ns", Name: uids[p], Owned: true,
						Requests: Resources{MilliCPU: ask}, Labeled: id}, id, now)
				}
				if runAndClear(b, c, fw, uids, now) {
					placed++
				}
			}
			b.ReportMetric(float64(placed)/float64(b.N), "placed/op")
		})
	}
}

// BenchmarkTopologyWaiting is the cost of one engine loop at 5,000 nodes
// while groups required within one rack wait for one: every rack is held
// by a running group until t=100, and ten mixed groups (pods of 8 and 16
// CPUs) wait, each reserved in the rack that frees first. Each loop
// plans the reservations again, which is where a mixed group's exact
// packing would cost most. "unconfined" is the same with no topology.
func BenchmarkTopologyWaiting(b *testing.B) {
	for _, tc := range []struct{ name, required string }{
		{"unconfined", ""},
		{"rack", benchRack},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c, fw := topologyBenchCore(b)
			for r := range 125 {
				id := NewGroupID("ns", fmt.Sprintf("full%d", r), 40, SourceLabel)
				id.TopologyKey = benchRack
				for p := range 40 {
					uid := fmt.Sprintf("full%d-%d", r, p)
					fw.Add(Pod{UID: uid, Namespace: "ns", Name: uid, Owned: true, Duration: 100,
						Requests: Resources{MilliCPU: 32000 - int64((r%4)*8000) - 1000}, Labeled: id}, id, 0)
				}
				fw.Run(0)
			}
			for g := range 10 {
				id := NewGroupID("ns", fmt.Sprintf("wait%d", g), 20, SourceLabel)
				id.TopologyKey = tc.required
				for p := range 20 {
					uid := fmt.Sprintf("wait%d-%d", g, p)
					fw.Add(Pod{UID: uid, Namespace: "ns", Name: uid, Owned: true,
						Requests: Resources{MilliCPU: int64(8000 * (1 + p%2))}, Labeled: id}, id, 0)
				}
			}
			fw.Run(0)
			if st := c.Stats(); st.Queued == 0 {
				b.Fatalf("no group waits: %+v", st)
			}
			reserved := c.Stats().Reserved
			b.ResetTimer()
			for i := range b.N {
				// A pod of another scheduler ends: resources are freed,
				// so the loop plans the queue again.
				uid := fmt.Sprintf("bg-%d-0", (i*40+3)%5000)
				c.PodRemoved(uid, 1)
				c.Tick(1)
				c.Ready()
			}
			b.ReportMetric(float64(reserved), "reserved")
		})
	}
}
