package integration

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/fluence-sched/fluence/pkg/inspect"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// BenchmarkSchedulingThroughput measures pods bound per second on 1,000
// simulated nodes: 10,000 single pods, and 1,250 groups of 8, under the
// stock kube-scheduler and under fluence, in the same run. Every pod is
// created before the scheduler starts, so the figure is the scheduler's
// alone. Run with: make bench-scheduler (about 3 minutes on 2 cores).
//
// The environment changes it:
//   - FLUENCE_BENCH_NODES (1000), FLUENCE_BENCH_PODS (10000): the size
//     (make bench-scheduler-5k: 5,000 nodes);
//   - FLUENCE_BENCH_QPS: the schedulers' client rate limit
//     (clientConnection qps and burst). Unset, there is none (qps -1):
//     with 500, fluence came out at 526 pods/s in every run, which is the
//     limiter (10,000 Bindings at 500/s plus the burst), not the scheduler;
//   - FLUENCE_BENCH_FAULTS (0): the fraction of Binding calls the fault
//     injector (faults_test.go) fails, 500s, 409s, lost responses and
//     timeouts alike, for both schedulers; FLUENCE_BENCH_FAULT_SEED (1).
//     With faults the invariant checker runs too, and a run fails unless
//     every pod is bound in the end, no group partly, no node
//     over-committed;
//   - FLUENCE_BENCH_FEATURE_GATES: kube-scheduler feature gates for both
//     schedulers ("SchedulerAsyncAPICalls=true" sends Bindings through
//     the scheduler's API dispatcher; in v1.36.3 it runs each call on its
//     own goroutine, so it does not bound the calls in flight either).
//
// Besides pods/s each run reports, from kube-scheduler's and fluence's
// metrics: scheduling attempts per pod; the time the scheduling goroutine
// spent per pod and per group deciding (algorithm + Reserve + Permit:
// cycle-ms/pod, decide-ms/group) and what share of the run that was
// (cycle-busy-%); for fluence the engine's queue loops per group; and the
// mean Bind call.
func BenchmarkSchedulingThroughput(b *testing.B) {
	nodes := envInt("FLUENCE_BENCH_NODES", 1000)
	pods := envInt("FLUENCE_BENCH_PODS", 10000)
	qps := envInt("FLUENCE_BENCH_QPS", 0)
	faults := envFloat01("FLUENCE_BENCH_FAULTS", 0)
	seed := uint64(envInt("FLUENCE_BENCH_FAULT_SEED", 1))
	limit := "none"
	if qps > 0 {
		limit = fmt.Sprintf("%d QPS", qps)
	}
	if gates := os.Getenv("FLUENCE_BENCH_FEATURE_GATES"); gates != "" {
		// Process-wide: both schedulers run with them.
		if err := utilfeature.DefaultMutableFeatureGate.Set(gates); err != nil {
			b.Fatalf("FLUENCE_BENCH_FEATURE_GATES: %v", err)
		}
		b.Logf("feature gates: %s", gates)
	}
	b.Logf("%d nodes, %d pods, client rate limit %s, %.0f%% of Binding calls faulted", nodes, pods, limit, 100*faults)
	type result struct {
		name       string
		podsPerSec float64
	}
	pollHz := envInt("FLUENCE_BENCH_POLL_HZ", 10)
	scheds := []string{"stock", "fluence", "fluence-polled"}
	if os.Getenv("FLUENCE_BENCH_POLL") == "0" {
		scheds = scheds[:2]
	}
	results := map[string]float64{}
	for _, shape := range []struct {
		name  string
		group int
	}{{"singles", 1}, {"groups-of-8", 8}} {
		for _, sched := range scheds {
			name := sched + "/" + shape.name
			b.Run(name, func(b *testing.B) {
				var r throughputResult
				for range b.N {
					spec := throughputSpec{sched: sched, nodes: nodes, pods: pods, group: shape.group, qps: qps, faults: faults, seed: seed}
					if sched == "fluence-polled" {
						spec.sched, spec.pollHz = "fluence", pollHz
						if f := os.Getenv("FLUENCE_BENCH_CPUPROFILE"); f != "" {
							spec.cpuProfile = f + "." + shape.name
						}
					}
					r = throughputOnce(b, spec)
				}
				r.report(b)
				results[name] = r.podsPerSec
			})
		}
		stock, fl, polled := results["stock/"+shape.name], results["fluence/"+shape.name], results["fluence-polled/"+shape.name]
		switch {
		case stock > 0 && fl > 0 && polled > 0:
			b.Logf("pods/s, %s: stock %.0f, fluence %.0f (%.2fx stock), fluence polled at %d/s %.0f (%.3fx unpolled)", shape.name, stock, fl, fl/stock, pollHz, polled, polled/fl)
		case stock > 0 && fl > 0:
			b.Logf("pods/s, %s: stock %.0f, fluence %.0f (%.2fx stock)", shape.name, stock, fl, fl/stock)
		case fl > 0 && polled > 0:
			b.Logf("pods/s, %s: fluence %.0f, fluence polled at %d/s %.0f (%.3fx unpolled)", shape.name, fl, pollHz, polled, polled/fl)
		}
	}
}

type throughputSpec struct {
	sched              string // stock or fluence
	nodes, pods, group int
	qps                int // 0: no client rate limit
	faults             float64
	seed               uint64
	// pollHz > 0: serve the inspection API and ask it for the
	// namespace's groups pollHz times a second while the run lasts;
	// cpuProfile, if set, is where the run's CPU profile goes.
	pollHz     int
	cpuProfile string
}

type throughputResult struct {
	spec       throughputSpec
	podsPerSec float64
	wall       float64 // seconds from the first binding to the last
	act        schedulerActivity
	faults     string
	// spreadP50 and spreadMax: milliseconds between the first and the
	// last pod of a group seen bound (groups of more than one pod).
	spreadP50, spreadMax float64
	// polls answered and their mean latency in milliseconds; pollErr the
	// first failure.
	polls   int
	pollMs  float64
	pollErr error
}

func (r throughputResult) report(b *testing.B) {
	groups := float64(r.spec.pods) / float64(r.spec.group)
	pods := float64(r.spec.pods)
	b.ReportMetric(r.podsPerSec, "pods/s")
	if r.podsPerSec > 0 {
		b.ReportMetric(1e3/r.podsPerSec, "ms/pod")
	}
	b.ReportMetric(r.act.attempts()/pods, "attempts/pod")
	b.ReportMetric(1e3*r.act.cycleSecs()/pods, "cycle-ms/pod")
	b.ReportMetric(1e3*r.act.cycleSecs()/groups, "decide-ms/group")
	if r.wall > 0 {
		b.ReportMetric(100*r.act.cycleSecs()/r.wall, "cycle-busy-%")
	}
	if r.act.BindCalls > 0 {
		b.ReportMetric(1e3*r.act.Bind/r.act.BindCalls, "bind-ms")
	}
	if r.spec.group > 1 {
		b.ReportMetric(r.spreadP50, "bind-spread-p50-ms")
		b.ReportMetric(r.spreadMax, "bind-spread-max-ms")
	}
	if r.spec.pollHz > 0 {
		b.ReportMetric(float64(r.polls), "polls")
		b.ReportMetric(r.pollMs, "poll-ms")
		if r.pollErr != nil {
			b.Errorf("polling the inspection API: %v", r.pollErr)
		}
	}
	if r.spec.sched == "fluence" {
		b.ReportMetric(1e3*r.act.EngineSecs/groups, "engine-ms/group")
		b.ReportMetric(1e3*r.act.PreFilter/groups, "prefilter-ms/group")
	}
	b.Logf("%s, %d pods in groups of %d: %.0f pods/s over %.1f s; %s", r.spec.sched, r.spec.pods, r.spec.group, r.podsPerSec, r.wall, r.act)
	b.Logf("API: %s", r.faults)
}

func throughputOnce(b *testing.B, spec throughputSpec) throughputResult {
	b.StopTimer()
	podCount, group := spec.pods, spec.group
	c := newCluster(b)
	parallel(16, spec.nodes, func(i int) {
		c.addNode(fmt.Sprintf("node-%04d", i), "32", "128Gi", 0, nil)
	})
	var inv *invariants
	if spec.faults > 0 {
		inv = startInvariants(c)
	}
	// Without faults the injector only counts: Binding calls in flight,
	// connections opened.
	injector := newFaultInjector(faultConfig{Fraction: spec.faults, Seed: spec.seed})
	opts := schedulerOptions{WrapTransport: injector.wrap}

	// Count bindings as the API server reports them.
	var bound atomic.Int64
	var mu sync.Mutex
	var first, last time.Time
	seen := map[string]bool{}
	// spread: when each group's first and last pod was seen bound.
	type span struct{ first, last time.Time }
	spread := map[string]span{}
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
			if g := p.Labels[podGroupLabel]; g != "" {
				sp := spread[g]
				if sp.first.IsZero() {
					sp.first = now
				}
				sp.last = now
				spread[g] = sp
			}
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
	if spec.sched == "fluence" {
		schedName, config = "fluence", fluenceConfig(b, nil)
	}
	if spec.qps > 0 {
		config = setClient(config, "qps", fmt.Sprint(spec.qps), "burst", fmt.Sprint(spec.qps))
	} else {
		config = setClient(config, "qps", "-1") // no client-side rate limit
	}
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

	registry := fluenceRegistry
	var insp *plugin.Inspectors
	if spec.pollHz > 0 {
		insp = plugin.NewInspectors()
		registry = frameworkruntime.Registry{plugin.Name: plugin.NewWith(plugin.Options{Inspectors: insp}), plugin.QueueSortName: plugin.NewQueueSort}
	}
	if spec.cpuProfile != "" {
		out, err := os.Create(spec.cpuProfile)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			b.Fatal(err)
		}
		defer func() { pprof.StopCPUProfile(); out.Close() }()
	}
	before := takeMetrics()
	b.StartTimer()
	stop := c.startSchedulerWith(config, registry, opts)
	var poll *poller
	if insp != nil {
		poll = startPoller(insp, c.NS, spec.pollHz)
	}
	// Wait until every pod is bound; give up after a minute without a new
	// binding (a stranded group never binds) or after 10 minutes.
	deadline := time.After(10 * time.Minute)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastCount, lastProgress := int64(-1), time.Now()
	complete := false
wait:
	for {
		select {
		case <-done:
			complete = true
			break wait
		case <-deadline:
			break wait
		case <-tick.C:
			if n := bound.Load(); n != lastCount {
				lastCount, lastProgress = n, time.Now()
			} else if time.Since(lastProgress) > time.Minute {
				break wait
			}
		}
	}
	b.StopTimer()
	if poll != nil {
		poll.stop()
	}
	after := takeMetrics()
	stop()

	profile := schedName
	r := throughputResult{spec: spec, act: activity(before, after, profile)}
	r.faults = injector.summary()
	if poll != nil {
		r.polls, r.pollErr = poll.n, poll.err
		if poll.n > 0 {
			r.pollMs = 1e3 * poll.total.Seconds() / float64(poll.n)
		}
	}
	mu.Lock()
	if !last.IsZero() && last.After(first) {
		r.wall = last.Sub(first).Seconds()
		r.podsPerSec = float64(bound.Load()-1) / r.wall
	}
	mu.Unlock()
	if !complete {
		b.Errorf("%s: %d of %d pods bound; none bound in the last minute (or 10 minutes passed)", spec.sched, bound.Load(), podCount)
		// Three groups with unbound pods: their pods, faults and events.
		groups := map[string][]string{}
		if list, err := c.Client.CoreV1().Pods(c.NS).List(context.Background(), metav1.ListOptions{}); err == nil {
			for _, p := range list.Items {
				g := p.Labels[podGroupLabel]
				if g == "" {
					g = p.Name
				}
				groups[g] = append(groups[g], p.Name)
			}
		}
		c.reportStuck(injector, groups, func(p *corev1.Pod) bool { return p.Spec.NodeName != "" }, 3)
	}
	if group > 1 {
		mu.Lock()
		var ms []float64
		for _, sp := range spread {
			ms = append(ms, float64(sp.last.Sub(sp.first).Microseconds())/1e3)
		}
		mu.Unlock()
		if len(ms) > 0 {
			slices.Sort(ms)
			r.spreadP50, r.spreadMax = ms[len(ms)/2], ms[len(ms)-1]
		}
	}
	if inv != nil {
		if v := inv.violations(); len(v) > 0 {
			b.Errorf("%d over-commits or bindings to a missing node, e.g.:\n%s", len(v), strings.Join(injector.explainViolations(v[:min(len(v), 10)]), "\n"))
		}
		// Stock binds the pods of a "group" one by one: only fluence's
		// groups must be whole.
		if p := inv.partialGroups(); spec.sched == "fluence" && len(p) > 0 {
			b.Errorf("%d groups bound partly, e.g.:\n%s", len(p), strings.Join(p[:min(len(p), 10)], "\n"))
		}
	}
	return r
}

// poller asks an inspection handler for a namespace's groups hz times a
// second, as `kubectl fluence groups` does: a GET of the group list over
// HTTP (one answer a second decoded to check it). A slow answer delays
// the next ask (one at a time, as a user's watch loop).
type poller struct {
	done chan struct{}
	wg   sync.WaitGroup
	// Written by the polling goroutine, read after stop.
	n     int
	total time.Duration
	err   error
}

func startPoller(insp *plugin.Inspectors, namespace string, hz int) *poller {
	srv := httptest.NewServer(insp.Handler(nil))
	p := &poller{done: make(chan struct{})}
	url := srv.URL + inspect.Path(inspect.ResourceGroups, namespace, "", "")
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer srv.Close()
		t := time.NewTicker(time.Second / time.Duration(hz))
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
			}
			start := time.Now()
			res, err := http.Get(url)
			if err != nil {
				p.err = cmp.Or(p.err, err)
				continue
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusServiceUnavailable {
				continue // still reading the cluster
			}
			if err == nil && res.StatusCode != http.StatusOK {
				err = fmt.Errorf("%s: %s", res.Status, body)
			}
			if err == nil && p.n%hz == 0 {
				// kubectl decodes every answer, in its own process; here
				// the decoding would take the CPU the scheduler shares
				// with the poller, so one answer a second is checked.
				var list inspect.GroupList
				err = json.Unmarshal(body, &list)
			}
			if err != nil {
				p.err = cmp.Or(p.err, err)
				continue
			}
			p.n++
			p.total += time.Since(start)
		}
	}()
	return p
}

func (p *poller) stop() {
	close(p.done)
	p.wg.Wait()
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
