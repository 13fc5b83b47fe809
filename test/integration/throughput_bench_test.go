package integration

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// BenchmarkSchedulingThroughput measures pods bound per second on 1,000
// simulated nodes: 10,000 single pods, and 1,250 groups of 8, under the
// stock kube-scheduler and under fluence, in the same run, with the same
// client rate limit (clientConnection qps/burst). Every pod is created
// before the scheduler starts, so the figure is the scheduler's alone.
// Run with: make bench-scheduler (about 5 minutes on 2 cores).
func BenchmarkSchedulingThroughput(b *testing.B) {
	nodes := envInt("FLUENCE_BENCH_NODES", 1000)
	pods := envInt("FLUENCE_BENCH_PODS", 10000)
	qps := envInt("FLUENCE_BENCH_QPS", 500)
	type result struct {
		name       string
		podsPerSec float64
	}
	var results []result
	for _, shape := range []struct {
		name  string
		group int
	}{{"singles", 1}, {"groups-of-8", 8}} {
		for _, sched := range []string{"stock", "fluence"} {
			name := sched + "/" + shape.name
			b.Run(name, func(b *testing.B) {
				var rate float64
				for range b.N {
					rate = throughputOnce(b, sched, nodes, pods, shape.group, qps)
				}
				b.ReportMetric(rate, "pods/s")
				b.ReportMetric(1e3/rate, "ms/pod")
				results = append(results, result{name, rate})
			})
		}
	}
	if len(results) == 4 {
		b.Logf("pods/s: stock singles %.0f, fluence singles %.0f (%.2fx); stock groups-of-8 %.0f, fluence groups-of-8 %.0f (per-pod time %.2fx stock's)",
			results[0].podsPerSec, results[1].podsPerSec, results[1].podsPerSec/results[0].podsPerSec,
			results[2].podsPerSec, results[3].podsPerSec, results[2].podsPerSec/results[3].podsPerSec)
	}
}

func throughputOnce(b *testing.B, sched string, nodeCount, podCount, group, qps int) float64 {
	b.StopTimer()
	c := newCluster(b)
	parallel(16, nodeCount, func(i int) {
		c.addNode(fmt.Sprintf("node-%04d", i), "32", "128Gi", 0, nil)
	})

	// Count bindings as the API server reports them.
	var bound atomic.Int64
	var mu sync.Mutex
	var first, last time.Time
	seen := map[string]bool{}
	done := make(chan struct{})
	f := informers.NewSharedInformerFactoryWithOptions(c.newClient("bench-watch"), 0, informers.WithNamespace(c.NS))
	_, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, o any) {
			p := o.(*corev1.Pod)
			if p.Spec.NodeName == "" {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if seen[p.Name] {
				return
			}
			seen[p.Name] = true
			now := time.Now()
			if first.IsZero() {
				first = now
			}
			last = now
			if bound.Add(1) == int64(podCount) {
				close(done)
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	f.Start(c.Ctx.Done())

	schedName := "default-scheduler"
	config := stockConfig
	if sched == "fluence" {
		schedName, config = "fluence", fluenceConfig(b, nil)
	}
	config += fmt.Sprintf("clientConnection:\n  qps: %d\n  burst: %d\n", qps, qps)
	creator := c.newClient("bench-create")
	parallel(16, podCount, func(i int) {
		var labels map[string]string
		name := fmt.Sprintf("pod-%05d", i)
		if group > 1 {
			g := fmt.Sprintf("g%04d", i/group)
			name = fmt.Sprintf("%s-%d", g, i%group)
			labels = map[string]string{
				"fluence.flux-framework.org/pod-group":  g,
				"fluence.flux-framework.org/group-size": fmt.Sprint(group),
			}
		}
		p := newTestPod(name, schedName, "1", "", 0, labels)
		if _, err := creator.CoreV1().Pods(c.NS).Create(c.Ctx, p, metav1.CreateOptions{}); err != nil {
			b.Errorf("creating %s: %v", name, err)
		}
	})
	cache.WaitForCacheSync(c.Ctx.Done(), f.Core().V1().Pods().Informer().HasSynced)

	b.StartTimer()
	stop := c.startScheduler(config, fluenceRegistry)
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		b.Fatalf("%s: %d of %d pods bound after 10 minutes", sched, bound.Load(), podCount)
	}
	b.StopTimer()
	stop()
	mu.Lock()
	defer mu.Unlock()
	return float64(podCount-1) / last.Sub(first).Seconds()
}

// parallel runs fn(0..n-1) on w goroutines.
func parallel(w, n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// envInt reads a positive integer from the environment, else def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
