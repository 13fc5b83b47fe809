package integration

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// BenchmarkSchedulerSizing measures what a platform team sets the
// scheduler's resource requests from: the `fluence scheduler` binary as a
// separate OS process, run with the Helm chart's configuration and
// arguments (helm template deploy/helm/fluence: leader election on,
// clientConnection qps 300 / burst 600, --v=2), against the test API
// server, at 1,000, 5,000 and 15,000 nodes. In the same run the same
// binary runs the stock kube-scheduler configuration (the chart's, with
// only the default-scheduler profile) as the baseline. Run with
// make bench-sizing; it prints one table.
//
// For each node count one cluster is started (Node objects with status:
// 32 CPUs, 128 GiB, no kubelet) with the chart's PodGroup CRD, and each
// scheduler in turn, fresh, goes through:
//   - start: from exec until the process has used under 5% of a core for
//     5 s (leader elected, nodes and pods listed, fluence's graph built);
//   - idle: CPU seconds (utime+stime, /proc/PID/stat) over FLUENCE_SIZING_IDLE
//     (1m) with nothing happening; then RSS (/proc/PID/status VmRSS) and
//     the Go heap in use (go_memstats_heap_inuse_bytes from its /metrics);
//   - workload: as many pods as nodes (FLUENCE_SIZING_PODS, rounded down
//     to whole groups) in groups of 8 (fluence's pod-group labels; the same
//     pods with schedulerName default-scheduler for stock), 16 CPUs each:
//     half the cluster's CPUs. They are created while the scheduler runs,
//     16 at a time with no client rate limit; the CPU the scheduler used
//     from the first create until it has settled after the last binding,
//     less its idle rate, per 1,000 pods. Pods are bound, not run: no
//     kubelet marks them Running. Peak RSS is VmHWM, the process's
//     high-water mark;
//   - idle, loaded: the idle minute again with the pods bound, then RSS and
//     heap; after each idle minute the heap is read as found and again
//     after a garbage collection (/debug/pprof/heap?gc=1), the live heap;
//   - node status reports: the idle minute once more while every node's
//     status is patched (its Ready heartbeat) once every
//     FLUENCE_SIZING_REPORT_EVERY (5m, a kubelet's nodeStatusReportFrequency;
//     0 skips the phase), spread evenly: nodes/300 updates a second.
//
// Metrics are read only between measurements (a scrape costs the
// scheduler CPU). The scheduler's client goes through its own rate limiter
// (the chart's 300 requests/s); the table's "limiter" column is the time
// its requests waited there (rest_client_rate_limiter_duration_seconds),
// so a run that the limiter paced shows it.
//
// The environment changes it: FLUENCE_SIZING_NODES (1000,5000,15000),
// FLUENCE_SIZING_SCHEDULERS (stock,fluence), FLUENCE_SIZING_PODS (the node
// count), FLUENCE_SIZING_IDLE (1m), FLUENCE_SIZING_REPORT_EVERY (5m),
// FLUENCE_SIZING_BIN (a fluence binary to measure; else cmd/fluence is
// built), FLUENCE_SIZING_PROFILE (a directory: after the measurements, a
// CPU profile of one more idle period with node status reports and a heap
// profile are taken from the scheduler's /debug/pprof and written there).
func BenchmarkSchedulerSizing(b *testing.B) {
	if testing.Short() {
		b.Skip("integration benchmark: skipped with -short")
	}
	sizes := envInts(b, "FLUENCE_SIZING_NODES", []int{1000, 5000, 15000})
	scheds := strings.Split(cmp.Or(os.Getenv("FLUENCE_SIZING_SCHEDULERS"), "stock,fluence"), ",")
	idle := envDuration(b, "FLUENCE_SIZING_IDLE", time.Minute)
	reportEvery := envDuration(b, "FLUENCE_SIZING_REPORT_EVERY", 5*time.Minute)
	profileDir := os.Getenv("FLUENCE_SIZING_PROFILE")
	for _, s := range scheds {
		if s != "stock" && s != "fluence" {
			b.Fatalf("FLUENCE_SIZING_SCHEDULERS: %q is neither stock nor fluence", s)
		}
	}

	bin := os.Getenv("FLUENCE_SIZING_BIN")
	if bin == "" {
		bin = buildFluence(b)
	}
	chart := renderSizingChart(b)
	b.Logf("binary %s; the chart's arguments %q", bin, chart.args)

	var rows []sizingResult
	for _, n := range sizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			c := newCluster(b)
			if _, err := c.Client.CoreV1().Namespaces().Create(c.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			c.installPodGroupCRD() // the chart installs it
			start := time.Now()
			var failed atomic.Int64
			parallel(16, n, func(i int) {
				if _, err := c.lc.AddNode(c.Ctx, localcluster.NodeSpec{Name: fmt.Sprintf("node-%05d", i), CPU: "32", Memory: "128Gi"}); err != nil {
					if failed.Add(1) == 1 {
						b.Error(err)
					}
				}
			})
			if failed.Load() > 0 {
				b.Fatalf("%d nodes not created", failed.Load())
			}
			b.Logf("%d nodes created in %.1f s", n, time.Since(start).Seconds())
			// Whole groups of 8 only: a partial group never binds.
			pods := envInt("FLUENCE_SIZING_PODS", n) / 8 * 8
			for _, sched := range scheds {
				b.Run(sched, func(b *testing.B) {
					spec := sizingSpec{sched: sched, bin: bin, chart: chart, nodes: n, pods: pods, group: 8,
						idle: idle, reportEvery: reportEvery, profileDir: profileDir}
					var r sizingResult
					for range b.N {
						r = sizingOnce(b, c, spec)
					}
					r.report(b)
					rows = append(rows, r)
				})
			}
		})
	}
	if len(rows) > 0 {
		table := sizingTable(rows)
		b.Logf("sizing (idle %v, node status reports every %v):\n%s", idle, reportEvery, table)
		fmt.Printf("\n%s\n", table)
	}
}

type sizingSpec struct {
	sched              string // stock or fluence
	bin                string
	chart              sizingChart
	nodes, pods, group int
	idle, reportEvery  time.Duration
	profileDir         string
}

// procSample is what /proc says of a process at one moment.
type procSample struct {
	at  time.Time
	cpu float64 // utime+stime, seconds
	// VmRSS, of which RssAnon (the heap, stacks, runtime) and RssFile
	// (mapped pages of the binary: reclaimable), and VmHWM, the peak RSS;
	// MiB.
	rss, anon, file, hwm float64
}

// scrape is what the scheduler's /metrics says at one moment.
type scrape struct {
	heapInuse float64 // go_memstats_heap_inuse_bytes, MiB
	limiter   float64 // rest_client_rate_limiter_duration_seconds sum, s
}

type sizingResult struct {
	spec sizingSpec
	// start: seconds from exec to settled, CPU seconds used, VmHWM (MiB).
	startSecs, startCPU, startPeak float64
	idleCPU                        float64 // idle: millicores
	idleRSS, idleAnon              float64 // MiB
	idleHeap, idleLive             float64 // heap in use, MiB: as found, after a GC
	// The workload: pods bound, seconds from the first create to the last
	// binding, the creation's share of it, CPU seconds per 1,000 pods
	// (net of idle), peak RSS.
	bound                     int
	wall, createSecs          float64
	cpuPer1k, peakRSS         float64
	loadedCPU                 float64 // idle with the pods bound: millicores
	loadedRSS, loadedAnon     float64 // MiB
	loadedHeap, loadedLive    float64
	reportCPU                 float64 // idle with node status reports: millicores (-1: not run)
	limiter                   float64 // seconds the client's requests waited in its rate limiter, whole run
	loadBefore, loadAfter     string  // /proc/loadavg (1-minute) at the start and the end
	restarts, settleTimeouts  int
	profileCPU, profileHeap   string
	idleHeapErr, loadedMetErr error
}

func sizingOnce(b *testing.B, c *cluster, spec sizingSpec) sizingResult {
	b.StopTimer()
	// A scheduler before this one failed before its pods were deleted.
	if list, err := c.Client.CoreV1().Pods(c.NS).List(c.Ctx, metav1.ListOptions{Limit: 1}); err != nil || len(list.Items) > 0 {
		b.Fatalf("the namespace still holds the last run's pods (or cannot be listed: %v)", err)
	}
	r := sizingResult{spec: spec, reportCPU: -1, loadBefore: loadavg()}
	schedName := "fluence"
	config := spec.chart.config
	if spec.sched == "stock" {
		schedName, config = "default-scheduler", stockProfileOnly(b, config)
	}
	kubeconfig := c.kubeconfigFile()
	dir := b.TempDir()
	configFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configFile, []byte(setClient(config, "kubeconfig", kubeconfig)), 0o600); err != nil {
		b.Fatal(err)
	}
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		b.Fatal(err)
	}
	args := slices.Clone(spec.chart.args)
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "--config="):
			args[i] = "--config=" + configFile
		case strings.HasPrefix(a, "--secure-port="):
			args[i] = fmt.Sprintf("--secure-port=%d", ports[0])
		}
	}
	// Outside a pod the secure port's delegated authentication and
	// authorization need a kubeconfig; in a pod they use the in-cluster one.
	args = append(args, "--bind-address=127.0.0.1", "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig)
	p := startSizingProcess(b, spec.bin, filepath.Join(dir, "scheduler.log"), args...)
	base := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	token := c.Config.BearerToken
	log := func(format string, a ...any) {
		b.Logf("%d nodes, %s: %s", spec.nodes, spec.sched, fmt.Sprintf(format, a...))
	}

	// Start: until the process settles.
	s0 := p.sample(b)
	settled, ok := p.settle(b, 5*time.Minute)
	if !ok {
		r.settleTimeouts++
	}
	r.startSecs, r.startCPU, r.startPeak = settled.at.Sub(p.started).Seconds(), settled.cpu-s0.cpu, settled.hwm
	log("started in %.1f s, %.2f CPU s, peak RSS %.0f MiB", r.startSecs, r.startCPU, r.startPeak)
	if !p.leading() {
		b.Fatalf("the scheduler has not acquired its lease; log tail:\n%s", p.tail(30))
	}

	// Idle, no pods.
	a := p.sample(b)
	time.Sleep(spec.idle)
	z := p.sample(b)
	r.idleCPU, r.idleRSS, r.idleAnon = millicores(z.cpu-a.cpu, z.at.Sub(a.at)), z.rss, z.anon
	r.idleHeap, r.idleLive, r.idleHeapErr = heaps(base, token)
	log("idle: %.1f millicores, RSS %.0f MiB (anonymous %.0f, file %.0f), heap in use %.0f MiB, %.0f after a GC", r.idleCPU, r.idleRSS, z.anon, z.file, r.idleHeap, r.idleLive)

	// The workload.
	var bound atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var last time.Time
	seen := map[types.UID]bool{}
	wctx, wcancel := context.WithCancel(c.Ctx)
	defer wcancel()
	f := informers.NewSharedInformerFactoryWithOptions(c.newClient("sizing-watch"), 0, informers.WithNamespace(c.NS))
	count := func(o any) {
		pod, ok := o.(*corev1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if seen[pod.UID] {
			return
		}
		seen[pod.UID] = true
		last = time.Now()
		if bound.Add(1) == int64(spec.pods) {
			once.Do(func() { close(done) })
		}
	}
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: count, UpdateFunc: func(_, o any) { count(o) }}); err != nil {
		b.Fatal(err)
	}
	f.Start(wctx.Done())
	f.WaitForCacheSync(wctx.Done())

	creator := c.newClient("sizing-create")
	w0 := p.sample(b)
	b.StartTimer()
	parallel(16, spec.pods, func(i int) {
		g := fmt.Sprintf("g%05d", i/spec.group)
		labels := map[string]string{
			"fluence.flux-framework.org/pod-group":  g,
			"fluence.flux-framework.org/group-size": fmt.Sprint(spec.group),
		}
		pod := newTestPod(fmt.Sprintf("%s-%d", g, i%spec.group), schedName, "16", "", 0, labels)
		if _, err := creator.CoreV1().Pods(c.NS).Create(c.Ctx, pod, metav1.CreateOptions{}); err != nil {
			b.Errorf("creating %s: %v", pod.Name, err)
		}
	})
	r.createSecs = time.Since(w0.at).Seconds()
	complete := waitBound(&bound, done, 2*time.Minute, 45*time.Minute)
	b.StopTimer()
	mu.Lock()
	r.bound, r.wall = int(bound.Load()), last.Sub(w0.at).Seconds()
	mu.Unlock()
	if !complete {
		b.Errorf("%d of %d pods bound (none bound in the last 2 minutes); log tail:\n%s", r.bound, spec.pods, p.tail(30))
	}
	w1, ok := p.settle(b, 5*time.Minute)
	if !ok {
		r.settleTimeouts++
	}
	used := w1.cpu - w0.cpu - r.idleCPU/1000*w1.at.Sub(w0.at).Seconds()
	if r.bound > 0 {
		r.cpuPer1k = 1000 * used / float64(r.bound)
	}
	r.peakRSS = w1.hwm
	log("workload: %d pods bound in %.1f s (created in %.1f s), %.2f CPU s (%.2f per 1,000 pods net of idle), peak RSS %.0f MiB",
		r.bound, r.wall, r.createSecs, w1.cpu-w0.cpu, r.cpuPer1k, r.peakRSS)

	// Idle with the pods bound.
	a = p.sample(b)
	time.Sleep(spec.idle)
	z = p.sample(b)
	r.loadedCPU, r.loadedRSS, r.loadedAnon = millicores(z.cpu-a.cpu, z.at.Sub(a.at)), z.rss, z.anon
	r.loadedHeap, r.loadedLive, r.loadedMetErr = heaps(base, token)
	log("idle with %d pods bound: %.1f millicores, RSS %.0f MiB (anonymous %.0f, file %.0f), heap in use %.0f MiB, %.0f after a GC", r.bound, r.loadedCPU, r.loadedRSS, z.anon, z.file, r.loadedHeap, r.loadedLive)

	// Idle with the kubelets' node status reports.
	if spec.reportEvery > 0 {
		rate := float64(spec.nodes) / spec.reportEvery.Seconds()
		a = p.sample(b)
		sent, failed := reportNodeStatus(c, spec.nodes, rate, spec.idle)
		z = p.sample(b)
		r.reportCPU = millicores(z.cpu-a.cpu, z.at.Sub(a.at))
		if failed > 0 {
			b.Errorf("%d of %d node status patches failed", failed, sent)
		}
		log("idle with %.1f node status reports a second (%d sent): %.1f millicores, RSS %.0f MiB", rate, sent, r.reportCPU, z.rss)
	}
	if m, err := scrapeMetrics(base, token); err == nil {
		r.limiter = m.limiter
	}
	if spec.profileDir != "" {
		r.profileCPU, r.profileHeap = p.profiles(b, c, base, token, spec)
	}
	r.restarts = p.restarts()
	r.loadAfter = loadavg()

	p.stop(b)
	wcancel()
	cleanupSizing(b, c)
	return r
}

// waitBound waits until done is closed; it gives up when bound has not
// moved for stall, or after limit.
func waitBound(bound *atomic.Int64, done <-chan struct{}, stall, limit time.Duration) bool {
	deadline := time.After(limit)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastCount, lastProgress := int64(-1), time.Now()
	for {
		select {
		case <-done:
			return true
		case <-deadline:
			return false
		case <-tick.C:
			if n := bound.Load(); n != lastCount {
				lastCount, lastProgress = n, time.Now()
			} else if time.Since(lastProgress) > stall {
				return false
			}
		}
	}
}

// reportNodeStatus patches the Ready condition's heartbeat of node-00000,
// node-00001, … at rate patches a second for d, as kubelets report node
// status; it returns the patches sent and failed.
func reportNodeStatus(c *cluster, nodes int, rate float64, d time.Duration) (sent, failed int) {
	client := c.newClient("sizing-kubelets")
	names := make(chan string)
	var nfail atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for name := range names {
				patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastHeartbeatTime":%q}]}}`,
					time.Now().UTC().Format(time.RFC3339))
				if _, err := client.CoreV1().Nodes().PatchStatus(c.Ctx, name, []byte(patch)); err != nil {
					nfail.Add(1)
				}
			}
		})
	}
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		if due := start.Add(time.Duration(float64(i) / rate * float64(time.Second))); time.Until(due) > 0 {
			time.Sleep(time.Until(due))
		}
		if time.Since(start) >= d {
			break
		}
		names <- fmt.Sprintf("node-%05d", i%nodes)
		sent++
	}
	close(names)
	wg.Wait()
	return sent, int(nfail.Load())
}

// cleanupSizing deletes the test namespace's pods, one by one (a
// DeleteCollection of 15,000 pods outlasts the API server's request
// timeout), until none is left, and the schedulers' Lease.
func cleanupSizing(b *testing.B, c *cluster) {
	ctx := context.Background()
	pods := c.Client.CoreV1().Pods(c.NS)
	deadline := time.Now().Add(20 * time.Minute)
	for {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err == nil && len(list.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the pods were not deleted within 20 minutes (last list: %v)", err)
		}
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		parallel(16, len(list.Items), func(i int) {
			_ = pods.Delete(ctx, list.Items[i].Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		})
	}
	leases := c.Client.CoordinationV1().Leases(releaseNamespace)
	if list, err := leases.List(ctx, metav1.ListOptions{}); err == nil {
		for _, l := range list.Items {
			if err := leases.Delete(ctx, l.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				b.Fatal(err)
			}
		}
	}
}

// millicores is CPU seconds over d in thousandths of a core.
func millicores(cpu float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return 1000 * cpu / d.Seconds()
}

// sizingProcess is the scheduler process, its log in a file.
type sizingProcess struct {
	cmd     *exec.Cmd
	logPath string
	started time.Time
	exited  chan struct{}
}

func startSizingProcess(b *testing.B, bin, logPath string, args ...string) *sizingProcess {
	b.Helper()
	out, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	p := &sizingProcess{cmd: exec.Command(bin, args...), logPath: logPath, exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		out.Close()
		b.Fatal(err)
	}
	p.started = time.Now()
	go func() { _ = p.cmd.Wait(); out.Close(); close(p.exited) }()
	b.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if b.Failed() {
			b.Logf("scheduler log tail:\n%s", p.tail(40))
		}
	})
	return p
}

// stop sends SIGTERM and waits for the process, killing it after 30 s.
func (p *sizingProcess) stop(b *testing.B) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		b.Logf("the scheduler did not stop within 30 s of SIGTERM; killed")
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *sizingProcess) log() string {
	data, _ := os.ReadFile(p.logPath)
	return string(data)
}

func (p *sizingProcess) tail(n int) string { return tail(p.log(), n) }

func (p *sizingProcess) leading() bool {
	return strings.Contains(p.log(), "Successfully acquired lease")
}

// restarts counts how often the scheduler lost its lease or started over
// (either would spoil the figures).
func (p *sizingProcess) restarts() int {
	log := strings.ToLower(p.log())
	return strings.Count(log, "leaderelection lost") + strings.Count(log, "failed to renew lease")
}

// sample reads the process's CPU time and memory from /proc.
func (p *sizingProcess) sample(b *testing.B) procSample {
	b.Helper()
	select {
	case <-p.exited:
		b.Fatalf("the scheduler exited: %v; log tail:\n%s", p.cmd.ProcessState, p.tail(30))
	default:
	}
	s, err := readProc(p.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// settle waits until the process uses under 5% of a core over 5 s, or
// limit passes (ok false), and returns the last sample.
func (p *sizingProcess) settle(b *testing.B, limit time.Duration) (procSample, bool) {
	b.Helper()
	const window = 5 * time.Second
	var samples []procSample
	start := time.Now()
	for {
		s := p.sample(b)
		samples = append(samples, s)
		// The earliest sample at least window old.
		for len(samples) > 1 && s.at.Sub(samples[1].at) >= window {
			samples = samples[1:]
		}
		if first := samples[0]; s.at.Sub(first.at) >= window && (s.cpu-first.cpu)/s.at.Sub(first.at).Seconds() < 0.05 {
			return s, true
		}
		if time.Since(start) > limit {
			return s, false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// profiles takes a CPU profile over one more idle period, with node
// status reports when they are on, and a heap profile from the
// scheduler's /debug/pprof, and writes them to the profile directory.
func (p *sizingProcess) profiles(b *testing.B, c *cluster, base, token string, spec sizingSpec) (string, string) {
	if err := os.MkdirAll(spec.profileDir, 0o755); err != nil {
		b.Fatal(err)
	}
	name := fmt.Sprintf("%d-%s", spec.nodes, spec.sched)
	cpuPath := filepath.Join(spec.profileDir, name+"-idle-cpu.pprof")
	heapPath := filepath.Join(spec.profileDir, name+"-heap.pprof")
	var wg sync.WaitGroup
	if spec.reportEvery > 0 {
		cpuPath = filepath.Join(spec.profileDir, name+"-reports-cpu.pprof")
		wg.Go(func() { reportNodeStatus(c, spec.nodes, float64(spec.nodes)/spec.reportEvery.Seconds(), spec.idle) })
	}
	for _, x := range []struct{ path, url string }{
		{cpuPath, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, int(spec.idle.Seconds()))},
		{heapPath, base + "/debug/pprof/heap?gc=1"},
	} {
		body, err := getWithToken(x.url, token, spec.idle+time.Minute)
		if err == nil {
			err = os.WriteFile(x.path, body, 0o644)
		}
		if err != nil {
			b.Errorf("profile %s: %v", x.url, err)
		}
	}
	wg.Wait()
	return cpuPath, heapPath
}

// readProc reads utime+stime from /proc/PID/stat and VmRSS and VmHWM from
// /proc/PID/status.
func readProc(pid int) (procSample, error) {
	s := procSample{at: time.Now()}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command may hold spaces and parentheses: fields start after the last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return s, fmt.Errorf("/proc/%d/stat: %q", pid, stat)
	}
	fields := strings.Fields(string(stat[i+1:]))
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return s, fmt.Errorf("/proc/%d/stat: %q", pid, stat)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return s, err
	}
	s.cpu = (utime + stime) / clockTicks
	status, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	defer status.Close()
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *float64
		switch k {
		case "VmRSS":
			dst = &s.rss
		case "RssAnon":
			dst = &s.anon
		case "RssFile":
			dst = &s.file
		case "VmHWM":
			dst = &s.hwm
		default:
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		if err != nil {
			return s, fmt.Errorf("/proc/%d/status %s: %v", pid, k, err)
		}
		*dst = kb / 1024
	}
	return s, sc.Err()
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// scrapeMetrics reads the heap in use and the client rate limiter's wait
// from the scheduler's /metrics.
func scrapeMetrics(base, token string) (scrape, error) {
	var m scrape
	body, err := getWithToken(base+"/metrics", token, 30*time.Second)
	if err != nil {
		return m, err
	}
	heap := false
	for _, l := range strings.Split(string(body), "\n") {
		name, rest, ok := strings.Cut(l, " ")
		if !ok || strings.HasPrefix(l, "#") {
			continue
		}
		if i := strings.IndexByte(name, '{'); i >= 0 {
			// Labels may hold spaces: the value is the last field.
			name = name[:i]
			rest = l[strings.LastIndexByte(l, ' ')+1:]
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_memstats_heap_inuse_bytes":
			m.heapInuse, heap = v/(1<<20), true
		case "rest_client_rate_limiter_duration_seconds_sum":
			m.limiter += v
		}
	}
	if !heap {
		return m, fmt.Errorf("%s/metrics serves no go_memstats_heap_inuse_bytes", base)
	}
	return m, nil
}

// heaps returns the scheduler's heap in use (MiB) as found and after a
// garbage collection (its /debug/pprof/heap?gc=1 runs one).
func heaps(base, token string) (inuse, live float64, err error) {
	m, err := scrapeMetrics(base, token)
	if err != nil {
		return 0, 0, err
	}
	if _, err := getWithToken(base+"/debug/pprof/heap?gc=1", token, time.Minute); err != nil {
		return m.heapInuse, 0, err
	}
	after, err := scrapeMetrics(base, token)
	return m.heapInuse, after.heapInuse, err
}

// getWithToken GETs url (the scheduler's self-signed secure port) with a
// bearer token, again while the scheduler refuses (its delegated
// authentication may not be ready) for up to 30 s.
func getWithToken(url, token string, timeout time.Duration) ([]byte, error) {
	client := &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}
	var body []byte
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			last = err
			return false, nil
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %s", resp.Status, tail(string(body), 3))
		}
		last = err
		return err == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w (last: %v)", url, err, last)
	}
	return body, nil
}

func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(data)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

func (r sizingResult) report(b *testing.B) {
	b.ReportMetric(r.idleRSS, "idle-rss-MiB")
	b.ReportMetric(r.idleAnon, "idle-anon-MiB")
	b.ReportMetric(r.idleHeap, "idle-heap-MiB")
	b.ReportMetric(r.idleLive, "idle-live-heap-MiB")
	b.ReportMetric(r.idleCPU, "idle-millicores")
	b.ReportMetric(r.cpuPer1k, "cpu-s/1000pods")
	b.ReportMetric(r.peakRSS, "peak-rss-MiB")
	b.ReportMetric(r.loadedRSS, "loaded-rss-MiB")
	b.ReportMetric(r.loadedAnon, "loaded-anon-MiB")
	b.ReportMetric(r.loadedHeap, "loaded-heap-MiB")
	b.ReportMetric(r.loadedLive, "loaded-live-heap-MiB")
	b.ReportMetric(r.loadedCPU, "loaded-idle-millicores")
	if r.reportCPU >= 0 {
		b.ReportMetric(r.reportCPU, "reports-millicores")
	}
	if r.wall > 0 {
		b.ReportMetric(float64(r.bound)/r.wall, "pods/s")
	}
	for _, err := range []error{r.idleHeapErr, r.loadedMetErr} {
		if err != nil {
			b.Errorf("metrics: %v", err)
		}
	}
	if r.restarts > 0 {
		b.Errorf("the scheduler lost its lease %d times", r.restarts)
	}
	if r.settleTimeouts > 0 {
		b.Logf("the scheduler did not settle (under 5%% of a core for 5 s) within 5 minutes %d times", r.settleTimeouts)
	}
	if r.profileCPU != "" {
		b.Logf("profiles: %s, %s", r.profileCPU, r.profileHeap)
	}
}

// sizingTable formats the results as a Markdown table.
func sizingTable(rows []sizingResult) string {
	var sb strings.Builder
	sb.WriteString("| nodes | scheduler | start: s, CPU s, peak RSS MiB | idle: RSS (anon) MiB | heap in use / after GC MiB | CPU m | workload: pods bound in s (created in s) | CPU s per 1,000 pods | peak RSS MiB | pods bound, idle: RSS (anon) MiB | heap in use / after GC MiB | CPU m | with node status reports: CPU m | limiter wait s | load 1m |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		report := "-"
		if r.reportCPU >= 0 {
			report = fmt.Sprintf("%.1f", r.reportCPU)
		}
		fmt.Fprintf(&sb, "| %d | %s | %.0f, %.1f, %.0f | %.0f (%.0f) | %.0f / %.0f | %.1f | %d in %.0f (%.0f) | %.2f | %.0f | %.0f (%.0f) | %.0f / %.0f | %.1f | %s | %.1f | %s to %s |\n",
			r.spec.nodes, r.spec.sched, r.startSecs, r.startCPU, r.startPeak, r.idleRSS, r.idleAnon, r.idleHeap, r.idleLive, r.idleCPU,
			r.bound, r.wall, r.createSecs, r.cpuPer1k, r.peakRSS, r.loadedRSS, r.loadedAnon, r.loadedHeap, r.loadedLive, r.loadedCPU, report, r.limiter,
			r.loadBefore, r.loadAfter)
	}
	return sb.String()
}

// stockProfileOnly is the chart's configuration with its profiles
// replaced by kube-scheduler's default one.
func stockProfileOnly(b *testing.B, config string) string {
	i := strings.Index(config, "\nprofiles:")
	if i < 0 {
		b.Fatalf("the chart's configuration has no profiles:\n%s", config)
	}
	return config[:i] + "\nprofiles:\n  - schedulerName: default-scheduler\n"
}

// sizingChart is what the chart renders for the scheduler: its
// configuration (the ConfigMap's config.yaml) and the container's
// arguments.
type sizingChart struct {
	config string
	args   []string
}

// renderSizingChart renders the chart with its default values (helm
// template; $HELM, or the helm TestHelmChart builds into the user's cache
// directory, built the same way when missing).
func renderSizingChart(b *testing.B) sizingChart {
	b.Helper()
	helm := os.Getenv("HELM")
	if helm == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "fluence-test", "helm-"+helmVersion)
		helm = filepath.Join(dir, "helm")
		if _, err := os.Stat(helm); err != nil {
			install := exec.Command("go", "install", helmPackage+"@"+helmVersion)
			install.Dir = b.TempDir()
			install.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=", "GOWORK=off")
			if out, err := install.CombinedOutput(); err != nil {
				b.Fatalf("go install %s@%s: %v\n%s", helmPackage, helmVersion, err, out)
			}
		}
	}
	manifest, err := runHelm(helm, "template", releaseName, chartDir, "--namespace", releaseNamespace)
	if err != nil {
		b.Fatalf("helm template: %v\n%s", err, manifest)
	}
	var ch sizingChart
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			b.Fatalf("decoding the rendered chart: %v", err)
		}
		o := unstructured.Unstructured{Object: m}
		switch {
		case o.GetKind() == "ConfigMap" && o.GetName() == releaseName+"-config":
			ch.config, _, _ = unstructured.NestedString(m, "data", "config.yaml")
		case o.GetKind() == "Deployment" && o.GetName() == releaseName:
			containers, _, _ := unstructured.NestedSlice(m, "spec", "template", "spec", "containers")
			if len(containers) == 1 {
				ch.args, _, _ = unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			}
		}
	}
	if ch.config == "" || len(ch.args) == 0 {
		b.Fatalf("the rendered chart has no scheduler configuration or arguments")
	}
	return ch
}

// envInts reads a comma-separated list of positive integers, else def.
func envInts(b *testing.B, name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("%s: %q is not a list of positive integers", name, v)
		}
		out = append(out, n)
	}
	return out
}

// envDuration reads a duration (0 allowed), else def.
func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		b.Fatalf("%s: %q is not a duration", name, v)
	}
	return d
}
