package integration

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// BenchmarkTopologyPlacement places the same stream of topology-constrained
// gangs, one at a time, on a live API server with simulated nodes, under
// kube-scheduler 1.37's own workload scheduling (GenericWorkload and
// TopologyAwareWorkloadScheduling on: its GangScheduling,
// TopologyPlacementGenerator and PodGroupPodsCount plugins) and under
// fluence, each on a fresh cluster in the same run. Run with
// make bench-topology (1,000 nodes, about 5 minutes on 2 cores) or
// make bench-topology-5k (5,000 nodes, 150 groups, 7 to 17 minutes).
//
// The cluster: nodes of 32 CPUs in racks of 40, blocks of 5 racks and
// zones of 5 blocks, labelled topology.kubernetes.io/zone,
// example.com/block and example.com/rack (5,000 nodes: 5 zones x 5 blocks
// x 5 racks x 40; 1,000: one zone of 5 blocks). Before the scheduler
// starts every node is loaded, by plain pods of 4-16 CPUs bound directly
// (spec.nodeName), to a level drawn per rack (1/4, 5/8, 3/4, 7/8 or 15/16
// of the node, +-25% per node): racks differ, and nodes are left with odd
// amounts of room.
//
// The workload: groups of 8-64 identical pods of 1, 2, 4, 6 or 8 CPUs
// (sizes, CPUs and lifetimes drawn from FLUENCE_BENCH_SEED), each a
// scheduling.k8s.io/v1beta1 PodGroup with the gang policy (minCount =
// size) and schedulingConstraints.topology [{key: example.com/rack}] or
// [{key: example.com/block}], alternately; its pods name it in
// spec.schedulingGroup. Groups are submitted one at a time: the next is
// created once the previous one is bound whole or given up. A placed group
// lives a number of submissions drawn around the mean that keeps the
// groups' demand about equal to the room the preload left, then is
// deleted: the cluster fills, then stays near full and fragmented, and the
// domain each scheduler chose decides what the groups after it find.
//
// Feasibility is computed on the client side, exactly, before each group
// is created: every earlier group is then bound or deleted and seen so by
// the benchmark's watch, so the free CPUs and pod slots of every node are
// known. The pods of a group are identical, so a domain can hold the group
// if and only if the sum over its nodes of min(free CPU / pod CPU, free
// pod slots) is at least the group's size: each pod takes exactly one such
// slot wherever it goes. A scheduler's cache can only lag behind this
// (deletions it has not seen yet): it never sees more room. The groups
// placed among those that fit must be all of them; how often the group
// went to the tightest domain that fits shows the policy (kube-scheduler
// scores placements by PodGroupPodsCount, the same for every domain that
// holds the whole group, and breaks the tie at random).
//
// A group's pods are created first, then its PodGroup, once the scheduler
// holds all the pods: kube-scheduler's queue keeps pods whose PodGroup it
// has not seen apart (pending_pods{queue="incomplete"} counts them) and
// lets them go together when the PodGroup arrives; the benchmark polls
// that gauge every millisecond before creating the PodGroup. Wall time
// runs from the PodGroup's creation to the last pod seen bound by the
// watch. Two races remain, and the table counts the groups they hit
// ("placed after a failed cycle": the PodGroup said
// PodGroupInitiallyScheduled=False before its pods bound):
//   - kube-scheduler 1.37 moves the held pods into the active queue one by
//     one (PriorityQueue.AddPodGroup) while the scheduling loop pops from
//     that queue under another lock: a cycle can start with part of the
//     group, fail (fewer than minCount), and the group waits out a
//     back-off of 1-2 s;
//   - fluence reads PodGroups through an informer of its own, which can
//     see a new PodGroup after kube-scheduler's has: the pods met before
//     fail ("PodGroup ... not found"), the cycle fails, same back-off.
//
// So that the figures are the schedulers' and not these back-offs, the
// wall time is also given for the groups placed with no failed cycle.
// FLUENCE_BENCH_PODGROUP_FIRST=1 creates each PodGroup first and its pods
// right after, as a controller does; wall time then starts at the
// PodGroup. kube-scheduler's GangScheduling holds the pods until minCount
// exist; fluence's profile turns that plugin off, so its first cycles see
// part of the group, fail, and back off.
//
// A group counts as placed when all its pods are seen bound within
// FLUENCE_BENCH_GROUP_TIMEOUT (30s); a group no domain can hold is given up
// once its PodGroup says PodGroupInitiallyScheduled=False (kube-scheduler's
// pod-group cycle writes it, for both profiles); groups not placed are
// deleted. The run fails if a placed group spans two domains of its key,
// if a group is left bound in part, if a group is placed that no domain
// could hold, or if a node is seen over-committed.
//
// From the scheduler's metrics, per group submitted: its pod-group cycles
// (scheduler_podgroup_scheduling_attempt_duration_seconds: the whole
// cycle, from the snapshot to the last pod handed to binding, including
// the API calls the cycle makes itself: the PodGroup's status, and the
// status of every pod it turns away, which kube-scheduler 1.37 patches one
// by one unless SchedulerAsyncAPICalls is on); of which the algorithm
// (placements generated and evaluated, the per-pod algorithm in each,
// with its PreFilter and PreScore + Score; what remains of the per-pod
// algorithm is mostly Filter), Reserve + Permit, and PodGroupPostFilter
// (preemption); the Bind calls, which run after the cycle, in parallel.
// For fluence, PreFilter is where its core decides. What the wall time
// has beyond the cycles is the queue and informers, and the Binding calls.
//
// Neither limiter is in the figures: the schedulers' clients have no rate
// limit (qps -1), nor has the benchmark's; the benchmark waits on watch
// events, not polls (but for the gauge, before the clock starts); a group
// is offered once, whole; back-offs only follow a failed cycle, counted as
// above. Both schedulers, the API server and etcd share the machine's
// cores: on 2 cores the API calls are slow (a Binding tens of ms).
//
// The environment changes it:
//   - FLUENCE_BENCH_NODES (1000): a multiple of 40;
//   - FLUENCE_BENCH_GROUPS: groups submitted (default 3/2 of the mean
//     lifetime, so the last third of the run is at the steady state;
//     about 100 at 1,000 nodes);
//   - FLUENCE_BENCH_SEED (1): the workload's seed;
//   - FLUENCE_BENCH_GROUP_TIMEOUT (30s): how long a group that fits is
//     waited for;
//   - FLUENCE_BENCH_SCHEDULERS (stock,fluence): which to run;
//   - FLUENCE_BENCH_FLUENCE_LEVELS (1): 0 runs fluence with the shipped
//     configuration's topologyLevels [] (the PodGroup's key alone confines
//     a group) instead of [zone, block, rack];
//   - FLUENCE_BENCH_PODGROUP_FIRST: 1, as above;
//   - FLUENCE_BENCH_FEATURE_GATES: further feature gates, for the API
//     server and both schedulers;
//   - FLUENCE_BENCH_VERBOSE: set, every group's outcome is printed.
//
// Both schedulers run in this process, since the API server needs the
// gates on and shares them with whatever runs beside it: fluence thus runs
// with kube-scheduler's workload gates on (its profile turns the in-tree
// gang and placement plugins off, so its pods go through kube-scheduler's
// pod-group cycle with one placement of every node, fluence's PreFilter
// choosing the nodes). kube-scheduler registers its pod-group metrics once
// per process, with the gates of the first scheduler: run this benchmark
// alone (-bench BenchmarkTopologyPlacement) for them. A benchmark's log is
// cut at 10 lines: the table and the notes are printed to stdout.
func BenchmarkTopologyPlacement(b *testing.B) {
	nodes := envInt("FLUENCE_BENCH_NODES", 1000)
	if nodes%tpbRackNodes != 0 {
		b.Fatalf("FLUENCE_BENCH_NODES=%d: racks are %d nodes; give a multiple of %d", nodes, tpbRackNodes, tpbRackNodes)
	}
	seed := uint64(envInt("FLUENCE_BENCH_SEED", 1))
	timeout := 30 * time.Second
	if v := os.Getenv("FLUENCE_BENCH_GROUP_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("FLUENCE_BENCH_GROUP_TIMEOUT=%q: want a duration", v)
		}
		timeout = d
	}
	if gates := os.Getenv("FLUENCE_BENCH_FEATURE_GATES"); gates != "" {
		if err := utilfeature.DefaultMutableFeatureGate.Set(gates); err != nil {
			b.Fatalf("FLUENCE_BENCH_FEATURE_GATES: %v", err)
		}
		fmt.Printf("BenchmarkTopologyPlacement: feature gates %s\n", gates)
	}
	scheds := strings.Split(os.Getenv("FLUENCE_BENCH_SCHEDULERS"), ",")
	if os.Getenv("FLUENCE_BENCH_SCHEDULERS") == "" {
		scheds = []string{"stock", "fluence"}
	}
	w := tpbMakeWorkload(nodes, envInt("FLUENCE_BENCH_GROUPS", 0), seed)
	// The parent benchmark's log is not printed: this goes to stdout.
	fmt.Printf("BenchmarkTopologyPlacement: %d nodes (%d racks, %d blocks, %d zones), %d preload pods holding %.0f%% of %d CPUs; %d groups of 8-64 pods, mean %.0f CPUs, alive for %d submissions on average; seed %d\n",
		nodes, w.racks(), w.blocks(), w.zones(), w.bgPods(), 100*float64(w.bgMilli())/float64(nodes*tpbNodeMilli), nodes*tpbNodeMilli/1000,
		len(w.groups), w.meanGroupMilli()/1000, w.meanLife, seed)

	var results []tpbResult
	for _, sched := range scheds {
		if sched != "stock" && sched != "fluence" {
			b.Fatalf("FLUENCE_BENCH_SCHEDULERS: %q is neither stock nor fluence", sched)
		}
		b.Run(sched, func(b *testing.B) {
			var r tpbResult
			for range b.N {
				r = tpbOnce(b, w, sched, timeout)
			}
			r.report(b)
			results = append(results, r)
		})
	}
	if len(results) > 0 {
		// A benchmark's log is cut at 10 lines: the table goes to stdout.
		fmt.Printf("\nBenchmarkTopologyPlacement: %d nodes, %d groups, one at a time\n%s\n", nodes, len(w.groups), tpbTable(results))
	}
}

// Node labels and sizes of the benchmark's cluster.
const (
	tpbZoneKey    = "topology.kubernetes.io/zone"
	tpbBlockKey   = "example.com/block"
	tpbRackKey    = "example.com/rack"
	tpbRackNodes  = 40
	tpbBlockRacks = 5
	tpbZoneBlocks = 5
	tpbNodeMilli  = 32000
	tpbNodePods   = 110
)

// tpbGates are the API server's and the schedulers' gates: v1beta1
// PodGroups and spec.schedulingGroup (GenericWorkload; the API server is
// then started with --runtime-config scheduling.k8s.io/v1beta1=true by
// localcluster), and the PodGroup's schedulingConstraints, which the API
// server drops without TopologyAwareWorkloadScheduling, and kube-scheduler's
// placement plugins and algorithm.
var tpbGates = map[string]bool{"GenericWorkload": true, "TopologyAwareWorkloadScheduling": true}

type tpbGroup struct {
	name  string
	size  int
	milli int64  // each pod's CPU request
	key   string // the topology key: rack or block
	end   int    // deleted once the group of this index is concluded
}

type tpbWorkload struct {
	nodes    int
	bg       [][]int64 // preload pods' CPU, per node
	groups   []tpbGroup
	meanLife int
}

func (w *tpbWorkload) racks() int  { return w.nodes / tpbRackNodes }
func (w *tpbWorkload) blocks() int { return (w.racks() + tpbBlockRacks - 1) / tpbBlockRacks }
func (w *tpbWorkload) zones() int  { return (w.blocks() + tpbZoneBlocks - 1) / tpbZoneBlocks }

func (w *tpbWorkload) bgPods() int {
	n := 0
	for _, p := range w.bg {
		n += len(p)
	}
	return n
}

func (w *tpbWorkload) bgMilli() int64 {
	var m int64
	for _, p := range w.bg {
		for _, x := range p {
			m += x
		}
	}
	return m
}

func (w *tpbWorkload) meanGroupMilli() float64 {
	var m int64
	for _, g := range w.groups {
		m += int64(g.size) * g.milli
	}
	return float64(m) / float64(max(1, len(w.groups)))
}

// tpbDomain is node i's domain of key.
func tpbDomain(i int, key string) string {
	rack := i / tpbRackNodes
	switch key {
	case tpbRackKey:
		return fmt.Sprintf("r%04d", rack)
	case tpbBlockKey:
		return fmt.Sprintf("b%03d", rack/tpbBlockRacks)
	case tpbZoneKey:
		return fmt.Sprintf("z%02d", rack/tpbBlockRacks/tpbZoneBlocks)
	}
	return ""
}

func tpbNodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// tpbNodeIndex is the index in a node's name, -1 for another name.
func tpbNodeIndex(name string) int {
	i, err := strconv.Atoi(strings.TrimPrefix(name, "node-"))
	if err != nil || !strings.HasPrefix(name, "node-") {
		return -1
	}
	return i
}

// tpbMakeWorkload draws the preload and the groups from seed. groups 0
// means 3/2 of the mean lifetime.
func tpbMakeWorkload(nodes, groups int, seed uint64) *tpbWorkload {
	rng := rand.New(rand.NewPCG(seed, 0x746f706f))
	w := &tpbWorkload{nodes: nodes, bg: make([][]int64, nodes)}
	levels := []float64{0.25, 0.625, 0.75, 0.875, 0.9375}
	var free int64
	for r := range nodes / tpbRackNodes {
		level := levels[rng.IntN(len(levels))]
		for i := r * tpbRackNodes; i < (r+1)*tpbRackNodes; i++ {
			load := int64(level * float64(tpbNodeMilli) * (0.75 + 0.5*rng.Float64()))
			load = min(load/1000*1000, tpbNodeMilli-1000)
			free += tpbNodeMilli - load
			for load > 0 {
				cpu := min(load, int64(1000*(4+rng.IntN(13))))
				w.bg[i] = append(w.bg[i], cpu)
				load -= cpu
			}
		}
	}
	// A group: 8-64 pods of 1, 2, 4, 6 or 8 CPUs, 151 CPUs on average.
	// The mean lifetime keeps about free/151 groups alive: their demand
	// matches the room the preload left. Groups alive reach about 7/8 of
	// that by the meanLife-th submission, all of it by 3/2 meanLife.
	cpus := []int64{1000, 2000, 4000, 6000, 8000}
	const meanMilli = 36 * 4200
	w.meanLife = max(4, int(free/meanMilli))
	if groups <= 0 {
		groups = w.meanLife * 3 / 2
	}
	for i := range groups {
		g := tpbGroup{
			name:  fmt.Sprintf("g%04d", i),
			size:  8 + rng.IntN(57),
			milli: cpus[rng.IntN(len(cpus))],
			key:   tpbRackKey,
		}
		if i%2 == 1 {
			g.key = tpbBlockKey
		}
		g.end = i + w.meanLife/2 + rng.IntN(w.meanLife+1)
		w.groups = append(w.groups, g)
	}
	return w
}

// tpbResult is one scheduler's run.
type tpbResult struct {
	sched     string
	groups    int
	feasible  int // a domain could hold the group when it was created
	placed    int // all its pods bound
	placedOK  int // placed, and a domain could hold it
	placedBad int // placed though no domain could hold it (a bug here or there)
	within    int // placed, every pod within one domain of its key
	partial   int // some pods bound, not all, when given up
	timedOut  int // could be held, not placed within the timeout
	bestFit   int // placed in the tightest domain that could hold it
	byKey     map[string][2]int
	wall      []float64 // ms, PodGroup created to last pod bound, placed groups
	wallClean []float64 // the same, groups placed with no failed cycle before
	retried   int       // placed after a failed pod-group cycle (PodGroupInitiallyScheduled False first)
	rejectMs  []float64 // ms, PodGroup created to its condition False, groups no domain could hold
	allocated float64   // mean share of the cluster's CPUs allocated when a group was created
	overSeen  int       // nodes seen over-committed
	runSecs   float64
	m         tpbMetrics
	notes     []string
}

// tpbOnce runs the workload under sched on a fresh cluster.
func tpbOnce(b *testing.B, w *tpbWorkload, sched string, timeout time.Duration) tpbResult {
	b.StopTimer()
	setup := time.Now()
	c := startCluster(b, localcluster.Options{FeatureGates: tpbGates})
	creator := c.newClient("tpb-create")
	parallel(16, w.nodes, func(i int) {
		c.addNode(tpbNodeName(i), "32", "128Gi", 0, map[string]string{
			tpbZoneKey: tpbDomain(i, tpbZoneKey), tpbBlockKey: tpbDomain(i, tpbBlockKey), tpbRackKey: tpbDomain(i, tpbRackKey)})
	})
	type bgPod struct {
		node  int
		milli int64
		n     int
	}
	var bg []bgPod
	for i, pods := range w.bg {
		for n, m := range pods {
			bg = append(bg, bgPod{i, m, n})
		}
	}
	parallel(16, len(bg), func(i int) {
		p := newTestPod(fmt.Sprintf("bg-%05d-%d", bg[i].node, bg[i].n), "default-scheduler", fmt.Sprintf("%dm", bg[i].milli), "", 0, nil)
		p.Spec.NodeName = tpbNodeName(bg[i].node)
		if _, err := creator.CoreV1().Pods(c.NS).Create(c.Ctx, p, metav1.CreateOptions{}); err != nil {
			b.Errorf("creating %s: %v", p.Name, err)
		}
	})
	watch := tpbStartWatch(b, c)
	if !watch.waitFor(time.Minute, func() bool { return len(watch.pods.GetStore().ListKeys()) >= len(bg) }) {
		b.Fatalf("the watch saw %d of %d preload pods", len(watch.pods.GetStore().ListKeys()), len(bg))
	}

	// The stock scheduler: in-tree plugins only.
	var registry frameworkruntime.Registry
	schedName, config := "default-scheduler", stockConfig
	if sched == "fluence" {
		args := map[string]string{"topologyLevels": "[" + tpbZoneKey + ", " + tpbBlockKey + ", " + tpbRackKey + "]"}
		if os.Getenv("FLUENCE_BENCH_FLUENCE_LEVELS") == "0" {
			args = nil
		}
		schedName, config, registry = "fluence", fluenceConfig(b, args), fluenceRegistry
	}
	config = setClient(config, "qps", "-1")
	if sched == "stock" {
		tpbCheckStockPlugins(b, config)
	}
	run := &tpbRun{b: b, c: c, w: w, client: creator, watch: watch, schedName: schedName, timeout: timeout,
		verbose: os.Getenv("FLUENCE_BENCH_VERBOSE") != "", podGroupFirst: os.Getenv("FLUENCE_BENCH_PODGROUP_FIRST") == "1",
		r: tpbResult{sched: sched, byKey: map[string][2]int{}}}
	b.Logf("%s: cluster of %d nodes and %d preload pods ready in %.1f s", sched, w.nodes, len(bg), time.Since(setup).Seconds())
	stop := c.startSchedulerWith(config, registry, schedulerOptions{})

	// One group, not counted, so that the first counted one meets a warm
	// scheduler; it also checks the API server kept the fields.
	run.warmUp()

	before := takeMetrics()
	start := time.Now()
	b.StartTimer()
	for i := range w.groups {
		run.submit(i)
	}
	b.StopTimer()
	run.r.runSecs = time.Since(start).Seconds()
	after := takeMetrics()
	stop()
	run.r.m = tpbActivity(before, after, schedName)
	if run.r.m.podGroupAttempts() == 0 {
		run.r.notes = append(run.r.notes, "no pod-group metrics: kube-scheduler registers them once per process, with the gates of its first scheduler; run this benchmark alone")
	}
	if sched == "stock" && run.r.m.placements == 0 && run.r.m.podGroupAttempts() > 0 {
		b.Errorf("stock: pod-group cycles ran but no placement was generated: TopologyPlacementGenerator did not run")
	}
	return run.r
}

// tpbCheckStockPlugins fails unless the stock profile, as kube-scheduler
// defaults it with the gates on, has the in-tree workload plugins, and the
// further plugins named.
func tpbCheckStockPlugins(tb testing.TB, config string, more ...string) {
	cfg, err := decodeSchedulerConfig(config)
	if err != nil {
		tb.Fatal(err)
	}
	have := map[string]bool{}
	for _, p := range cfg.Profiles[0].Plugins.MultiPoint.Enabled {
		have[p.Name] = true
	}
	for _, want := range append([]string{"GangScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount"}, more...) {
		if !have[want] {
			tb.Fatalf("the stock profile lacks %s with gates %v: kube-scheduler adds it to its default plugins only when its gate is on", want, tpbGates)
		}
	}
}

// tpbWatch follows the namespace's pods and PodGroups for the benchmark.
type tpbWatch struct {
	pods, podGroups cache.SharedIndexInformer

	mu      sync.Mutex
	boundAt map[string]time.Time // pod name: when first seen bound
	nodeOf  map[string]string
	falseAt map[string]time.Time // PodGroup: when first seen PodGroupInitiallyScheduled=False
	notify  chan struct{}
}

func tpbStartWatch(b testing.TB, c *cluster) *tpbWatch {
	w := &tpbWatch{boundAt: map[string]time.Time{}, nodeOf: map[string]string{}, falseAt: map[string]time.Time{}, notify: make(chan struct{}, 1)}
	f := informers.NewSharedInformerFactoryWithOptions(c.newClient("tpb-watch"), 0, informers.WithNamespace(c.NS))
	w.pods = f.Core().V1().Pods().Informer()
	w.podGroups = f.Scheduling().V1beta1().PodGroups().Informer()
	pod := func(o any) {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return
		}
		if p.Spec.NodeName != "" {
			w.mu.Lock()
			if _, ok := w.boundAt[p.Name]; !ok {
				w.boundAt[p.Name] = time.Now()
				w.nodeOf[p.Name] = p.Spec.NodeName
			}
			w.mu.Unlock()
		}
		w.poke()
	}
	_, err := w.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    pod,
		UpdateFunc: func(_, o any) { pod(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if p, ok := o.(*corev1.Pod); ok {
				w.mu.Lock()
				delete(w.boundAt, p.Name)
				delete(w.nodeOf, p.Name)
				w.mu.Unlock()
			}
			w.poke()
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	pg := func(o any) {
		g, ok := o.(*schedulingv1beta1.PodGroup)
		if !ok {
			return
		}
		if cond := meta.FindStatusCondition(g.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled); cond != nil && cond.Status == metav1.ConditionFalse {
			w.mu.Lock()
			if _, ok := w.falseAt[g.Name]; !ok {
				w.falseAt[g.Name] = time.Now()
			}
			w.mu.Unlock()
		}
		w.poke()
	}
	_, err = w.podGroups.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    pg,
		UpdateFunc: func(_, o any) { pg(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if g, ok := o.(*schedulingv1beta1.PodGroup); ok {
				w.mu.Lock()
				delete(w.falseAt, g.Name)
				w.mu.Unlock()
			}
			w.poke()
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	f.Start(c.Ctx.Done())
	if !cache.WaitForCacheSync(c.Ctx.Done(), w.pods.HasSynced, w.podGroups.HasSynced) {
		b.Fatal("the benchmark's informers did not sync")
	}
	return w
}

func (w *tpbWatch) poke() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// waitFor waits until cond holds, testing it after every event the watch
// sees, and says whether it did within timeout.
func (w *tpbWatch) waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-w.notify:
		case <-deadline.C:
			return cond()
		}
	}
}

// tpbRun is one scheduler's pass over the workload.
type tpbRun struct {
	b             *testing.B
	c             *cluster
	w             *tpbWorkload
	client        kubernetes.Interface
	watch         *tpbWatch
	schedName     string
	timeout       time.Duration
	verbose       bool  // log every group's outcome
	podGroupFirst bool  // create a group's PodGroup before its pods
	live          []int // indexes of placed groups not yet deleted
	r             tpbResult
}

func (r *tpbRun) pods(g tpbGroup) []*corev1.Pod {
	out := make([]*corev1.Pod, g.size)
	for i := range out {
		p := newTestPod(fmt.Sprintf("%s-%d", g.name, i), r.schedName, fmt.Sprintf("%dm", g.milli), "", 0, nil)
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(g.name)}
		out[i] = p
	}
	return out
}

func (r *tpbRun) podGroup(g tpbGroup) *schedulingv1beta1.PodGroup {
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: g.name, Namespace: r.c.NS},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(g.size)}},
		},
	}
	if g.key != "" {
		pg.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: g.key}}}
	}
	return pg
}

// create creates the group and returns when it began.
//
// By default the pods come first, then the PodGroup once the scheduler
// holds them all: kube-scheduler's queue keeps a pod whose PodGroup it
// has not seen apart (its pending_pods{queue="incomplete"} gauge counts
// them), and lets them all go when the PodGroup arrives; t0 is the
// PodGroup's creation. Waiting for the scheduler rather than for the
// benchmark's own watch matters: the scheduler's informer can lag, and a
// PodGroup seen before its last pods makes a cycle with part of the
// group, which fails and sends the group to back-off (1 s, then more).
//
// With podGroupFirst the PodGroup is created first (t0), then its pods, as
// a controller does: each scheduler then meets a group whose pods arrive
// over some milliseconds.
func (r *tpbRun) create(g tpbGroup) (time.Time, *schedulingv1beta1.PodGroup) {
	return tpbCreateGang(r.b, r.c, r.client, r.pods(g), r.podGroup(g), r.podGroupFirst, r.note)
}

// tpbCreateGang creates a gang's pods and its PodGroup, as create says,
// and returns when the PodGroup was created, and the PodGroup.
func tpbCreateGang(tb testing.TB, c *cluster, client kubernetes.Interface, pods []*corev1.Pod, want *schedulingv1beta1.PodGroup,
	podGroupFirst bool, note func(format string, args ...any)) (time.Time, *schedulingv1beta1.PodGroup) {
	held := func() float64 { v, _ := testutil.GetGaugeMetricValue(schedmetrics.IncompletePodGroupPods()); return v }
	base := held()
	var t0 time.Time
	var pg *schedulingv1beta1.PodGroup
	createPodGroup := func() {
		t0 = time.Now()
		var err error
		if pg, err = client.SchedulingV1beta1().PodGroups(c.NS).Create(c.Ctx, want, metav1.CreateOptions{}); err != nil {
			tb.Fatalf("creating PodGroup %s: %v", want.Name, err)
		}
	}
	if podGroupFirst {
		createPodGroup()
	}
	var dropped atomic.Bool
	parallel(16, len(pods), func(i int) {
		got, err := client.CoreV1().Pods(c.NS).Create(c.Ctx, pods[i], metav1.CreateOptions{})
		if err != nil {
			tb.Errorf("creating %s: %v", pods[i].Name, err)
		} else if got.Spec.SchedulingGroup == nil {
			dropped.Store(true)
		}
	})
	if dropped.Load() {
		tb.Fatalf("the API server dropped spec.schedulingGroup of %s's pods: GenericWorkload is off", want.Name)
	}
	if !podGroupFirst {
		for start := time.Now(); held()-base < float64(len(pods)); time.Sleep(time.Millisecond) {
			if time.Since(start) > 30*time.Second {
				note("%s: the scheduler held %.0f of its %d pods after 30 s; PodGroup created anyway", want.Name, held()-base, len(pods))
				break
			}
		}
		createPodGroup()
	}
	return t0, pg
}

// warmUp places one 8-pod group within a zone, unmeasured, and deletes it.
func (r *tpbRun) warmUp() {
	g := tpbGroup{name: "warmup", size: 8, milli: 1000, key: tpbZoneKey}
	_, pg := r.create(g)
	if sc := pg.Spec.SchedulingConstraints; sc == nil || len(sc.Topology) != 1 {
		r.b.Fatal("the API server dropped the PodGroup's schedulingConstraints.topology: TopologyAwareWorkloadScheduling is off")
	}
	if !r.watch.waitFor(2*time.Minute, func() bool { return r.boundCount(g) == g.size }) {
		r.b.Fatalf("%s: the warm-up group was not bound within 2 minutes (%d of %d pods)", r.r.sched, r.boundCount(g), g.size)
	}
	r.remove(g)
}

func (r *tpbRun) boundCount(g tpbGroup) int {
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

// remove deletes the group's pods and PodGroup and waits until the watch
// has seen the pods go.
func (r *tpbRun) remove(g tpbGroup) {
	parallel(16, g.size, func(i int) {
		err := r.client.CoreV1().Pods(r.c.NS).Delete(r.c.Ctx, fmt.Sprintf("%s-%d", g.name, i), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			r.b.Errorf("deleting a pod of %s: %v", g.name, err)
		}
	})
	if err := r.client.SchedulingV1beta1().PodGroups(r.c.NS).Delete(r.c.Ctx, g.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		r.b.Errorf("deleting PodGroup %s: %v", g.name, err)
	}
	store := r.watch.pods.GetStore()
	if !r.watch.waitFor(time.Minute, func() bool {
		for i := range g.size {
			if _, ok, _ := store.GetByKey(fmt.Sprintf("%s/%s-%d", r.c.NS, g.name, i)); ok {
				return false
			}
		}
		return true
	}) {
		r.b.Fatalf("%s: the group's pods were not seen deleted within a minute", g.name)
	}
}

// tpbDomainRoom is what one domain offers a group.
type tpbDomainRoom struct {
	slots int   // pods of the group it can hold
	free  int64 // free CPU, milli
}

// room returns, per domain of key, how many pods of milli CPUs it can
// hold and its free CPUs, from the watch's pods; and the share of the
// cluster's CPUs allocated.
func (r *tpbRun) room(key string, milli int64) (map[string]tpbDomainRoom, float64) {
	used := make([]int64, r.w.nodes)
	count := make([]int, r.w.nodes)
	var total int64
	for _, o := range r.watch.pods.GetStore().List() {
		p := o.(*corev1.Pod)
		i := tpbNodeIndex(p.Spec.NodeName)
		if i < 0 || i >= r.w.nodes || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, ct := range p.Spec.Containers {
			m := ct.Resources.Requests.Cpu().MilliValue()
			used[i] += m
			total += m
		}
		count[i]++
	}
	out := map[string]tpbDomainRoom{}
	for i := range r.w.nodes {
		free := int64(tpbNodeMilli) - used[i]
		if free < 0 {
			r.r.overSeen++
			free = 0
		}
		d := out[tpbDomain(i, key)]
		d.slots += int(min(free/milli, int64(max(0, tpbNodePods-count[i]))))
		d.free += free
		out[tpbDomain(i, key)] = d
	}
	return out, float64(total) / float64(r.w.nodes*tpbNodeMilli)
}

// submit creates group i, waits for the outcome, records it, and deletes
// the groups whose time is up (and this one, when not placed).
func (r *tpbRun) submit(i int) {
	g := r.w.groups[i]
	rooms, alloc := r.room(g.key, g.milli)
	r.r.groups++
	r.r.allocated += (alloc - r.r.allocated) / float64(r.r.groups)
	feasible := false
	var tightest int64 = -1
	for _, d := range rooms {
		if d.slots >= g.size {
			feasible = true
			if tightest < 0 || d.free < tightest {
				tightest = d.free
			}
		}
	}
	kc := r.r.byKey[g.key]
	if feasible {
		r.r.feasible++
		kc[0]++
	}

	t0, _ := r.create(g)
	deadline := r.timeout
	var outcome string
	r.watch.waitFor(deadline, func() bool {
		n := r.boundCount(g)
		switch {
		case n == g.size:
			outcome = "placed"
		case !feasible && n == 0 && r.rejected(g):
			outcome = "rejected"
		default:
			return false
		}
		return true
	})
	switch outcome {
	case "placed":
		r.r.placed++
		kc[1]++
		if feasible {
			r.r.placedOK++
		} else {
			r.r.placedBad++
			r.note("%s placed though no %s could hold it", g.name, g.key)
		}
		last, domains, chosen := r.placement(g)
		ms := float64(last.Sub(t0).Microseconds()) / 1e3
		r.r.wall = append(r.r.wall, ms)
		r.watch.mu.Lock()
		_, failed := r.watch.falseAt[g.name]
		r.watch.mu.Unlock()
		if failed {
			r.r.retried++
		} else {
			r.r.wallClean = append(r.r.wallClean, ms)
		}
		if len(domains) == 1 {
			r.r.within++
			if feasible && rooms[chosen].free == tightest {
				r.r.bestFit++
			}
		} else {
			r.note("%s (%s) spans %d domains: %v", g.name, g.key, len(domains), domains)
		}
		r.live = append(r.live, i)
	case "rejected":
		r.watch.mu.Lock()
		at := r.watch.falseAt[g.name]
		r.watch.mu.Unlock()
		r.r.rejectMs = append(r.r.rejectMs, float64(at.Sub(t0).Microseconds())/1e3)
		r.remove(g)
	default:
		n := r.boundCount(g)
		if n > 0 {
			r.r.partial++
			r.note("%s: %d of %d pods bound when given up", g.name, n, g.size)
		}
		if feasible {
			r.r.timedOut++
			r.note("%s (%d x %dm, %s) fits but was not placed within %v", g.name, g.size, g.milli, g.key, r.timeout)
		}
		r.remove(g)
	}
	r.r.byKey[g.key] = kc
	if r.verbose {
		ms := 0.0
		switch outcome {
		case "placed":
			ms = r.r.wall[len(r.r.wall)-1]
		case "rejected":
			ms = r.r.rejectMs[len(r.r.rejectMs)-1]
		}
		fits := 0
		for _, d := range rooms {
			if d.slots >= g.size {
				fits++
			}
		}
		fmt.Printf("%s %s: %d x %dm within one %s, %d domains could hold it: %s after %.1f ms\n", r.r.sched, g.name, g.size, g.milli, g.key, fits, cmp.Or(outcome, "not placed"), ms)
	}

	// Delete the groups whose time is up.
	keep := r.live[:0]
	var done []int
	for _, j := range r.live {
		if r.w.groups[j].end <= i {
			done = append(done, j)
		} else {
			keep = append(keep, j)
		}
	}
	r.live = keep
	for _, j := range done {
		r.remove(r.w.groups[j])
	}
}

func (r *tpbRun) rejected(g tpbGroup) bool {
	r.watch.mu.Lock()
	defer r.watch.mu.Unlock()
	_, ok := r.watch.falseAt[g.name]
	return ok
}

// placement returns when the group's last pod was seen bound and the
// distinct domains of its key its pods are in (sorted), and the first.
func (r *tpbRun) placement(g tpbGroup) (time.Time, []string, string) {
	r.watch.mu.Lock()
	defer r.watch.mu.Unlock()
	var last time.Time
	var domains []string
	for i := range g.size {
		name := fmt.Sprintf("%s-%d", g.name, i)
		if t := r.watch.boundAt[name]; t.After(last) {
			last = t
		}
		d := tpbDomain(tpbNodeIndex(r.watch.nodeOf[name]), g.key)
		if !slices.Contains(domains, d) {
			domains = append(domains, d)
		}
	}
	slices.Sort(domains)
	return last, domains, domains[0]
}

func (r *tpbRun) note(format string, args ...any) {
	if len(r.r.notes) < 20 {
		r.r.notes = append(r.r.notes, fmt.Sprintf(format, args...))
	}
}

// tpbMetrics is what one scheduler profile's metrics say it did between
// two snapshots.
type tpbMetrics struct {
	pgAttempts   map[string]float64 // pod-group cycles by result
	pgSecs       map[string]float64 // their time by result (the whole cycle)
	pgAlgoSecs   float64            // pod-group algorithm (placements, per-pod algorithm; not the status patch)
	placements   float64            // placements generated
	evals        float64            // placements evaluated
	evalSecs     float64            // their time
	podAlgo      float64            // per-pod scheduling algorithm runs (every pod in every placement)
	podAlgoSecs  float64
	ext          map[string]float64 // extension points' time
	bindCalls    float64
	engineLoops  float64 // fluence's core loops
	engineSecs   float64
	pendingAfter float64
}

var tpbExtensionPoints = []string{"PlacementGenerate", "PlacementFeasible", "PlacementScore", "PreFilter", "PostFilter", "PodGroupPostFilter", "PreScore", "Score", "Reserve", "Permit", "Bind"}

func tpbActivity(before, after metricsSnapshot, profile string) tpbMetrics {
	m := tpbMetrics{pgAttempts: map[string]float64{}, pgSecs: map[string]float64{}, ext: map[string]float64{}}
	for _, res := range []string{"scheduled", "unschedulable", "waiting_on_preemption", "error"} {
		if d := metricDelta(before, after, "scheduler_podgroup_schedule_attempts_total", "profile", profile, "result", res); d != 0 {
			m.pgAttempts[res] = d
			m.pgSecs[res] = metricDelta(before, after, "scheduler_podgroup_scheduling_attempt_duration_seconds_sum", "profile", profile, "result", res)
		}
	}
	m.pgAlgoSecs = metricDelta(before, after, "scheduler_podgroup_scheduling_algorithm_duration_seconds_sum")
	m.placements = metricDelta(before, after, "scheduler_generated_placements_total", "profile", profile)
	m.evals = metricDelta(before, after, "scheduler_placement_evaluations_total", "profile", profile)
	m.evalSecs = metricDelta(before, after, "scheduler_placement_evaluation_duration_seconds_sum", "profile", profile)
	m.podAlgo = metricDelta(before, after, "scheduler_scheduling_algorithm_duration_seconds_count")
	m.podAlgoSecs = metricDelta(before, after, "scheduler_scheduling_algorithm_duration_seconds_sum")
	for _, e := range tpbExtensionPoints {
		if d := metricDelta(before, after, "scheduler_framework_extension_point_duration_seconds_sum", "profile", profile, "extension_point", e); d != 0 {
			m.ext[e] = d
		}
	}
	m.bindCalls = metricDelta(before, after, "scheduler_framework_extension_point_duration_seconds_count", "profile", profile, "extension_point", "Bind")
	m.engineLoops = metricDelta(before, after, "fluence_loop_duration_seconds_count")
	m.engineSecs = metricDelta(before, after, "fluence_loop_duration_seconds_sum")
	m.pendingAfter = after.get("scheduler_pending_pods")
	return m
}

func (m tpbMetrics) podGroupAttempts() float64 {
	n := 0.0
	for _, v := range m.pgAttempts {
		n += v
	}
	return n
}

func (m tpbMetrics) podGroupSecs() float64 {
	s := 0.0
	for _, v := range m.pgSecs {
		s += v
	}
	return s
}

func tpbMean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// tpbQuantile is the q-quantile of xs (nearest rank).
func tpbQuantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func tpbPct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

func (r tpbResult) report(b *testing.B) {
	groups := float64(max(1, r.groups))
	b.ReportMetric(tpbPct(r.placed, r.groups), "placed-%")
	b.ReportMetric(tpbPct(r.feasible, r.groups), "feasible-%")
	b.ReportMetric(tpbPct(r.placedOK, r.feasible), "placed-of-feasible-%")
	b.ReportMetric(tpbPct(r.within, r.placed), "within-domain-%")
	b.ReportMetric(tpbPct(r.bestFit, r.placedOK), "tightest-domain-%")
	b.ReportMetric(100*r.allocated, "cpu-allocated-%")
	b.ReportMetric(tpbMean(r.wall), "wall-ms/group")
	b.ReportMetric(tpbQuantile(r.wall, 0.5), "wall-p50-ms")
	b.ReportMetric(tpbQuantile(r.wall, 0.9), "wall-p90-ms")
	b.ReportMetric(tpbQuantile(r.wallClean, 0.5), "wall-clean-p50-ms")
	b.ReportMetric(tpbPct(r.retried, r.placed), "placed-after-failed-cycle-%")
	b.ReportMetric(r.m.podGroupAttempts()/groups, "attempts/group")
	b.ReportMetric(1e3*r.m.podGroupSecs()/groups, "decide-ms/group")
	if n := r.m.pgAttempts["scheduled"]; n > 0 {
		b.ReportMetric(1e3*r.m.pgSecs["scheduled"]/n, "decide-placed-ms")
	}
	if n := r.m.pgAttempts["unschedulable"]; n > 0 {
		b.ReportMetric(1e3*r.m.pgSecs["unschedulable"]/n, "decide-rejected-ms")
	}
	if len(r.rejectMs) > 0 {
		b.ReportMetric(tpbMean(r.rejectMs), "reject-wall-ms")
	}
	b.Logf("%s: %d groups in %.1f s: %d placed (%d of %d that a domain could hold), %d within one domain, %d partly bound, %d fitting but not placed in time; %s",
		r.sched, r.groups, r.runSecs, r.placed, r.placedOK, r.feasible, r.within, r.partial, r.timedOut, r.m)
	for _, n := range r.notes {
		fmt.Printf("%s: %s\n", r.sched, n)
	}
	if r.within != r.placed {
		b.Errorf("%s: %d of %d placed groups are not within one domain of their key", r.sched, r.placed-r.within, r.placed)
	}
	if r.partial > 0 {
		b.Errorf("%s: %d groups were bound partly", r.sched, r.partial)
	}
	if r.placedBad > 0 || r.overSeen > 0 {
		b.Errorf("%s: %d groups placed where no domain could hold them, %d over-committed nodes seen", r.sched, r.placedBad, r.overSeen)
	}
}

func (m tpbMetrics) String() string {
	var ext []string
	for _, e := range tpbExtensionPoints {
		if s, ok := m.ext[e]; ok {
			ext = append(ext, fmt.Sprintf("%s %.2f s", e, s))
		}
	}
	return fmt.Sprintf("pod-group cycles %v taking %.2f s (algorithm %.2f s; %.0f placements generated, %.0f evaluated in %.2f s; per-pod algorithm %.0f runs, %.2f s); extension points: %s; %.0f Bind calls; engine loops %.0f (%.3f s); pending pods at the end %.0f",
		m.pgAttempts, m.podGroupSecs(), m.pgAlgoSecs, m.placements, m.evals, m.evalSecs, m.podAlgo, m.podAlgoSecs, strings.Join(ext, ", "), m.bindCalls, m.engineLoops, m.engineSecs, m.pendingAfter)
}

// tpbTable lays the runs side by side.
func tpbTable(rs []tpbResult) string {
	per := func(r tpbResult, secs float64) string {
		return fmt.Sprintf("%.1f", 1e3*secs/float64(max(1, r.groups)))
	}
	rows := []benchRow[tpbResult]{
		{"groups submitted", func(r tpbResult) string { return fmt.Sprint(r.groups) }},
		{"a domain could hold it", func(r tpbResult) string { return fmt.Sprintf("%d (%.0f%%)", r.feasible, tpbPct(r.feasible, r.groups)) }},
		{"  rack / block", func(r tpbResult) string {
			return fmt.Sprintf("%d / %d", r.byKey[tpbRackKey][0], r.byKey[tpbBlockKey][0])
		}},
		{"placed whole", func(r tpbResult) string { return fmt.Sprintf("%d (%.0f%%)", r.placed, tpbPct(r.placed, r.groups)) }},
		{"  rack / block", func(r tpbResult) string {
			return fmt.Sprintf("%d / %d", r.byKey[tpbRackKey][1], r.byKey[tpbBlockKey][1])
		}},
		{"placed of those that fit", func(r tpbResult) string { return fmt.Sprintf("%.1f%%", tpbPct(r.placedOK, r.feasible)) }},
		{"within one domain", func(r tpbResult) string { return fmt.Sprintf("%d (%.0f%%)", r.within, tpbPct(r.within, r.placed)) }},
		{"bound partly", func(r tpbResult) string { return fmt.Sprint(r.partial) }},
		{"in the tightest domain", func(r tpbResult) string { return fmt.Sprintf("%.0f%%", tpbPct(r.bestFit, r.placedOK)) }},
		{"cluster CPU allocated", func(r tpbResult) string { return fmt.Sprintf("%.1f%%", 100*r.allocated) }},
		{"wall ms/group mean", func(r tpbResult) string { return fmt.Sprintf("%.1f", tpbMean(r.wall)) }},
		{"  p50 / p90 / max", func(r tpbResult) string {
			return fmt.Sprintf("%.1f / %.1f / %.1f", tpbQuantile(r.wall, 0.5), tpbQuantile(r.wall, 0.9), tpbQuantile(r.wall, 1))
		}},
		{"placed after a failed cycle", func(r tpbResult) string { return fmt.Sprint(r.retried) }},
		{"  wall ms without: p50/mean", func(r tpbResult) string {
			return fmt.Sprintf("%.1f / %.1f", tpbQuantile(r.wallClean, 0.5), tpbMean(r.wallClean))
		}},
		{"wall ms to rejection", func(r tpbResult) string {
			if len(r.rejectMs) == 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f (%d groups)", tpbMean(r.rejectMs), len(r.rejectMs))
		}},
		{"pod-group cycles/group", func(r tpbResult) string {
			return fmt.Sprintf("%.2f", r.m.podGroupAttempts()/float64(max(1, r.groups)))
		}},
		{"cycle ms/group", func(r tpbResult) string { return per(r, r.m.podGroupSecs()) }},
		{"  placed / rejected", func(r tpbResult) string {
			f := func(res string) string {
				if n := r.m.pgAttempts[res]; n > 0 {
					return fmt.Sprintf("%.1f", 1e3*r.m.pgSecs[res]/n)
				}
				return "-"
			}
			return f("scheduled") + " / " + f("unschedulable")
		}},
		{"  algorithm", func(r tpbResult) string { return per(r, r.m.pgAlgoSecs) }},
		{"  placement evaluation", func(r tpbResult) string { return per(r, r.m.evalSecs) }},
		{"  per-pod algorithm", func(r tpbResult) string { return per(r, r.m.podAlgoSecs) }},
		{"    PreFilter", func(r tpbResult) string { return per(r, r.m.ext["PreFilter"]) }},
		{"    PreScore + Score", func(r tpbResult) string { return per(r, r.m.ext["PreScore"]+r.m.ext["Score"]) }},
		{"    Filter and the rest", func(r tpbResult) string {
			return per(r, r.m.podAlgoSecs-r.m.ext["PreFilter"]-r.m.ext["PreScore"]-r.m.ext["Score"])
		}},
		{"  Reserve + Permit", func(r tpbResult) string { return per(r, r.m.ext["Reserve"]+r.m.ext["Permit"]) }},
		{"  PodGroupPostFilter", func(r tpbResult) string { return per(r, r.m.ext["PodGroupPostFilter"]) }},
		{"  the rest (API calls)", func(r tpbResult) string {
			return per(r, r.m.podGroupSecs()-r.m.pgAlgoSecs-r.m.ext["PodGroupPostFilter"])
		}},
		{"placements/group", func(r tpbResult) string {
			return fmt.Sprintf("%.1f", r.m.placements/float64(max(1, r.groups)))
		}},
		{"pod algorithm runs/group", func(r tpbResult) string {
			return fmt.Sprintf("%.0f", r.m.podAlgo/float64(max(1, r.groups)))
		}},
		{"Bind ms/call (after cycle)", func(r tpbResult) string {
			if r.m.bindCalls == 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f", 1e3*r.m.ext["Bind"]/r.m.bindCalls)
		}},
		{"fluence engine ms/group", func(r tpbResult) string {
			if r.m.engineLoops == 0 {
				return "-"
			}
			return per(r, r.m.engineSecs)
		}},
		{"run s", func(r tpbResult) string { return fmt.Sprintf("%.1f", r.runSecs) }},
	}
	var heads []string
	for _, r := range rs {
		heads = append(heads, r.sched)
	}
	return benchTable(heads, rows, rs, 28, 22)
}

// benchRow is a row of a benchmark's table: its name, and each result's
// cell.
type benchRow[R any] struct {
	name string
	f    func(r R) string
}

// benchTable lays out rows for results, one column each under heads:
// names nameW wide, cells cellW wide, right-aligned.
func benchTable[R any](heads []string, rows []benchRow[R], results []R, nameW, cellW int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-*s", nameW, "")
	for _, h := range heads {
		fmt.Fprintf(&sb, " %*s", cellW, h)
	}
	sb.WriteString("\n")
	for _, row := range rows {
		fmt.Fprintf(&sb, "%-*s", nameW, row.name)
		for _, r := range results {
			fmt.Fprintf(&sb, " %*s", cellW, row.f(r))
		}
		sb.WriteString("\n")
	}
	return sb.String()
}
