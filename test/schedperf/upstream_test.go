//go:build schedperf

package schedperf

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// upstreamFiles are the scheduler_perf configurations BenchmarkUpstream
// reads, relative to the harness's directory: kube-scheduler's workloads
// for preemption (of and by pod groups) and for topology-aware workload
// scheduling, as k8s.io/kubernetes v1.37.2 serves them.
var upstreamFiles = []string{
	"default_preemption/performance-config.yaml",
	"workload_preemption/performance-config.yaml",
	"podgroup/tas/performance-config.yaml",
}

// BenchmarkUpstream runs upstream's own test cases unchanged (their
// workload template, templates, PodGroups and feature gates) once as
// shipped, under kube-scheduler's default profile ("intree"), and once
// under a configuration whose only profile is fluence's, named
// default-scheduler, so that upstream's pods, which name no scheduler, go
// to fluence ("fluence"). fluence reads the native PodGroups the pods name
// (spec.schedulingGroup) itself: their gang minCount, priority,
// disruptionMode and schedulingConstraints.topology.
//
// The environment chooses what runs (make bench-schedperf-upstream sets it):
//
//   - SCHEDPERF_CASES: a regular expression over upstream's test case
//     names (default `^(PreemptionPodGroupDisruptionMode|TopologyAwareScheduling)$`);
//   - SCHEDPERF_WORKLOADS: a regular expression over their workload names
//     (default: the 2-node FastTest_* and 10-node workloads);
//   - SCHEDPERF_VARIANTS: which of intree,fluence,fluence-first run
//     (fluence-first: fluence with matchPolicy first, which spreads
//     groups over untouched nodes as kube-scheduler's scoring does, where
//     lonode packs them);
//   - SCHEDPERF_REPEAT: how many times each test case runs, the variants
//     interleaved (each variant's first run, then each one's second, ...);
//   - SCHEDPERF_REPORT: a file for the table.
func BenchmarkUpstream(b *testing.B) {
	base := filepath.Join(kubernetesDir(b), "test/integration/scheduler_perf")
	here, err := filepath.Abs("testdata")
	if err != nil {
		b.Fatal(err)
	}
	caseRE := regexp.MustCompile(cmp.Or(os.Getenv("SCHEDPERF_CASES"), `^(PreemptionPodGroupDisruptionMode|TopologyAwareScheduling)$`))
	workRE := regexp.MustCompile(cmp.Or(os.Getenv("SCHEDPERF_WORKLOADS"), `^(FastTest_.*|10Nodes_3Gangs)$`))
	variants := strings.Split(cmp.Or(os.Getenv("SCHEDPERF_VARIANTS"), "intree,fluence"), ",")
	repeat := max(1, atoiOr(os.Getenv("SCHEDPERF_REPEAT"), 1))

	var chosen []obj
	for _, f := range upstreamFiles {
		dir := filepath.Join(base, filepath.Dir(f))
		raw, err := os.ReadFile(filepath.Join(base, f))
		if err != nil {
			b.Fatal(err)
		}
		var tcs []obj
		if err := yaml.Unmarshal(raw, &tcs); err != nil {
			b.Fatalf("%s: %v", f, err)
		}
		for _, tc := range tcs {
			if !caseRE.MatchString(tc["name"].(string)) {
				continue
			}
			absPaths(tc["workloadTemplate"].([]any), dir)
			for _, k := range []string{"defaultPodTemplatePath", "schedulerConfigPath"} {
				if p, ok := tc[k].(string); ok && !filepath.IsAbs(p) {
					tc[k] = filepath.Join(dir, p)
				}
			}
			var ws []any
			for _, w := range tc["workloads"].([]any) {
				if workRE.MatchString(w.(obj)["name"].(string)) {
					ws = append(ws, w)
				}
			}
			if len(ws) > 0 {
				tc["workloads"] = ws
				chosen = append(chosen, tc)
			}
		}
	}
	if len(chosen) == 0 {
		b.Fatal("no upstream workload matches SCHEDPERF_CASES and SCHEDPERF_WORKLOADS")
	}

	configs := map[string]string{}
	for _, v := range variants {
		switch v {
		case "intree":
		case "fluence", "fluence-first":
			configs[v] = upstreamFluenceConfig(b, here, v == "fluence-first")
		default:
			b.Fatalf("SCHEDPERF_VARIANTS: unknown variant %q (intree, fluence, fluence-first)", v)
		}
	}
	var cases []obj
	for r := 1; r <= repeat; r++ {
		suffix := ""
		if repeat > 1 {
			suffix = fmt.Sprintf("_run%d", r)
		}
		for _, tc := range chosen {
			for _, v := range variants {
				c := obj{}
				for k, val := range tc {
					c[k] = val
				}
				c["name"] = tc["name"].(string) + upstreamVariantSuffix[v] + suffix
				if v != "intree" {
					if _, ok := tc["schedulerConfigPath"]; ok {
						b.Fatalf("%s names its own scheduler configuration: fluence's would replace it", tc["name"])
					}
					c["schedulerConfigPath"] = configs[v]
					gates := obj{}
					if g, ok := tc["featureGates"].(obj); ok {
						for k, val := range g {
							gates[k] = val
						}
					}
					// the feature gate `fluence scheduler` sets (plugin.SetFeatureDefaults)
					gates["NominatedNodeNameForExpectation"] = false
					c["featureGates"] = gates
				}
				cases = append(cases, c)
			}
		}
	}
	items, ok := runHarness(b, cases)
	if !ok {
		return
	}
	reportUpstream(cases, items)
}

var upstreamVariantSuffix = map[string]string{"intree": "", "fluence": "_Fluence", "fluence-first": "_FluenceFirst"}

func atoiOr(s string, def int) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		return def
	}
	return n
}

// upstreamFluenceConfig writes fluence's profile (testdata/fluence-scheduler.yaml)
// as the scheduler's only profile, named default-scheduler, preempting at
// once, to a temporary file and returns its path. first: matchPolicy first.
func upstreamFluenceConfig(b *testing.B, here string, first bool) string {
	data, err := os.ReadFile(filepath.Join(here, "fluence-scheduler.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	s := string(data)
	edits := [][2]string{
		{"  - schedulerName: fluence\n", "  - schedulerName: default-scheduler\n"},
		// after: 0s would mean "only a group with no reservation preempts";
		// 1s (durations are whole seconds) preempts whenever the group's
		// reserved start is not within the next second, as kube-scheduler
		// preempts on the first failed attempt.
		{"preemption: {enabled: true, after: 60s,", "preemption: {enabled: true, after: 1s,"},
	}
	if first {
		edits = append(edits, [2]string{"matchPolicy: lonode\n", "matchPolicy: first\n"})
	}
	for _, e := range edits {
		if !strings.Contains(s, e[0]) {
			b.Fatalf("testdata/fluence-scheduler.yaml has no %q to change", e[0])
		}
		s = strings.Replace(s, e[0], e[1], 1)
	}
	name := "fluence-upstream.yaml"
	if first {
		name = "fluence-upstream-first.yaml"
	}
	path := filepath.Join(b.TempDir(), name)
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// findL returns the item of the given metric and labels for test case tc
// and workload w.
func findL(items []item, tc, w, metric string, labels map[string]string) *item {
	for i := range items {
		it := &items[i]
		if it.Labels["Metric"] != metric {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && it.Labels[k] == v
		}
		if !match {
			continue
		}
		parts := strings.Split(it.Labels["Name"], "/")
		for j := 0; j+1 < len(parts); j++ {
			if parts[j] == tc && parts[j+1] == w {
				return it
			}
		}
	}
	return nil
}

// reportUpstream prints one line a workload and variant.
func reportUpstream(cases []obj, items []item) {
	theProbe.mu.Lock()
	defer theProbe.mu.Unlock()
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nscheduler_perf upstream workloads (%s)\n", machine())
	fmt.Fprintf(&sb, "%-46s %-14s %11s | %17s | %17s | %23s | %23s | %17s | %17s | %17s | %14s | %11s | %9s | %13s | %s\n",
		"workload", "variant", "pods/s", "attempt sched p50/p99", "attempt unsch p50/p99", "measured sched p50/p99", "measured unsch p50/p99", "PostFilter p50/p99", "pg-attempt p50/p99",
		"preemptor wait p50/p99", "preempt/victims", "one rack", "engine ms", "cpu ms/pod", "load start -> end")
	type row struct{ w, tc, line, seg string }
	var rows []row
	pq := func(it *item) string {
		if it == nil {
			return "-"
		}
		return fmt.Sprintf("%.2f/%.2f", it.Data["Perc50"], it.Data["Perc99"])
	}
	for _, r := range theProbe.runs {
		tc, w := r.caseAndWorkload()
		th := "-"
		if it := findL(items, tc, w, "SchedulingThroughput", nil); it != nil {
			th = fmt.Sprintf("%.0f", it.Data["Average"])
		}
		const att = "scheduler_scheduling_attempt_duration_seconds"
		sched := pq(findL(items, tc, w, att, map[string]string{"result": "scheduled"}))
		unsch := pq(findL(items, tc, w, att, map[string]string{"result": "unschedulable"}))
		post := pq(findL(items, tc, w, "scheduler_framework_extension_point_duration_seconds", map[string]string{"extension_point": "PostFilter"}))
		pg := pq(findL(items, tc, w, "scheduler_podgroup_scheduling_attempt_duration_seconds", map[string]string{"result": "scheduled"}))
		msched, munsch := measuredAttempts(r)
		wait := "-"
		if len(r.waits) > 0 {
			var v []float64
			for _, d := range r.waits {
				v = append(v, ms(d))
			}
			st := summarize(v)
			wait = fmt.Sprintf("%.1f/%.1f (%d)", st.p50, st.p99, len(v))
			if span := r.highLast.Sub(r.highFirst); span > 0 {
				th += fmt.Sprintf(" (%.0f)", float64(len(v))/span.Seconds())
			}
		}
		pre := "-"
		if s := r.sums; s != nil {
			switch {
			case s["fluence_preemptions_total"] > 0 || s["fluence_evicted_pods_total"] > 0:
				pre = fmt.Sprintf("%.0f/%.0f", s["fluence_preemptions_total"], s["fluence_evicted_pods_total"])
			case s["scheduler_preemption_attempts_total"] > 0:
				pre = fmt.Sprintf("%.0f/%.0f", s["scheduler_preemption_attempts_total"], s["scheduler_preemption_victims"])
			default:
				pre = "0/0"
			}
		}
		rack := "-"
		if len(r.rack) > 0 {
			one, all := 0, 0
			for _, g := range r.groups {
				if g.bound == 0 {
					continue
				}
				all++
				if len(g.racks) == 1 {
					one++
				}
			}
			rack = fmt.Sprintf("%d/%d", one, all)
		}
		engine := "-"
		if r.sums != nil && r.sums["fluence_loop_duration_seconds#count"] > 0 {
			engine = fmt.Sprintf("%.0f", 1e3*r.sums["fluence_loop_duration_seconds"])
		}
		cpu := "-"
		if mach, proc, share, ok := cpuPerPod(r.cpuStart, r.cpuEnd, r.bound); ok {
			cpu = fmt.Sprintf("%.2f %.2f %.0f%%", mach, proc, 100*share)
		}
		line := fmt.Sprintf("%-46s %-14s %11s | %17s | %17s | %23s | %23s | %17s | %17s | %17s | %14s | %11s | %9s | %13s | %s -> %s",
			w, upstreamVariantOf(tc), th, sched, unsch, msched, munsch, post, pg, wait, pre, rack, engine, cpu, r.loadStart, cmp.Or(r.loadEnd, "?"))
		if r.bound < r.expectPods {
			line += fmt.Sprintf("  INCOMPLETE: %d of %d pods bound", r.bound, r.expectPods)
		}
		rows = append(rows, row{w, tc, line, segmentLine(r)})
	}
	order := map[string]int{}
	for i, tc := range cases {
		order[tc["name"].(string)] = i
	}
	slices.SortStableFunc(rows, func(a, c row) int {
		return cmp.Or(cmp.Compare(a.w, c.w), cmp.Compare(order[a.tc], order[c.tc]))
	})
	for _, r := range rows {
		sb.WriteString(r.line + "\n")
	}
	// Runs of one workload and variant (SCHEDPERF_REPEAT), pooled.
	type key struct{ w, v string }
	pooled := map[key][]*probeRun{}
	var keys []key
	for _, r := range theProbe.runs {
		tc, w := r.caseAndWorkload()
		k := key{w, upstreamVariantOf(tc)}
		if pooled[k] == nil {
			keys = append(keys, k)
		}
		pooled[k] = append(pooled[k], r)
	}
	slices.SortStableFunc(keys, func(a, c key) int { return cmp.Compare(a.w, c.w) })
	var pool strings.Builder
	for _, k := range keys {
		if len(pooled[k]) < 2 {
			continue
		}
		if s, u, ok := pooledAttempts(pooled[k]); ok {
			fmt.Fprintf(&pool, "%-46s %-14s %5d | %27s | %27s | %27s\n", k.w, k.v, len(pooled[k]), s, u, pooledExact(pooled[k]))
		}
	}
	if pool.Len() > 0 {
		fmt.Fprintf(&sb, "\nthe measured phase's attempts, every run of a workload and variant together (P50/P99 ms (attempts))\n%-46s %-14s %5s | %27s | %27s | %27s\n%s",
			"workload", "variant", "runs", "measured sched p50/p99", "measured unsch p50/p99", "probe sched p50/p99/max", pool.String())
	}
	sb.WriteString("\nwhere the measured phase's scheduled attempts go (P50/P99/max ms, the attempt that bound each pod; segments_test.go)\n")
	for _, r := range rows {
		if r.seg != "" {
			fmt.Fprintf(&sb, "%-46s %-14s %s\n", r.w, upstreamVariantOf(r.tc), r.seg)
		}
	}
	sb.WriteString(upstreamLegend)
	fmt.Print(sb.String())
	if f := os.Getenv("SCHEDPERF_REPORT"); f != "" {
		_ = os.WriteFile(f, []byte(sb.String()), 0o644)
	}
}

func upstreamVariantOf(tc string) string {
	tc = runRE.ReplaceAllString(tc, "")
	for v, suf := range upstreamVariantSuffix {
		if suf != "" && strings.HasSuffix(tc, suf) {
			return v
		}
	}
	return "intree"
}

const upstreamLegend = `
pods/s: the harness's SchedulingThroughput (average of its 1-second samples) over the measured pods only
      (preemption: the 100 preemptors; topology: every gang pod); "-" when they were all scheduled within one sample.
      In brackets, preemption only: preemptors bound / (first preemptor's first PreFilter to last one's PostBind), probe.
attempt sched/unsch: scheduler_scheduling_attempt_duration_seconds, result scheduled / unschedulable, P50/P99 in ms,
      as the harness reports it (one scheduling cycle of one pod; for kube-scheduler's pod-group cycle, each pod's share).
      Whole workload: the harness's reset before its measured phase resets its gathered copy, not the metric, so in the
      preemption workloads this is mostly the 10,000 low-priority pods scheduled before the barrier.
measured sched/unsch: the same histogram over the measured phase only (probe: its difference from when the last pod
      before the barrier was bound to when the last pod was bound; P50/P99 ms, attempts counted; "!" when that count is
      not the number of scheduling cycles the probe saw begin in the phase); "-" where the probe cannot tell the phases.
every run together (SCHEDPERF_REPEAT > 1): the measured histograms of every run of a workload and variant summed, then
      P50/P99: a run's P99 over 100 attempts is about its slowest one or two; probe: the scheduled attempts as the probe
      timed them (below), every run's together.
where the scheduled attempts go: for each pod bound in the measured phase, its last attempt, PreFilter to PostBind, exactly
      (the histogram's P99 is interpolated within a bucket as wide as 128 ms), cut at the probe's calls: cycle (PreFilter to
      Permit's return), handoff (to PreBind's return: binding goroutine, WaitOnPermit, PreBind), bind
      (to PostBind: the Bind plugins, the API call included); the attempt histogram's mean less theirs is the time before
      PreFilter (the snapshot update).
PostFilter: scheduler_framework_extension_point_duration_seconds{extension_point=PostFilter}, P50/P99 ms, measured phase
      (kube-scheduler's preemption runs here; fluence's PostFilter only reports: its core decides preemption, from a
      pod's PreFilter or on its own goroutine).
pg-attempt: scheduler_podgroup_scheduling_attempt_duration_seconds{result=scheduled}: kube-scheduler's pod-group cycles (GenericWorkload
      runs them for fluence's profile too).
preemptor wait: from a preemptor's (priority >= 1,000,000) first PreFilter to its PostBind, P50/P99 ms (probe).
preempt/victims: in-tree, scheduler_preemption_attempts_total / the sum of scheduler_preemption_victims; fluence,
      fluence_preemptions_total / fluence_evicted_pods_total; over the whole workload.
one rack: gangs whose bound pods all landed on nodes of one topology.kubernetes.io/rack / gangs with a pod bound (probe).
engine ms: fluence_loop_duration_seconds's sum over the workload: fluence's core loop, outside the scheduling cycles.
cpu ms/pod: CPU from the workload's first PreFilter to its last PostBind per pod bound (every pod of the workload,
      the low-priority ones included): machine (/proc/stat), this process (API server, harness, scheduler), machine busy share.
load: /proc/loadavg when the workload began and when its last pod was bound.
`
