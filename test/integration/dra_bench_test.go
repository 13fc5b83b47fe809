package integration

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/k8sadapter"
	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// BenchmarkDRARackScale replays one trace of GPU gangs on a rack-scale
// cluster whose GPUs come from Dynamic Resource Allocation, on a live API
// server, under kube-scheduler 1.37's own workload scheduling with DRA
// (GenericWorkload and TopologyAwareWorkloadScheduling on; its default
// profile, whose GangScheduling, TopologyPlacementGenerator,
// PodGroupPodsCount and DynamicResources plugins are checked to be
// enabled) and under fluence (its shipped profile, topologyLevels the
// domain label), each on a fresh cluster in the same run. Run with
// make bench-dra (about 10 minutes on 2 cores).
//
// The cluster: 16 NVLink domains of 18 nodes (64 CPUs each), every node
// publishing 4 GPUs in a ResourceSlice of the driver gpu.example.com, as a
// rack-scale system's driver would (attributes memory = 80 and clique =
// the domain); no driver runs, the slices stand in for its kubelet plugin.
// Each node is also labelled example.com/nvlink-domain with its domain:
// kube-scheduler's topology key is a node label. kube-controller-manager's
// ResourceClaim controller makes each pod's claim from its template, and
// the garbage collector removes claims whose pod is gone. No kubelet: a
// bound pod stays Pending and holds its node and its claim's devices until
// the benchmark deletes it.
//
// The trace (drawn from FLUENCE_BENCH_SEED): 80 gangs, one submitted every
// 0.5 s. About one in eight needs a whole domain (18 pods of 4 GPUs); the
// others have 2 to 17 pods of 4 GPUs (7 in 10), 2 (2 in 10) or 1 (1 in 10).
// Every pod asks 1 CPU and one claim from the ResourceClaimTemplate gpuN
// (N GPUs of the class gpu.example.com), and declares its run time, 15 to
// 45 s, in fluence.flux-framework.org/duration (kube-scheduler ignores it).
// A gang is a scheduling.k8s.io/v1beta1 PodGroup with the gang policy
// (minCount = its size) and schedulingConstraints.topology
// [{key: example.com/nvlink-domain}], named by its pods'
// spec.schedulingGroup; the PodGroup is created first, then its pods, as a
// controller does. (BenchmarkTopologyPlacement's order, the pods first and
// the PodGroup once the scheduler holds them all, cannot work here:
// kube-controller-manager's ResourceClaim controller makes no claim for a
// pod whose PodGroup it has not seen, and kube-scheduler's DynamicResources
// keeps a pod whose claim does not exist out of the queue.) Every
// gang fits an empty domain. A gang runs once all its pods are bound; it is
// deleted (pods, PodGroup; the claims follow) its run time after that.
//
// Everything reported is computed from what the API server shows through
// the benchmark's own informers (pods' bindings, claims' allocations,
// events), not from what a scheduler says:
//   - makespan: from the first gang's submission to the last gang's end
//     (its deletion); the bound beside it is the larger of the trace's own
//     (the latest submission plus run time) and the work's (GPU-seconds
//     over the cluster's GPUs);
//   - gang wait: submission (its PodGroup's creation) to its last pod bound;
//   - within one domain: every pod of the gang on nodes of one domain;
//   - partial: a gang with a pod still unbound 5 s after its first pod was
//     bound (a whole gang's bindings take well under a second here);
//   - claims allocated: at a gang's end, each pod's claim allocated with
//     as many devices as it asks, every one on the pod's node; a device in
//     two allocations at once is counted as over-allocated;
//   - free GPUs are those in no claim's allocation. Every 250 ms while at
//     least one submitted gang is not bound whole ("waiting"), the sample
//     records the free GPUs ("idle while a gang waits"), and the stranded
//     GPUs: the free GPUs of the domains that can hold none of the waiting
//     gangs. A domain can hold a gang of n pods of g GPUs when the sum over
//     its nodes of floor(free GPUs / g) is at least n: the pods are alike
//     and CPU never binds. Both are means over the waiting time; "waiting
//     while a domain could hold it" sums, over the samples, the gangs that
//     were waiting though a domain could hold them;
//   - refusals: FailedScheduling events (each counted once, not by its
//     series count) whose note mentions a claim: the DynamicResources
//     plugin turned the pod away. fluence's waits for kube-scheduler's DRA
//     manager to see a claim's devices released are counted apart. For kube-scheduler that is also how a
//     gang that does not fit yet waits; for fluence, which places a gang
//     only where its claims can be allocated, there should be none;
//     FluenceGroupWithdrawn events are counted too;
//   - pods/s: pods bound over the makespan.
//
// A scheduler's run ends when every gang has ended, when nothing was bound
// or ended for FLUENCE_BENCH_STALL (60s) after the last submission, or
// after FLUENCE_BENCH_LIMIT (5m); gangs not ended are reported. The run
// fails if fluence binds a gang partly or across domains, leaves a claim
// unallocated, over-allocates a device or is refused by DynamicResources.
//
// The environment changes it: FLUENCE_BENCH_DOMAINS (16),
// FLUENCE_BENCH_DOMAIN_NODES (18), FLUENCE_BENCH_GPUS (4 per node),
// FLUENCE_BENCH_GANGS (80), FLUENCE_BENCH_GAP (500ms between submissions),
// FLUENCE_BENCH_RUNTIME (15s-45s: the least and most run time),
// FLUENCE_BENCH_SEED (1), FLUENCE_BENCH_SCHEDULERS (stock,fluence),
// FLUENCE_BENCH_STALL, FLUENCE_BENCH_LIMIT and FLUENCE_BENCH_VERBOSE (every
// gang's outcome printed). As for BenchmarkTopologyPlacement, run it alone
// (kube-scheduler registers its pod-group metrics, which give the
// pod-group cycles, once per process); the table goes to stdout.
func BenchmarkDRARackScale(b *testing.B) {
	s := drbSpec{
		domains:     envInt("FLUENCE_BENCH_DOMAINS", 16),
		domainNodes: envInt("FLUENCE_BENCH_DOMAIN_NODES", 18),
		gpus:        envInt("FLUENCE_BENCH_GPUS", 4),
		gangs:       envInt("FLUENCE_BENCH_GANGS", 80),
		seed:        uint64(envInt("FLUENCE_BENCH_SEED", 1)),
		gap:         envDuration(b, "FLUENCE_BENCH_GAP", 500*time.Millisecond),
		minRun:      15 * time.Second,
		maxRun:      45 * time.Second,
		stall:       envDuration(b, "FLUENCE_BENCH_STALL", time.Minute),
		limit:       envDuration(b, "FLUENCE_BENCH_LIMIT", 5*time.Minute),
		verbose:     os.Getenv("FLUENCE_BENCH_VERBOSE") != "",
	}
	if v := os.Getenv("FLUENCE_BENCH_RUNTIME"); v != "" {
		lo, hi, _ := strings.Cut(v, "-")
		a, err1 := time.ParseDuration(lo)
		z, err2 := time.ParseDuration(hi)
		if err1 != nil || err2 != nil || a <= 0 || z < a {
			b.Fatalf("FLUENCE_BENCH_RUNTIME=%q: want least-most, as 15s-45s", v)
		}
		s.minRun, s.maxRun = a, z
	}
	scheds := strings.Split(cmp.Or(os.Getenv("FLUENCE_BENCH_SCHEDULERS"), "stock,fluence"), ",")
	trace := drbMakeTrace(s)
	fmt.Printf("BenchmarkDRARackScale: %d domains x %d nodes x %d GPUs (%d GPUs in ResourceSlices); %s; seed %d\n",
		s.domains, s.domainNodes, s.gpus, s.domains*s.domainNodes*s.gpus, drbDescribe(s, trace), s.seed)
	var results []drbResult
	for _, sched := range scheds {
		if sched != "stock" && sched != "fluence" {
			b.Fatalf("FLUENCE_BENCH_SCHEDULERS: %q is neither stock nor fluence", sched)
		}
		b.Run(sched, func(b *testing.B) {
			var r drbResult
			for range b.N {
				b.StopTimer()
				r = drbOnce(b, s, trace, sched)
			}
			r.report(b)
			if sched == "fluence" {
				r.wantFluenceProperties(b)
			}
			results = append(results, r)
		})
	}
	if len(results) > 0 {
		fmt.Printf("\nBenchmarkDRARackScale: %d gangs on %d domains x %d nodes x %d GPUs, %s apart\n%s\n",
			len(trace), s.domains, s.domainNodes, s.gpus, s.gap, drbTable(results))
	}
}

// TestDRARackGangs is BenchmarkDRARackScale's trace at a small scale,
// under fluence alone: 2 domains of 4 nodes of 4 GPUs, 8 gangs of 2 to 4
// pods (one of a whole domain) with run times of 2 to 4 s, submitted
// 300 ms apart, so that gangs wait for each other. Every gang must be
// bound whole, inside one domain, with every claim allocated on its pod's
// node and no FailedScheduling event of the DynamicResources plugin.
//
// It once turned one pod in six away ("cannot allocate all claims"):
// fluence placed a gang on a node an instant after the gang before it
// there was deleted, when its informer had seen that gang's claims
// released and kube-scheduler's DRA manager had not. fluence now waits
// for the manager, and its PreFilter runs before DynamicResources'
// (TestShippedPreFilterOrder); fluence's own waits, which name a claim,
// are not refusals (draRefusal).
func TestDRARackGangs(t *testing.T) {
	s := drbSpec{domains: 2, domainNodes: 4, gpus: 4, gangs: 8, seed: 3, gap: 300 * time.Millisecond,
		minRun: 2 * time.Second, maxRun: 4 * time.Second, stall: 30 * time.Second, limit: 90 * time.Second}
	trace := drbMakeTrace(s)
	r := drbOnce(t, s, trace, "fluence")
	for _, n := range r.notes {
		t.Log(n)
	}
	for n, k := range r.eventNotes {
		t.Logf("FailedScheduling x%d: %s", k, n)
	}
	t.Logf("%d gangs (%s): %d ended, makespan %.1f s (bound %.1f s), mean wait %.2f s", len(trace), drbDescribe(s, trace),
		r.ended, r.makespan, r.bound, tpbMean(r.waits))
	if r.ended != len(trace) {
		t.Errorf("%d of %d gangs ended", r.ended, len(trace))
	}
	r.wantFluenceProperties(t)
}

// wantFluenceProperties fails unless every gang ended was bound whole in
// one domain, with all its claims allocated, and no pod was refused.
func (r drbResult) wantFluenceProperties(tb testing.TB) {
	tb.Helper()
	if r.whole != r.within {
		tb.Errorf("%s: %d of %d gangs bound whole are not inside one domain", r.sched, r.whole-r.within, r.whole)
	}
	if r.partial > 0 {
		tb.Errorf("%s: %d gangs had a pod unbound 5 s after another was bound", r.sched, r.partial)
	}
	if r.claimsAllocated != r.claimsWanted || r.overAllocated > 0 {
		tb.Errorf("%s: %d of %d claims of ended gangs allocated on their pod's node; %d devices seen in two allocations",
			r.sched, r.claimsAllocated, r.claimsWanted, r.overAllocated)
	}
	if r.claimRefusals > 0 || r.withdrawn > 0 {
		tb.Errorf("%s: %d FailedScheduling events mention a claim, %d FluenceGroupWithdrawn events", r.sched, r.claimRefusals, r.withdrawn)
	}
}

// drbDomainKey is the node label naming a node's NVLink domain; the
// device attribute clique says the same.
const drbDomainKey = "example.com/nvlink-domain"

// drbSpec is the cluster's shape and the trace's.
type drbSpec struct {
	domains, domainNodes, gpus int
	gangs                      int
	seed                       uint64
	gap                        time.Duration // between submissions
	minRun, maxRun             time.Duration
	stall, limit               time.Duration
	verbose                    bool
}

// drbGang is one gang of the trace.
type drbGang struct {
	name   string
	size   int           // pods
	gpus   int           // per pod
	run    time.Duration // run time once bound whole
	submit time.Duration // after the first submission
}

func (g drbGang) whole(s drbSpec) bool { return g.size*g.gpus == s.domainNodes*s.gpus }

// drbMakeTrace draws the trace from s.seed.
func drbMakeTrace(s drbSpec) []drbGang {
	rng := rand.New(rand.NewPCG(s.seed, 0x6472612d62656e63))
	out := make([]drbGang, s.gangs)
	for i := range out {
		g := drbGang{name: fmt.Sprintf("g%03d", i), submit: time.Duration(i) * s.gap}
		switch f := rng.Float64(); {
		case f < 0.125:
			g.size, g.gpus = s.domainNodes, s.gpus
		default:
			g.size = 2 + rng.IntN(max(1, s.domainNodes-2))
			switch p := rng.Float64(); {
			case p < 0.7:
				g.gpus = s.gpus
			case p < 0.9:
				g.gpus = max(1, s.gpus/2)
			default:
				g.gpus = 1
			}
		}
		g.run = s.minRun + time.Duration(rng.Int64N(int64(s.maxRun-s.minRun)/int64(time.Second)+1))*time.Second
		out[i] = g
	}
	return out
}

func drbDescribe(s drbSpec, trace []drbGang) string {
	whole, pods, gpuSecs := 0, 0, 0.0
	for _, g := range trace {
		if g.whole(s) {
			whole++
		}
		pods += g.size
		gpuSecs += float64(g.size*g.gpus) * g.run.Seconds()
	}
	return fmt.Sprintf("%d gangs (%d pods, %d of a whole domain), %s apart, run times %s-%s, %.0f GPU-seconds of work",
		len(trace), pods, whole, s.gap, s.minRun, s.maxRun, gpuSecs)
}

// drbBound is the least makespan any scheduler can reach: the later of the
// last gang's submission plus its run time, and the work over the GPUs.
func drbBound(s drbSpec, trace []drbGang) float64 {
	b, work := 0.0, 0.0
	for _, g := range trace {
		b = max(b, (g.submit + g.run).Seconds())
		work += float64(g.size*g.gpus) * g.run.Seconds()
	}
	return max(b, work/float64(s.domains*s.domainNodes*s.gpus))
}

func drbNodeName(d, n int) string { return fmt.Sprintf("nvl%02d-n%02d", d, n) }
func drbDomainName(d int) string  { return fmt.Sprintf("nvl%02d", d) }

// drbResult is one scheduler's run of the trace.
type drbResult struct {
	sched                     string
	gangs, submitted          int
	whole, within, partial    int // bound whole; of those, inside one domain; bound partly (see the doc)
	ended                     int
	pods, podsBound           int
	claimsWanted              int // pods of the gangs ended
	claimsAllocated           int // of those, allocated on the pod's node with every device asked
	overAllocated             int // devices seen in two allocations at once
	makespan, bound           float64
	waits                     []float64 // s, per gang bound whole
	waitingSecs               float64   // time some gang waited
	idleGPUSecs, strandedSecs float64   // GPU-seconds while some gang waited
	fitWaitGangSecs           float64   // gang-seconds waiting while a domain could hold the gang
	allocGPUSecs, sampledSecs float64   // GPUs allocated, integrated over the run
	failedScheduling          int       // FailedScheduling events
	claimRefusals             int       // of which mention a claim, but for fluence's waits
	claimWaits                int       // fluence's waits for kube-scheduler's DRA manager (draRefusal)
	withdrawn                 int       // FluenceGroupWithdrawn events
	pgCycles                  float64   // pod-group scheduling cycles (kube-scheduler's metric)
	stalled                   bool
	setupSecs, runSecs        float64
	notes                     []string
	eventNotes                map[string]int // FailedScheduling notes mentioning claims, by text (a few)
	totalGPUs                 int
	idleMean, strandedMean    float64
	allocatedMean             float64
}

// drbState is a gang's course through a run.
type drbState struct {
	submitted, firstBound, boundWhole, ended time.Time
	partial                                  bool
}

type drbRun struct {
	tb        testing.TB
	c         *cluster
	s         drbSpec
	trace     []drbGang
	client    kubernetes.Interface
	watch     *tpbWatch
	claims    cache.SharedIndexInformer
	schedName string
	domainOf  map[string]int
	st        []drbState
	removing  sync.WaitGroup
	over      map[string]bool // devices seen in two allocations
	start     time.Time
	podNode   map[string]string // pod: its node, once its gang is bound whole
	r         drbResult
}

// drbOnce runs the trace under sched on a fresh cluster.
func drbOnce(tb testing.TB, s drbSpec, trace []drbGang, sched string) drbResult {
	setup := time.Now()
	c := startCluster(tb, localcluster.Options{FeatureGates: tpbGates, ClaimController: true, GarbageCollector: true})
	nodes := s.domains * s.domainNodes
	domainOf := map[string]int{}
	for i := range nodes {
		domainOf[drbNodeName(i/s.domainNodes, i%s.domainNodes)] = i / s.domainNodes
	}
	parallel(16, nodes, func(i int) {
		d, name := i/s.domainNodes, drbNodeName(i/s.domainNodes, i%s.domainNodes)
		c.addNode(name, "64", "512Gi", 0, map[string]string{drbDomainKey: drbDomainName(d)})
		c.publishGPUs(name, s.gpus, 80, "clique="+drbDomainName(d))
	})
	c.createDeviceClass(draDriver)
	var sizes []int
	for _, g := range trace {
		if !slices.Contains(sizes, g.gpus) {
			sizes = append(sizes, g.gpus)
			c.createClaimTemplate(fmt.Sprintf("gpu%d", g.gpus), exactly(int64(g.gpus), ""))
		}
	}
	watch := tpbStartWatch(tb, c)
	f := informers.NewSharedInformerFactoryWithOptions(c.newClient("drb-watch"), 0, informers.WithNamespace(c.NS))
	claims := f.Resource().V1().ResourceClaims().Informer()
	f.Start(c.Ctx.Done())
	if !cache.WaitForCacheSync(c.Ctx.Done(), claims.HasSynced) {
		tb.Fatal("the benchmark's claim informer did not sync")
	}

	var registry frameworkruntime.Registry
	schedName, config := "default-scheduler", stockConfig
	if sched == "fluence" {
		schedName, config, registry = "fluence", fluenceConfig(tb, map[string]string{"topologyLevels": "[" + drbDomainKey + "]"}), fluenceRegistry
	}
	config = setClient(config, "qps", "-1")
	if sched == "stock" {
		tpbCheckStockPlugins(tb, config, "DynamicResources")
	}
	run := &drbRun{tb: tb, c: c, s: s, trace: trace, client: c.newClient("drb-create"), watch: watch, claims: claims,
		schedName: schedName, domainOf: domainOf, st: make([]drbState, len(trace)), over: map[string]bool{}, podNode: map[string]string{},
		r: drbResult{sched: sched, gangs: len(trace), totalGPUs: nodes * s.gpus, bound: drbBound(s, trace), eventNotes: map[string]int{}}}
	run.r.setupSecs = time.Since(setup).Seconds()
	stop := c.startSchedulerWith(config, registry, schedulerOptions{})

	before := takeMetrics()
	if b, ok := tb.(*testing.B); ok {
		b.StartTimer()
	}
	run.replay()
	if b, ok := tb.(*testing.B); ok {
		b.StopTimer()
	}
	after := takeMetrics()
	stop()
	run.r.pgCycles = tpbActivity(before, after, schedName).podGroupAttempts()
	run.countEvents()
	r := &run.r
	if r.waitingSecs > 0 {
		r.idleMean, r.strandedMean = r.idleGPUSecs/r.waitingSecs, r.strandedSecs/r.waitingSecs
	}
	if r.sampledSecs > 0 {
		r.allocatedMean = r.allocGPUSecs / r.sampledSecs / float64(r.totalGPUs)
	}
	return run.r
}

// replay submits the trace on time and follows it to its end.
func (r *drbRun) replay() {
	const sample = 250 * time.Millisecond
	start := time.Now()
	r.start = start
	next, lastSample, lastProgress := 0, start, start
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		now := time.Now()
		for next < len(r.trace) && now.Sub(start) >= r.trace[next].submit {
			r.submit(next)
			next++
			lastProgress = time.Now()
		}
		if r.update(time.Now()) {
			lastProgress = time.Now()
		}
		now = time.Now()
		if now.Sub(lastSample) >= sample {
			r.sample(now.Sub(lastSample).Seconds())
			lastSample = now
		}
		if r.r.ended == len(r.trace) {
			break
		}
		if next == len(r.trace) && now.Sub(lastProgress) > r.s.stall {
			r.r.stalled = true
			r.note("stalled: nothing bound or ended for %s; %d of %d gangs ended", r.s.stall, r.r.ended, len(r.trace))
			break
		}
		if now.Sub(start) > r.s.limit {
			r.r.stalled = true
			r.note("stopped at the limit of %s: %d of %d gangs ended", r.s.limit, r.r.ended, len(r.trace))
			break
		}
		select {
		case <-r.watch.notify:
		case <-tick.C:
		}
	}
	r.r.runSecs = time.Since(start).Seconds()
	r.removing.Wait()
	var last time.Time
	for i, st := range r.st {
		if st.ended.After(last) {
			last = st.ended
		}
		if st.ended.IsZero() && !st.submitted.IsZero() {
			bound := r.boundCount(r.trace[i])
			if bound > 0 && bound < r.trace[i].size && !st.partial {
				r.st[i].partial = true
				r.r.partial++
			}
			if r.s.verbose || len(r.r.notes) < 12 {
				r.note("%s (%d x %d GPUs) not ended: %d of %d pods bound", r.trace[i].name, r.trace[i].size, r.trace[i].gpus, bound, r.trace[i].size)
			}
		}
	}
	if r.r.ended == len(r.trace) {
		r.r.makespan = last.Sub(r.st[0].submitted).Seconds()
	}
}

func (r *drbRun) pods(g drbGang) []*corev1.Pod {
	out := make([]*corev1.Pod, g.size)
	for i := range out {
		p := newTestPod(fmt.Sprintf("%s-%d", g.name, i), r.schedName, "1", "", 0, nil)
		p.Annotations = map[string]string{k8sadapter.DurationKey: fmt.Sprint(int64(g.run.Seconds()))}
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(g.name)}
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To(fmt.Sprintf("gpu%d", g.gpus))}}
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpus"}}
		out[i] = p
	}
	return out
}

func (r *drbRun) submit(i int) {
	g := r.trace[i]
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: g.name, Namespace: r.c.NS},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy:      schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(g.size)}},
			SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: drbDomainKey}}},
		},
	}
	t0, got := tpbCreateGang(r.tb, r.c, r.client, r.pods(g), pg, true, r.note)
	if sc := got.Spec.SchedulingConstraints; sc == nil || len(sc.Topology) != 1 {
		r.tb.Fatal("the API server dropped the PodGroup's schedulingConstraints.topology: TopologyAwareWorkloadScheduling is off")
	}
	r.st[i].submitted = t0
	r.r.submitted++
	r.r.pods += g.size
}

func (r *drbRun) boundCount(g drbGang) int {
	r.watch.mu.Lock()
	defer r.watch.mu.Unlock()
	n := 0
	for i := range g.size {
		if _, ok := r.watch.boundAt[fmt.Sprintf("%s-%d", g.name, i)]; ok {
			n++
		}
	}
	return n
}

// update follows every gang submitted and not ended: bound whole, bound
// partly for too long, or due to end. It says whether anything changed.
func (r *drbRun) update(now time.Time) bool {
	changed := false
	for i, g := range r.trace {
		st := &r.st[i]
		if st.submitted.IsZero() || !st.ended.IsZero() {
			continue
		}
		if st.boundWhole.IsZero() {
			r.watch.mu.Lock()
			var first, last time.Time
			var domains []int
			n := 0
			for k := range g.size {
				name := fmt.Sprintf("%s-%d", g.name, k)
				t, ok := r.watch.boundAt[name]
				if !ok {
					continue
				}
				n++
				if first.IsZero() || t.Before(first) {
					first = t
				}
				if t.After(last) {
					last = t
				}
				r.podNode[name] = r.watch.nodeOf[name]
				if d := r.domainOf[r.watch.nodeOf[name]]; !slices.Contains(domains, d) {
					domains = append(domains, d)
				}
			}
			r.watch.mu.Unlock()
			if n > 0 && st.firstBound.IsZero() {
				st.firstBound = first
				changed = true
			}
			if n > 0 && n < g.size && !st.partial && now.Sub(st.firstBound) > 5*time.Second {
				st.partial = true
				r.r.partial++
				r.note("%s: %d of %d pods bound, the first %.1f s ago", g.name, n, g.size, now.Sub(st.firstBound).Seconds())
			}
			if n == g.size {
				st.boundWhole = last
				changed = true
				r.r.whole++
				r.r.podsBound += g.size
				wait := last.Sub(st.submitted).Seconds()
				r.r.waits = append(r.r.waits, wait)
				if len(domains) == 1 {
					r.r.within++
				} else {
					r.note("%s (%d x %d GPUs) spans domains %v", g.name, g.size, g.gpus, domains)
				}
				if r.s.verbose {
					fmt.Printf("%s %s: %d x %d GPUs bound whole in domain(s) %v after %.1f s\n", r.r.sched, g.name, g.size, g.gpus, domains, wait)
				}
			}
		}
		if !st.boundWhole.IsZero() && now.Sub(st.boundWhole) >= g.run {
			r.checkClaims(g)
			st.ended = now
			r.r.ended++
			changed = true
			r.removing.Go(func() { r.remove(g) })
		}
	}
	return changed
}

// checkClaims counts the gang's claims allocated on their pod's node with
// every device asked, before the gang is deleted.
func (r *drbRun) checkClaims(g drbGang) {
	pods, claims := r.watch.pods.GetStore(), r.claims.GetStore()
	for k := range g.size {
		r.r.claimsWanted++
		o, ok, _ := pods.GetByKey(fmt.Sprintf("%s/%s-%d", r.c.NS, g.name, k))
		if !ok {
			continue
		}
		p := o.(*corev1.Pod)
		if len(p.Status.ResourceClaimStatuses) == 0 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
			r.note("%s: no claim named in its status", p.Name)
			continue
		}
		o, ok, _ = claims.GetByKey(r.c.NS + "/" + *p.Status.ResourceClaimStatuses[0].ResourceClaimName)
		if !ok {
			r.note("%s: its claim is not seen", p.Name)
			continue
		}
		cl := o.(*resourceapi.ResourceClaim)
		if cl.Status.Allocation == nil || len(cl.Status.Allocation.Devices.Results) != g.gpus {
			r.note("%s: claim %s not allocated %d devices", p.Name, cl.Name, g.gpus)
			continue
		}
		good := true
		for _, res := range cl.Status.Allocation.Devices.Results {
			if res.Pool != p.Spec.NodeName {
				good = false
				r.note("%s on %s: claim %s holds %s/%s", p.Name, p.Spec.NodeName, cl.Name, res.Pool, res.Device)
			}
		}
		if good {
			r.r.claimsAllocated++
		}
	}
}

// sample records the free and stranded GPUs, from the claims'
// allocations, for dt seconds.
func (r *drbRun) sample(dt float64) {
	nodes := r.s.domains * r.s.domainNodes
	free := make([]int, nodes)
	index := map[string]int{}
	for i := range nodes {
		free[i] = r.s.gpus
		index[drbNodeName(i/r.s.domainNodes, i%r.s.domainNodes)] = i
	}
	held := map[string]bool{}
	allocated := 0
	for _, o := range r.claims.GetStore().List() {
		cl := o.(*resourceapi.ResourceClaim)
		if cl.Status.Allocation == nil {
			continue
		}
		for _, res := range cl.Status.Allocation.Devices.Results {
			dev := res.Pool + "/" + res.Device
			if held[dev] {
				if !r.over[dev] {
					r.over[dev] = true
					r.r.overAllocated++
					r.note("%s is in two allocations", dev)
				}
				continue
			}
			held[dev] = true
			if i, ok := index[res.Pool]; ok && free[i] > 0 {
				free[i]--
				allocated++
			}
		}
	}
	r.r.sampledSecs += dt
	r.r.allocGPUSecs += dt * float64(allocated)
	var waiting []drbGang
	for i, g := range r.trace {
		if !r.st[i].submitted.IsZero() && r.st[i].boundWhole.IsZero() {
			waiting = append(waiting, g)
		}
	}
	if len(waiting) == 0 {
		return
	}
	fits := func(d int, g drbGang) bool {
		n := 0
		for i := d * r.s.domainNodes; i < (d+1)*r.s.domainNodes; i++ {
			n += free[i] / g.gpus
		}
		return n >= g.size
	}
	idle, stranded := 0, 0
	fitting := map[string]bool{}
	for d := range r.s.domains {
		domFree := 0
		for i := d * r.s.domainNodes; i < (d+1)*r.s.domainNodes; i++ {
			domFree += free[i]
		}
		idle += domFree
		usable := false
		for _, g := range waiting {
			if fits(d, g) {
				usable = true
				fitting[g.name] = true
			}
		}
		if !usable {
			stranded += domFree
		}
	}
	r.r.waitingSecs += dt
	r.r.idleGPUSecs += dt * float64(idle)
	r.r.strandedSecs += dt * float64(stranded)
	r.r.fitWaitGangSecs += dt * float64(len(fitting))
}

// remove deletes the gang's pods and PodGroup; the garbage collector and
// the ResourceClaim controller release its claims.
func (r *drbRun) remove(g drbGang) {
	parallel(16, g.size, func(i int) {
		err := r.client.CoreV1().Pods(r.c.NS).Delete(r.c.Ctx, fmt.Sprintf("%s-%d", g.name, i), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) && r.c.Ctx.Err() == nil {
			r.tb.Errorf("deleting a pod of %s: %v", g.name, err)
		}
	})
	if err := r.client.SchedulingV1beta1().PodGroups(r.c.NS).Delete(r.c.Ctx, g.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) && r.c.Ctx.Err() == nil {
		r.tb.Errorf("deleting PodGroup %s: %v", g.name, err)
	}
}

// countEvents counts the FailedScheduling events (once each) and those
// that mention a claim, and fluence's withdrawals.
func (r *drbRun) countEvents() {
	list, err := r.client.EventsV1().Events(r.c.NS).List(r.c.Ctx, metav1.ListOptions{})
	if err != nil {
		r.tb.Fatal(err)
	}
	for _, e := range list.Items {
		switch e.Reason {
		case "FailedScheduling":
			r.r.failedScheduling++
			if !draRefusal(e.Note) && strings.Contains(e.Note, "claim") {
				r.r.claimWaits++
			}
			if draRefusal(e.Note) {
				r.r.claimRefusals++
				if r.schedName == "fluence" {
					r.explainRefusal(e.Regarding.Name, e.EventTime.Time, e.Note)
				}
				if len(r.r.eventNotes) < 3 || r.r.eventNotes[e.Note] > 0 {
					r.r.eventNotes[e.Note]++
				}
			}
		case "FluenceGroupWithdrawn":
			r.r.withdrawn++
			r.note("withdrawn: %s", e.Note)
		}
	}
}

// explainRefusal notes, for a pod fluence placed and DynamicResources
// refused, when the refusal came, where the pod was bound in the end, and
// which gang last ended on that node before it: what held the devices.
func (r *drbRun) explainRefusal(pod string, at time.Time, note string) {
	node := r.podNode[pod]
	since := func(t time.Time) float64 { return t.Sub(r.start).Seconds() }
	prev, prevEnd := "", time.Time{}
	for i, g := range r.trace {
		st := r.st[i]
		if st.ended.IsZero() || !st.ended.Before(at) || strings.HasPrefix(pod, g.name+"-") {
			continue
		}
		for k := range g.size {
			if r.podNode[fmt.Sprintf("%s-%d", g.name, k)] == node && st.ended.After(prevEnd) {
				prev, prevEnd = g.name, st.ended
			}
		}
	}
	gang, _, _ := strings.Cut(pod, "-")
	bound := time.Time{}
	for i, g := range r.trace {
		if g.name == gang {
			bound = r.st[i].boundWhole
		}
	}
	r.note("refused: %s at +%.2f s (%q); bound whole on %s at +%.2f s; the last gang before it on that node, %s, was deleted at +%.2f s",
		pod, since(at), note, node, since(bound), cmp.Or(prev, "none"), since(prevEnd))
}

func (r *drbRun) note(format string, args ...any) {
	if len(r.r.notes) < 30 {
		r.r.notes = append(r.r.notes, fmt.Sprintf(format, args...))
	}
}

func (r drbResult) report(b *testing.B) {
	b.ReportMetric(float64(r.ended), "gangs-ended")
	b.ReportMetric(r.makespan, "makespan-s")
	b.ReportMetric(r.strandedMean, "stranded-GPUs")
	b.ReportMetric(r.idleMean, "idle-GPUs-while-waiting")
	b.ReportMetric(tpbMean(r.waits), "wait-s/gang")
	b.ReportMetric(float64(r.partial), "partial-gangs")
	b.ReportMetric(float64(r.claimRefusals), "claim-refusals")
	b.Logf("%s: %d of %d gangs ended in %.1f s (setup %.1f s), %d bound whole, %d inside one domain, %d partial",
		r.sched, r.ended, r.gangs, r.runSecs, r.setupSecs, r.whole, r.within, r.partial)
	for _, n := range r.notes {
		fmt.Printf("%s: %s\n", r.sched, n)
	}
	for n, k := range r.eventNotes {
		fmt.Printf("%s: FailedScheduling x%d: %s\n", r.sched, k, n)
	}
}

// drbTable lays the runs side by side.
func drbTable(rs []drbResult) string {
	rows := []benchRow[drbResult]{
		{"gangs ended / submitted", func(r drbResult) string { return fmt.Sprintf("%d / %d", r.ended, r.submitted) }},
		{"makespan s (bound)", func(r drbResult) string {
			if r.ended != r.gangs {
				return fmt.Sprintf("- (%.1f)", r.bound)
			}
			return fmt.Sprintf("%.1f (%.1f)", r.makespan, r.bound)
		}},
		{"  x the bound", func(r drbResult) string {
			if r.ended != r.gangs {
				return "-"
			}
			return fmt.Sprintf("%.2f", r.makespan/r.bound)
		}},
		{"gang wait s mean", func(r drbResult) string { return fmt.Sprintf("%.1f", tpbMean(r.waits)) }},
		{"  p50 / p90 / max", func(r drbResult) string {
			return fmt.Sprintf("%.1f / %.1f / %.1f", tpbQuantile(r.waits, 0.5), tpbQuantile(r.waits, 0.9), tpbQuantile(r.waits, 1))
		}},
		{"bound whole", func(r drbResult) string { return fmt.Sprint(r.whole) }},
		{"  inside one domain", func(r drbResult) string { return fmt.Sprint(r.within) }},
		{"partial (a pod unbound 5 s)", func(r drbResult) string { return fmt.Sprint(r.partial) }},
		{"claims allocated (ended)", func(r drbResult) string { return fmt.Sprintf("%d / %d", r.claimsAllocated, r.claimsWanted) }},
		{"devices over-allocated", func(r drbResult) string { return fmt.Sprint(r.overAllocated) }},
		{"GPUs allocated, mean", func(r drbResult) string { return fmt.Sprintf("%.1f%%", 100*r.allocatedMean) }},
		{"time some gang waited s", func(r drbResult) string { return fmt.Sprintf("%.1f", r.waitingSecs) }},
		{"  idle GPUs, mean", func(r drbResult) string { return fmt.Sprintf("%.1f", r.idleMean) }},
		{"  stranded GPUs, mean", func(r drbResult) string { return fmt.Sprintf("%.1f", r.strandedMean) }},
		{"  waiting though it fit, gang-s", func(r drbResult) string { return fmt.Sprintf("%.1f", r.fitWaitGangSecs) }},
		{"FailedScheduling events", func(r drbResult) string { return fmt.Sprint(r.failedScheduling) }},
		{"  mentioning a claim", func(r drbResult) string { return fmt.Sprint(r.claimRefusals) }},
		{"  fluence waiting for the DRA manager", func(r drbResult) string { return fmt.Sprint(r.claimWaits) }},
		{"FluenceGroupWithdrawn", func(r drbResult) string { return fmt.Sprint(r.withdrawn) }},
		{"pod-group cycles", func(r drbResult) string { return fmt.Sprintf("%.0f", r.pgCycles) }},
		{"pods bound / s of makespan", func(r drbResult) string {
			if r.makespan == 0 {
				return fmt.Sprintf("- (%d bound)", r.podsBound)
			}
			return fmt.Sprintf("%.1f", float64(r.podsBound)/r.makespan)
		}},
		{"run s (setup s)", func(r drbResult) string { return fmt.Sprintf("%.1f (%.1f)", r.runSecs, r.setupSecs) }},
	}
	var heads []string
	for _, r := range rs {
		heads = append(heads, r.sched)
	}
	return benchTable(heads, rows, rs, 32, 20)
}
