//go:build schedperf

package schedperf

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"sigs.k8s.io/yaml"

	"github.com/fluence-sched/fluence/pkg/plugin"
)

// BenchmarkReference runs kube-scheduler's gang-scheduling benchmark
// (scheduler_perf's podgroup/gangscheduling/performance-config.yaml, read
// from the module cache) three ways in one run and prints one table:
//
//   - GangScheduling: upstream's test case as shipped (its own pods and
//     PodGroups, kube-scheduler's default profile with GenericWorkload on);
//   - Stock: the same pods, without PodGroups, scheduled one by one by the
//     default profile;
//   - Fluence: the same pods labelled as fluence groups, schedulerName
//     fluence, under fluence's profile (testdata/fluence-scheduler.yaml).
//
// The environment chooses the workloads (make bench-schedperf* set it):
//
//   - SCHEDPERF_UPSTREAM: a regular expression over upstream's workload
//     names (default `^5000Nodes_[0-9]+Gangs_[0-9]+Pods$`, its three
//     3-pod-gang workloads; "none" for none);
//   - SCHEDPERF_SHAPES: more workloads, comma-separated
//     NODESxGROUPSxSIZE[+LONE] (LONE lone pods after each group: a mix);
//   - SCHEDPERF_REPEAT: how many times each workload runs (default 1);
//     the runs interleave the variants (each variant's first run, then
//     each one's second, ...);
//   - SCHEDPERF_VARIANTS: which of intree,stock,fluence run, and
//     fluence-nogate: fluence's profile without its PreEnqueue (pods of a
//     group still short of pods enter the queue), to measure what holding
//     them gains;
//   - SCHEDPERF_GROUPS: a file for every group's times, one line each
//     (workload, variant, first PreFilter in ms from the first of the run,
//     busy ms, span ms, cycles begun): where a mean's tail comes from.
func BenchmarkReference(b *testing.B) {
	upstreamDir := filepath.Join(kubernetesDir(b), "test/integration/scheduler_perf/podgroup/gangscheduling")
	here, err := filepath.Abs("testdata")
	if err != nil {
		b.Fatal(err)
	}
	cases, shapes := buildCases(b, upstreamDir, here)
	items, ok := runHarness(b, cases)
	if !ok {
		return
	}
	report(b, cases, shapes, items)
}

// runHarness writes the test cases to a workload file, runs upstream's
// harness on it with fluence registered and the probe wrapping the
// scheduler, and returns the data items the harness wrote (false when the
// benchmark failed).
func runHarness(b *testing.B, cases []obj) ([]item, bool) {
	out := b.TempDir()
	if f := flagValue("data-items-dir"); f != "" {
		out = f
	} else if err := setFlag("data-items-dir", out); err != nil {
		b.Fatal(err)
	}
	perf.PerfSchedulingLabelFilter = "" // the caller chose the workloads
	cfg := filepath.Join(b.TempDir(), "config.yaml")
	data, err := yaml.Marshal(cases)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(cfg, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("workload file: %s\n%s", cfg, data)

	registry := frameworkruntime.Registry{plugin.Name: plugin.New, plugin.QueueSortName: plugin.NewQueueSort}
	perf.PluginNames = append(perf.PluginNames, plugin.Name)
	started := time.Now()
	perf.RunBenchmarkPerfScheduling(b, cfg, "fluence", registry,
		perf.WithPreRunFn(theProbe.preRun),
		perf.WithNodeUpdateFn(theProbe.nodesCreated),
		perf.WithPodsSchedulingTimeout(30*time.Minute))
	if b.Failed() {
		return nil, false
	}
	return readItems(b, out, started), true
}

// absPaths makes the relative template paths of a test case's operations
// (every string field whose name ends in Path) relative to dir, the
// directory of the file that named them.
func absPaths(ops []any, dir string) {
	for _, o := range ops {
		for k, v := range o.(obj) {
			if p, ok := v.(string); ok && strings.HasSuffix(k, "Path") && !filepath.IsAbs(p) {
				o.(obj)[k] = filepath.Join(dir, p)
			}
		}
	}
}

func kubernetesDir(b *testing.B) string {
	o, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		b.Fatalf("go list -m k8s.io/kubernetes: %v", err)
	}
	return strings.TrimSpace(string(o))
}

func flagValue(name string) string {
	if f := flagLookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// shape is one workload of the benchmark's own.
type shape struct {
	nodes, groups, size, lone int
}

func (s shape) name() string {
	n := fmt.Sprintf("%dNodes_%dGangs_%dPerGroup", s.nodes, s.groups, s.size)
	if s.lone > 0 {
		n += fmt.Sprintf("_%dLone", s.lone)
	}
	return n
}

func parseShapes(b *testing.B, s string) []shape {
	var out []shape
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		var sh shape
		main, lone, mix := strings.Cut(f, "+")
		parts := strings.Split(main, "x")
		if len(parts) != 3 {
			b.Fatalf("SCHEDPERF_SHAPES: %q is not NODESxGROUPSxSIZE[+LONE]", f)
		}
		var err error
		for i, p := range []*int{&sh.nodes, &sh.groups, &sh.size} {
			if *p, err = strconv.Atoi(parts[i]); err != nil {
				b.Fatalf("SCHEDPERF_SHAPES: %q: %v", f, err)
			}
		}
		if mix {
			if sh.lone, err = strconv.Atoi(lone); err != nil {
				b.Fatalf("SCHEDPERF_SHAPES: %q: %v", f, err)
			}
		}
		out = append(out, sh)
	}
	return out
}

type obj = map[string]any

// buildCases reads upstream's GangScheduling test case and derives the
// benchmark's test cases from it.
func buildCases(b *testing.B, upstreamDir, here string) ([]obj, []shape) {
	raw, err := os.ReadFile(filepath.Join(upstreamDir, "performance-config.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var upstream []obj
	if err := yaml.Unmarshal(raw, &upstream); err != nil {
		b.Fatal(err)
	}
	var gang obj
	for _, tc := range upstream {
		if tc["name"] == "GangScheduling" {
			gang = tc
		}
	}
	if gang == nil {
		b.Fatal("no GangScheduling test case in upstream's performance-config.yaml")
	}
	// Upstream's template paths are relative to its directory.
	absPaths(gang["workloadTemplate"].([]any), upstreamDir)

	upRE := cmp.Or(os.Getenv("SCHEDPERF_UPSTREAM"), `^5000Nodes_[0-9]+Gangs_[0-9]+Pods$`)
	var upWorkloads []any
	if upRE != "none" {
		re := regexp.MustCompile(upRE)
		for _, w := range gang["workloads"].([]any) {
			if re.MatchString(w.(obj)["name"].(string)) {
				upWorkloads = append(upWorkloads, w)
			}
		}
	}
	shapes := parseShapes(b, os.Getenv("SCHEDPERF_SHAPES"))
	// SCHEDPERF_SETTLE (a duration, e.g. 90s): a sleep after the nodes are
	// created, before any pod is, in every test case, so the measured phase
	// starts with every scheduler's informers caught up with the nodes.
	// Upstream's test case is then no longer as shipped (the report says so).
	settle := os.Getenv("SCHEDPERF_SETTLE")
	withSettle := func(ops []any) []any {
		if settle == "" {
			return ops
		}
		var out []any
		for _, o := range ops {
			out = append(out, o)
			if o.(obj)["opcode"] == "createNodes" {
				out = append(out, obj{"opcode": "sleep", "duration": settle})
			}
		}
		return out
	}
	repeat, _ := strconv.Atoi(cmp.Or(os.Getenv("SCHEDPERF_REPEAT"), "1"))
	variants := cmp.Or(os.Getenv("SCHEDPERF_VARIANTS"), "intree,stock,fluence")

	// The same workloads for every variant: upstream's (3-pod gangs) and
	// the pure-gang shapes; mixes get test cases of their own.
	var plain, mixed []obj
	for _, w := range upWorkloads {
		p := w.(obj)["params"].(obj)
		plain = append(plain, obj{"name": w.(obj)["name"], "params": obj{
			"initNodes": p["initNodes"], "initPodGroups": p["initPodGroups"], "podsPerGroup": p["podsPerGroup"]}})
	}
	for _, s := range shapes {
		w := obj{"name": s.name(), "params": obj{"initNodes": s.nodes, "initPodGroups": s.groups, "podsPerGroup": s.size}}
		if s.lone > 0 {
			mixed = append(mixed, w)
		} else {
			plain = append(plain, w)
		}
	}
	// run r's workloads: with repeats, each workload's name says its run.
	rep := func(ws []obj, unit bool, r int) []any {
		var out []any
		for _, w := range ws {
			params := obj{}
			for k, v := range w["params"].(obj) {
				params[k] = v
			}
			if unit {
				lone := 0
				for _, s := range shapes {
					if s.name() == w["name"] {
						lone = s.lone
					}
				}
				params["podsPerUnit"] = toInt(params["podsPerGroup"]) + lone
			}
			name := w["name"].(string)
			if repeat > 1 {
				name += fmt.Sprintf("_run%d", r)
			}
			out = append(out, obj{"name": name, "params": params})
		}
		return out
	}

	gates := gang["featureGates"]
	own := func(name, template string, schedConfig string, podGroups bool, extraGates obj, ws []any) obj {
		g := obj{}
		for k, v := range gates.(obj) {
			g[k] = v
		}
		for k, v := range extraGates {
			g[k] = v
		}
		ops := []any{
			obj{"opcode": "createNodes", "countParam": "$initNodes"},
			obj{"opcode": "createNamespaces", "prefix": "gang-ns", "count": 1},
		}
		if podGroups {
			ops = append(ops, obj{"opcode": "createPodGroups", "countParam": "$initPodGroups", "namespace": "gang-ns-0",
				"templatePath": filepath.Join(upstreamDir, "templates/podgroup.yaml"), "templateParams": obj{"podsPerGroup": "$podsPerGroup"}})
		}
		ops = append(ops, obj{"opcode": "createPods", "countParam": "$initPodGroups", "countMultiplierParam": "$podsPerUnit",
			"namespace": "gang-ns-0", "podTemplatePath": filepath.Join(here, template), "collectMetrics": true,
			"templateParams": obj{"podsPerGroup": "$podsPerGroup", "podsPerUnit": "$podsPerUnit"}})
		tc := obj{"name": name, "featureGates": g, "workloadTemplate": withSettle(ops), "workloads": ws}
		if schedConfig != "" && !filepath.IsAbs(schedConfig) {
			schedConfig = filepath.Join(here, schedConfig)
		}
		if schedConfig != "" {
			tc["schedulerConfigPath"] = schedConfig
		}
		return tc
	}
	// fluence runs with the feature gates `fluence scheduler` sets
	// (plugin.SetFeatureDefaults).
	fluenceGates := obj{"NominatedNodeNameForExpectation": false}

	// Repeats interleave the variants (run 1 of each, then run 2 of each,
	// ...), so a slow stretch of a shared machine lands on every variant
	// alike rather than on all of one variant's runs.
	var cases []obj
	has := func(v string) bool { return slices.Contains(strings.Split(variants, ","), v) }
	noGate := ""
	if has("fluence-nogate") {
		noGate = noGateConfig(b, here)
	}
	for r := 1; r <= repeat; r++ {
		suffix := ""
		if repeat > 1 {
			suffix = fmt.Sprintf("_run%d", r)
		}
		if len(plain) > 0 {
			if has("intree") {
				tc := obj{}
				for k, v := range gang {
					tc[k] = v
				}
				tc["name"] = "GangScheduling" + suffix
				tc["workloads"] = rep(plain, false, r)
				tc["workloadTemplate"] = withSettle(gang["workloadTemplate"].([]any))
				cases = append(cases, tc)
			}
			if has("stock") {
				cases = append(cases, own("Stock"+suffix, "pod-stock.yaml", "", false, nil, rep(plain, true, r)))
			}
			if has("fluence") {
				cases = append(cases, own("Fluence"+suffix, "pod-fluence.yaml", "fluence-scheduler.yaml", false, fluenceGates, rep(plain, true, r)))
			}
			if noGate != "" {
				cases = append(cases, own("FluenceNoGate"+suffix, "pod-fluence.yaml", noGate, false, fluenceGates, rep(plain, true, r)))
			}
		}
		if len(mixed) > 0 {
			if has("intree") {
				cases = append(cases, own("GangSchedulingMix"+suffix, "pod-intree.yaml", "", true, nil, rep(mixed, true, r)))
			}
			if has("stock") {
				cases = append(cases, own("StockMix"+suffix, "pod-stock.yaml", "", false, nil, rep(mixed, true, r)))
			}
			if has("fluence") {
				cases = append(cases, own("FluenceMix"+suffix, "pod-fluence.yaml", "fluence-scheduler.yaml", false, fluenceGates, rep(mixed, true, r)))
			}
			if noGate != "" {
				cases = append(cases, own("FluenceNoGateMix"+suffix, "pod-fluence.yaml", noGate, false, fluenceGates, rep(mixed, true, r)))
			}
		}
	}
	if len(cases) == 0 {
		b.Fatal("no workloads: set SCHEDPERF_UPSTREAM or SCHEDPERF_SHAPES")
	}
	return cases, shapes
}

// noGateConfig writes fluence's profile without its preEnqueue plugins
// to a temporary file and returns its path.
func noGateConfig(b *testing.B, here string) string {
	data, err := os.ReadFile(filepath.Join(here, "fluence-scheduler.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	const gate = "      preEnqueue:\n        enabled: [{name: fluence}]\n"
	if !strings.Contains(string(data), gate) {
		b.Fatal("testdata/fluence-scheduler.yaml enables no preEnqueue plugin to leave out")
	}
	path := filepath.Join(b.TempDir(), "fluence-scheduler-nogate.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), gate, "", 1)), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

func toInt(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case float64:
		return int(x)
	case int64:
		return int(x)
	}
	return 0
}

// item is one of the harness's data items.
type item struct {
	Data   map[string]float64 `json:"data"`
	Unit   string             `json:"unit"`
	Labels map[string]string  `json:"labels"`
}

// readItems reads the data items the harness wrote during this run.
func readItems(b *testing.B, dir string, since time.Time) []item {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var all []item
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.ModTime().Before(since) {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		var d struct {
			DataItems []item `json:"dataItems"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			b.Fatalf("%s: %v", f, err)
		}
		all = append(all, d.DataItems...)
	}
	return all
}

// find returns the item of the given metric (and result label, if any) for
// test case tc and workload w.
func find(items []item, tc, w, metric, result string) *item {
	var labels map[string]string
	if result != "" {
		labels = map[string]string{"result": result}
	}
	return findL(items, tc, w, metric, labels)
}

func (r *probeRun) caseAndWorkload() (string, string) {
	parts := strings.Split(r.name, "/")
	if len(parts) < 2 {
		return "", r.name
	}
	return parts[len(parts)-2], parts[len(parts)-1]
}

type stats struct{ mean, p50, p99 float64 }

func summarize(ms []float64) stats {
	if len(ms) == 0 {
		return stats{}
	}
	slices.Sort(ms)
	var sum float64
	for _, v := range ms {
		sum += v
	}
	q := func(p float64) float64 { return ms[min(len(ms)-1, int(p*float64(len(ms))))] }
	return stats{sum / float64(len(ms)), q(0.50), q(0.99)}
}

func variantOf(tc string) string {
	switch strings.TrimSuffix(strings.TrimSuffix(tc, runSuffix(tc)), "Mix") {
	case "GangScheduling":
		return "in-tree GangScheduling"
	case "Stock":
		return "stock (no gang)"
	case "Fluence":
		return "fluence"
	case "FluenceNoGate":
		return "fluence, no PreEnqueue"
	}
	return tc
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// report prints the table: one line a workload and variant.
func report(b *testing.B, cases []obj, _ []shape, items []item) {
	theProbe.mu.Lock()
	defer theProbe.mu.Unlock()
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nscheduler_perf reference benchmark (%s)\n", machine())
	if s := os.Getenv("SCHEDPERF_SETTLE"); s != "" {
		fmt.Fprintf(&sb, "every test case sleeps %s after creating its nodes (SCHEDPERF_SETTLE): upstream's GangScheduling is not as shipped\n", s)
	}
	fmt.Fprintf(&sb, "%-44s %-24s %9s %9s | %23s | %8s | %23s | %9s %9s | %23s | %8s %6s | %17s\n",
		"workload", "variant", "pods/s(h)", "pods/s(p)", "busy ms/group mean/p50/p99", "decide", "span ms/group mean/p50/p99", "bind mean", "att/pod",
		"upstream pg-attempt avg/p50/p99", "heap MiB", "groups", "cpu ms/pod mach/proc busy")
	type row struct {
		w, v string
		line string
	}
	var rows []row
	var perGroup strings.Builder
	for _, r := range theProbe.runs {
		tc, w := r.caseAndWorkload()
		var busy, span, bind []float64
		attempts, pods := 0, 0
		var firsts []time.Time
		for _, g := range r.groups {
			if !g.first.IsZero() {
				firsts = append(firsts, g.first)
			}
		}
		var runStart time.Time
		if len(firsts) > 0 {
			runStart = slices.MinFunc(firsts, func(a, b time.Time) int { return a.Compare(b) })
		}
		for _, key := range slices.Sorted(maps.Keys(r.groups)) {
			g := r.groups[key]
			if g.pods < 2 || g.first.IsZero() || g.lastPermit.IsZero() {
				continue
			}
			fmt.Fprintf(&perGroup, "%s %s %.1f %.3f %.3f %d\n", w, tc, ms(g.first.Sub(runStart)), ms(g.busy()), ms(g.lastPermit.Sub(g.first)), g.attempts)
			busy = append(busy, ms(g.busy()))
			span = append(span, ms(g.lastPermit.Sub(g.first)))
			if !g.lastBound.IsZero() {
				bind = append(bind, ms(g.lastBound.Sub(g.first)))
			}
			attempts += g.attempts
			pods += g.pods
		}
		bs, ss, ds := summarize(busy), summarize(span), summarize(bind)
		th := "-"
		if it := find(items, tc, w, "SchedulingThroughput", ""); it != nil {
			th = fmt.Sprintf("%.0f", it.Data["Average"])
		}
		own := "-"
		if !r.start.IsZero() && r.end.After(r.start) {
			own = fmt.Sprintf("%.0f", float64(r.bound)/r.end.Sub(r.start).Seconds())
		}
		up := "-"
		if it := find(items, tc, w, "scheduler_podgroup_scheduling_attempt_duration_seconds", "scheduled"); it != nil {
			up = fmt.Sprintf("%.2f/%.2f/%.2f", it.Data["Average"], it.Data["Perc50"], it.Data["Perc99"])
		}
		att := 0.0
		if pods > 0 {
			att = float64(attempts) / float64(pods)
		}
		decide := bs.mean
		if len(busy) > 0 {
			decide += 1e3 * r.sums["fluence_loop_duration_seconds"] / float64(len(busy))
		}
		line := fmt.Sprintf("%-44s %-24s %9s %9s | %7.3f %7.3f %7.3f | %8.3f | %7.3f %7.3f %7.3f | %9.1f %9.2f | %23s | %8.0f %6d",
			w, variantOf(tc), th, own, bs.mean, bs.p50, bs.p99, decide, ss.mean, ss.p50, ss.p99, ds.mean, att, up,
			float64(r.heapInuse)/(1<<20), len(busy))
		if mach, proc, share, ok := cpuPerPod(r.cpuStart, r.cpuEnd, r.bound); ok {
			line += fmt.Sprintf(" | %5.2f %5.2f %4.0f%%", mach, proc, 100*share)
		} else {
			line += " |                 -"
		}
		if r.bound < r.expectPods {
			line += fmt.Sprintf("  INCOMPLETE: %d of %d pods bound", r.bound, r.expectPods)
		}
		rows = append(rows, row{w, tc, line})
	}
	// Workload by workload, the variants side by side.
	order := map[string]int{}
	for i, tc := range cases {
		order[tc["name"].(string)] = i
	}
	slices.SortStableFunc(rows, func(a, c row) int {
		return cmp.Or(cmp.Compare(strings.TrimSuffix(a.w, runSuffix(a.w)), strings.TrimSuffix(c.w, runSuffix(c.w))),
			cmp.Compare(runSuffix(a.w), runSuffix(c.w)), cmp.Compare(order[a.v], order[c.v]))
	})
	for _, r := range rows {
		sb.WriteString(r.line + "\n")
	}
	sb.WriteString(legend)
	sb.WriteString(breakdown())
	fmt.Print(sb.String())
	if f := os.Getenv("SCHEDPERF_REPORT"); f != "" {
		_ = os.WriteFile(f, []byte(sb.String()), 0o644)
	}
	if f := os.Getenv("SCHEDPERF_GROUPS"); f != "" {
		_ = os.WriteFile(f, []byte(perGroup.String()), 0o644)
	}
}

var runRE = regexp.MustCompile(`_run[0-9]+$`)

func runSuffix(w string) string { return runRE.FindString(w) }

const legend = `
pods/s(h): the harness's SchedulingThroughput, average of its 1-second samples of pods scheduled.
pods/s(p): pods bound / (last pod's PostBind - first pod's PreFilter), from the probe.
busy: per group (of 2 or more pods), the union of its pods' scheduling cycles, PreFilter start to Permit's return:
      the scheduling goroutine's time spent deciding the group (kube-scheduler's pod-group cycle places all
      of a group's pods in one cycle, and counts once).
decide: busy mean plus, for fluence, its core loop's time per group (fluence_loop_duration_seconds sum / groups):
      fluence matches groups to nodes in its own goroutine, outside the scheduling cycles; this counts it too.
span: per group, first pod's PreFilter start to the last pod's Permit return (includes other pods' cycles in between).
bind: per group, first pod's PreFilter start to the last pod's PostBind (bound).
att/pod: scheduling cycles begun per group pod.
upstream pg-attempt: kube-scheduler's scheduler_podgroup_scheduling_attempt_duration_seconds (result=scheduled), ms:
      the figure upstream publishes; in-tree GangScheduling only.
heap MiB: the process's heap in use (runtime.MemStats.HeapInuse, after a GC) when the last pod was bound;
      the process holds the API server and the harness too (etcd runs in a child process).
cpu ms/pod: CPU time from the first pod's PreFilter to the last pod's PostBind, per pod bound: mach, the whole
      machine's (/proc/stat, every process, etcd's included); proc, this process's (getrusage). busy: the
      machine's non-idle share of its CPUs over that window. Near 100% busy, pods/s is CPU-bound and
      is the machine's CPUs divided by mach; the host's other tenants can move mach too.
`

func machine() string {
	cpu := "?"
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(l, "model name") {
				cpu = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	mem := "?"
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		f := strings.Fields(strings.SplitN(string(raw), "\n", 2)[0])
		if len(f) >= 2 {
			if kb, err := strconv.Atoi(f[1]); err == nil {
				mem = fmt.Sprintf("%.0f GiB RAM", float64(kb)/(1<<20))
			}
		}
	}
	return fmt.Sprintf("%d CPUs (%s), %s, %s", runtimeNumCPU(), cpu, mem, time.Now().UTC().Format(time.RFC3339))
}

// breakdown prints, per workload and variant, the sums of the scheduler's
// histograms divided by the groups (of 2 or more pods) scheduled: where a
// group's time goes, by kube-scheduler's and fluence's own clocks.
func breakdown() string {
	var sb strings.Builder
	sb.WriteString("\nwhere the time goes, ms per group (histogram sums / groups; " +
		"attempt: scheduler_scheduling_attempt_duration_seconds, all pods; algorithm: scheduler_scheduling_algorithm_duration_seconds; " +
		"pg-attempt/pg-algorithm: the pod-group cycle's; ext:X: scheduler_framework_extension_point_duration_seconds; " +
		"engine: fluence_loop_duration_seconds, fluence's core loop, run outside the scheduling cycle)\n")
	for _, r := range theProbe.runs {
		tc, w := r.caseAndWorkload()
		groups := 0
		for _, g := range r.groups {
			if g.pods >= 2 {
				groups++
			}
		}
		if groups == 0 || r.sums == nil {
			continue
		}
		per := func(k string) float64 { return 1e3 * r.sums[k] / float64(groups) }
		short := map[string]string{
			"scheduler_scheduling_attempt_duration_seconds":            "attempt",
			"scheduler_scheduling_algorithm_duration_seconds":          "algorithm",
			"scheduler_podgroup_scheduling_attempt_duration_seconds":   "pg-attempt",
			"scheduler_podgroup_scheduling_algorithm_duration_seconds": "pg-algorithm",
			"fluence_loop_duration_seconds":                            "engine",
		}
		var parts []string
		for _, k := range []string{"scheduler_scheduling_attempt_duration_seconds", "scheduler_scheduling_algorithm_duration_seconds",
			"scheduler_podgroup_scheduling_attempt_duration_seconds", "scheduler_podgroup_scheduling_algorithm_duration_seconds", "fluence_loop_duration_seconds"} {
			if r.sums[k+"#count"] > 0 {
				parts = append(parts, fmt.Sprintf("%s %.3f (n=%.0f)", short[k], per(k), r.sums[k+"#count"]))
			}
		}
		var exts []string
		for k := range r.sums {
			if e, ok := strings.CutPrefix(k, "scheduler_framework_extension_point_duration_seconds/"); ok && !strings.HasSuffix(k, "#count") && r.sums[k] > 0 {
				exts = append(exts, e)
			}
		}
		slices.Sort(exts)
		for _, e := range exts {
			parts = append(parts, fmt.Sprintf("ext:%s %.3f", e, per("scheduler_framework_extension_point_duration_seconds/"+e)))
		}
		fmt.Fprintf(&sb, "%-44s %-24s %s\n", w, variantOf(tc), strings.Join(parts, ", "))
	}
	return sb.String()
}
