package gang

import (
	"fmt"
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// benchCore is a core over n nodes of 32 CPUs in pools of 100, with a
// group of 8 placed on every 10th node so a rebuild has something to
// replay.
func benchCore(b *testing.B, n int) *Core {
	return benchCoreWith(b, n, Config{})
}

// benchCoreWith is benchCore with cfg's BuildOutside.
func benchCoreWith(b *testing.B, n int, cfg Config) *Core {
	b.Helper()
	c, err := New(Config{Queue: queue.Config{Policy: queue.Easy}, RunID: "bench", BuildOutside: cfg.BuildOutside})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		c.NodeSet(benchNode(i, false), 0)
	}
	fw := NewFramework(c, nil)
	for g := range n / 10 {
		id := NewGroupID("ns", fmt.Sprintf("g%d", g), 8, SourceLabel)
		for p := range 8 {
			fw.Add(Pod{UID: fmt.Sprintf("%d-%d", g, p), Namespace: "ns", Name: fmt.Sprintf("g%d-%d", g, p), Owned: true,
				Requests: Resources{MilliCPU: 4000}, Labeled: id}, id, 0)
		}
	}
	fw.Run(0)
	if fw.Pending() != 0 {
		b.Fatalf("%d pods not placed", fw.Pending())
	}
	return c
}

// addWaiting adds, at time 1, groups of size pods, each pod asking a whole
// 32-CPU node and admitting the nodes sel gives its group.
func addWaiting(fw *Framework, groups, size int, sel func(g int) string) {
	for g := range groups {
		id := NewGroupID("wait", fmt.Sprintf("w%d", g), int32(size), SourceLabel)
		for p := range size {
			fw.Add(Pod{UID: fmt.Sprintf("w%d-%d", g, p), Namespace: "wait", Name: fmt.Sprintf("w%d-%d", g, p), Owned: true,
				Requests: Resources{MilliCPU: 32000}, Labeled: id, Filter: labelFilter{sel: sel(g)}}, id, 1)
		}
	}
}

func benchNode(i int, cordoned bool) Node {
	return Node{Name: fmt.Sprintf("node-%05d", i), Labels: map[string]string{"pool": fmt.Sprintf("p%d", i/100)},
		Allocatable: Resources{MilliCPU: 32000, MemoryBytes: 128 << 30, Pods: 110}, Down: cordoned}
}

// BenchmarkNodeChange compares, at 5,000 nodes, what one node change
// costs the core before its next decision: a change applied in place
// (cordon and uncordon, a label) against one that rebuilds the graph and
// replays every allocation (new capacity). Each iteration makes the change
// and runs a loop, so the rebuild's cost is in the figure.
func BenchmarkNodeChange(b *testing.B) {
	const n = 5000
	for _, tc := range []struct {
		name   string
		change func(i int) Node
	}{
		{"cordon-in-place", func(i int) Node { return benchNode(7, i%2 == 0) }},
		{"relabel-in-place", func(i int) Node {
			nd := benchNode(7, false)
			nd.Labels["rev"] = fmt.Sprint(i)
			return nd
		}},
		{"capacity-rebuild", func(i int) Node {
			nd := benchNode(7, false)
			nd.Allocatable.MilliCPU = 32000 + int64(i%2)*1000
			return nd
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := benchCore(b, n)
			rebuilds := c.graphGen
			b.ResetTimer()
			for i := range b.N {
				c.NodeSet(tc.change(i), int64(i+1))
				c.Tick(int64(i + 1))
				c.Ready()
			}
			b.ReportMetric(float64(c.graphGen-rebuilds)/float64(b.N), "rebuilds/op")
		})
	}
}

// BenchmarkSnapshot is what the full scans cost at 5,000 nodes with 500
// groups placed and 50 waiting (each pod with a node filter): Snapshot
// against Stats in the same run. The plugin no longer runs either under
// its lock (it publishes, BenchmarkPublish); they are the reference the
// published state is checked against.
func BenchmarkSnapshot(b *testing.B) {
	c := benchCore(b, 5000)
	fw := NewFramework(c, nil)
	addWaiting(fw, 50, 64, func(int) string { return "pool:p1" })
	fw.Run(1)
	if s := c.Snapshot(1); len(s.Queue) != 50 {
		b.Fatalf("%d groups wait, want 50", len(s.Queue))
	}
	b.Run("stats-baseline", func(b *testing.B) {
		for range b.N {
			_ = c.Stats()
		}
	})
	b.Run("snapshot", func(b *testing.B) {
		for range b.N {
			_ = c.Snapshot(2)
		}
	})
}

// BenchmarkPublish is what publishing for inspection costs the scheduler
// under its lock, at 5,000 nodes with 1,000 groups (500 placed, 500
// waiting, each waiting pod with a node filter of one of 10 pools), against
// the scan an inspection request held the lock for before (Snapshot):
//   - scan: Snapshot, groups x nodes;
//   - event: one event (a foreign pod bound, or gone, on one node with
//     room) with Ready, no Publish: the baseline;
//   - event+publish: the same with a Publish after it, as the plugin
//     did after every batch of calls (event+publish less event is what
//     publishing adds to a call);
//   - publish-idle: a Publish with nothing changed;
//   - read: what a reader of the published state spends building its
//     Snapshot, without the lock.
func BenchmarkPublish(b *testing.B) {
	c := benchCore(b, 5000)
	fw := NewFramework(c, nil)
	addWaiting(fw, 500, 8, func(g int) string { return fmt.Sprintf("pool:p%d", g%10) })
	fw.Run(1)
	if s := c.Snapshot(1); len(s.Groups) != 1000 || len(s.Nodes) != 5000 {
		b.Fatalf("%d groups and %d nodes, want 1000 and 5000", len(s.Groups), len(s.Nodes))
	}
	now := int64(2)
	event := func(i int) {
		uid := fmt.Sprintf("f%d", i/2)
		if i%2 == 0 {
			c.PodSeen(Pod{UID: uid, Namespace: "other", Name: uid, NodeName: fmt.Sprintf("node-%05d", 1000+(i/2)%4000), Requests: Resources{MilliCPU: 100}}, now)
		} else {
			c.PodRemoved(uid, now)
		}
		c.Ready()
	}
	b.Run("scan", func(b *testing.B) {
		for range b.N {
			_ = c.Snapshot(now)
		}
	})
	b.Run("event", func(b *testing.B) {
		for i := range b.N {
			event(i)
		}
	})
	c.Publish()
	b.Run("event+publish", func(b *testing.B) {
		for i := range b.N {
			event(i)
			c.Publish()
		}
	})
	b.Run("publish-idle", func(b *testing.B) {
		for range b.N {
			c.Publish()
		}
	})
	pub := c.Publish()
	b.Run("read", func(b *testing.B) {
		for range b.N {
			_ = pub.Snapshot(now)
		}
	})
}

// BenchmarkNodeArrivals is what a node arriving costs while pods are
// placed, at 5,000 nodes and more: each iteration adds a node and places
// a one-pod group. In a burst (a thousand nodes a second) the arrivals
// wait outside the graph and join it together (arrivals.go); spread a
// second apart, each arrival rebuilds the graph, which is the baseline.
func BenchmarkNodeArrivals(b *testing.B) {
	for _, tc := range []struct {
		name string
		at   func(i int) int64
	}{
		{"burst", func(i int) int64 { return 1 + int64(i)/1000 }},
		{"spread-baseline", func(i int) int64 { return 1 + int64(i) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := benchCore(b, 5000)
			fw := NewFramework(c, nil)
			rebuilds := c.graphGen
			b.ResetTimer()
			for i := range b.N {
				now := tc.at(i)
				c.NodeSet(benchNode(5000+i, false), now)
				id := NewGroupID("arrive", fmt.Sprintf("a%d", i), 1, SourceLabel)
				fw.Add(Pod{UID: fmt.Sprintf("a%d", i), Namespace: "arrive", Name: fmt.Sprintf("a%d", i), Owned: true,
					Requests: Resources{MilliCPU: 1000}, Labeled: id}, id, now)
				fw.Run(now)
			}
			b.StopTimer()
			if fw.Pending() != 0 {
				b.Fatalf("%d pods not placed", fw.Pending())
			}
			b.ReportMetric(float64(c.graphGen-rebuilds)/float64(b.N), "rebuilds/op")
		})
	}
}

// BenchmarkGraphUnderLock is how long a new node's graph holds the
// caller's lock at 5,000 nodes with 500 groups of 8 placed: built and
// installed under it (the core rebuilding by itself, the baseline), or
// built outside it (prebuild.go) with only the install, which replays the
// allocations, under it. Each iteration adds a node a second after the
// last graph; the timer runs only for what the lock covers.
func BenchmarkGraphUnderLock(b *testing.B) {
	for _, outside := range []bool{false, true} {
		name := "inline-baseline"
		if outside {
			name = "built-outside"
		}
		b.Run(name, func(b *testing.B) {
			c := benchCoreWith(b, 5000, Config{BuildOutside: outside})
			rebuilds := c.graphGen
			b.ResetTimer()
			for i := range b.N {
				now := int64(2 * (i + 1))
				c.NodeSet(benchNode(5000+i, false), now)
				if !outside {
					c.Tick(now + 1)
					c.Ready()
					continue
				}
				b.StopTimer()
				plan := c.PlanGraph(now + 1)
				built := plan.Build()
				b.StartTimer()
				if !c.InstallGraph(built, now+1) {
					b.Fatal("the graph was not installed")
				}
				c.Tick(now + 1)
				c.Ready()
			}
			b.StopTimer()
			if got := c.graphGen - rebuilds; got != int64(b.N) {
				b.Fatalf("%d graphs for %d arrivals", got, b.N)
			}
		})
	}
}
