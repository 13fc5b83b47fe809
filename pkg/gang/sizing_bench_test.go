package gang

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkSizing is the sizing table of docs/install.md: the core's heap
// at 1,000, 5,000 and 15,000 nodes (32 CPUs each, a group of 8 placed on
// every 10th node), and what one graph rebuild costs there (ns/op: a node
// added or removed, or its capacity changed, rebuilds once; arrivals in a
// burst once a second). The heap is the core's alone; the scheduler's
// informer caches of nodes and pods come on top, as in any
// kube-scheduler.
func BenchmarkSizing(b *testing.B) {
	for _, n := range []int{1000, 5000, 15000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			c := benchCore(b, n)
			runtime.GC()
			runtime.ReadMemStats(&after)
			heap := float64(after.HeapInuse-before.HeapInuse) / (1 << 20)
			b.ResetTimer()
			for range b.N {
				c.dirty = true
				if !c.ensureEngine() {
					b.Fatal("no engine")
				}
			}
			b.StopTimer()
			// After the loop: ResetTimer drops metrics reported before it.
			b.ReportMetric(heap, "heap-MiB")
			runtime.KeepAlive(c)
		})
	}
}
