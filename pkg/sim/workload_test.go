package sim

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The measured workloads are the files embedded by package experiments
// (docs/reference/experiments.md); tests read them through LoadWorkload.
const measuredWorkloads = "experiments"

func loadMeasured(t *testing.T, file string, seed uint64) *Workload {
	t.Helper()
	w, err := LoadWorkload(filepath.Join(measuredWorkloads, file), LoadOptions{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestLoadExperiments(t *testing.T) {
	tests := []struct {
		file        string
		name        string
		groups      int
		pods        int
		lastArrival float64
		runtimes    map[int]float64 // by size
		cpuBySize   map[int]int64
		permit      float64
		quotaCPU    int64
		quotaPods   int
		calibrate   bool
		delayLo     float64
		delayHi     float64
		stockDone   int
		stockPend   int
		stockRun    int
		fluenceSpan *float64
	}{
		{
			file: "run8-lammps-mixed.yaml", name: "run8-lammps-mixed", groups: 100, pods: 400, lastArrival: 19.8,
			runtimes:  map[int]float64{2: 26.7, 3: 18.7, 4: 23.5, 5: 25.3, 6: 29.5},
			cpuBySize: map[int]int64{2: 1000, 3: 2000, 4: 2000, 5: 2000, 6: 2000},
			permit:    10, calibrate: false, delayLo: 2, delayHi: 5,
			stockDone: 22, stockPend: 345, stockRun: 8,
		},
		{
			file: "run10-indexed-jobs.yaml", name: "run10-indexed-jobs", groups: 50, pods: 200, lastArrival: 14.7,
			// app_seconds: running_to_completion is polling latency there.
			runtimes:  map[int]float64{2: 2, 3: 1, 4: 2, 5: 2, 6: 2},
			cpuBySize: map[int]int64{2: 2000, 3: 2000, 4: 2000, 5: 2000, 6: 2000},
			permit:    300, quotaCPU: 40000, quotaPods: 1000, calibrate: true,
			stockDone: 2, stockPend: 187, stockRun: 8, fluenceSpan: wlPtr(1432.0),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := loadMeasured(t, tc.file, 1)
			if w.Name != tc.name {
				t.Errorf("name %q, want %q", w.Name, tc.name)
			}
			if len(w.Cluster.Nodes) != 8 {
				t.Fatalf("%d nodes, want 8", len(w.Cluster.Nodes))
			}
			for i, n := range w.Cluster.Nodes {
				if n.CPU != 3000 || n.Memory != 29020325760 || n.GPU != 0 || n.Name != "node"+strconv.Itoa(i) {
					t.Errorf("node %d: %+v", i, n)
				}
			}
			if len(w.Groups) != tc.groups {
				t.Fatalf("%d groups, want %d", len(w.Groups), tc.groups)
			}
			pods := 0
			for i, g := range w.Groups {
				pods += g.Size()
				if rt, ok := tc.runtimes[g.Size()]; !ok || g.Runtime != rt {
					t.Errorf("%s: runtime %g, want %g", g.Name, g.Runtime, rt)
				}
				for _, p := range g.Pods {
					if p.CPU != tc.cpuBySize[g.Size()] || p.Memory != 0 || p.GPU != 0 {
						t.Fatalf("%s: pod %+v", g.Name, p)
					}
				}
				if g.ReleaseDelay < tc.delayLo || g.ReleaseDelay > tc.delayHi {
					t.Errorf("%s: release delay %g outside [%g, %g]", g.Name, g.ReleaseDelay, tc.delayLo, tc.delayHi)
				}
				if i > 0 && g.Arrival <= w.Groups[i-1].Arrival {
					t.Errorf("%s arrives at %g, not after %g", g.Name, g.Arrival, w.Groups[i-1].Arrival)
				}
			}
			if pods != tc.pods {
				t.Errorf("%d pods, want %d", pods, tc.pods)
			}
			if w.Groups[0].Arrival != 0 || !near(w.Groups[len(w.Groups)-1].Arrival, tc.lastArrival, 1e-9) {
				t.Errorf("arrivals %g..%g, want 0..%g", w.Groups[0].Arrival, w.Groups[len(w.Groups)-1].Arrival, tc.lastArrival)
			}
			if w.Params.PermitTimeout != tc.permit || w.Params.QuotaCPU != tc.quotaCPU || w.Params.QuotaPods != tc.quotaPods {
				t.Errorf("params %+v", w.Params)
			}
			if got := NeedsReleaseCalibration(w); got != tc.calibrate {
				t.Errorf("NeedsReleaseCalibration %v, want %v", got, tc.calibrate)
			}
			for _, s := range []string{"fluence", "stock", "coscheduling", "quota"} {
				if _, ok := w.Measured[s]; !ok {
					t.Errorf("no measured outcome for %s", s)
				}
			}
			st := w.Measured["stock"]
			if st.JobsCompleted != tc.stockDone || st.Clogged == nil || !*st.Clogged ||
				st.PendingAtClog == nil || *st.PendingAtClog != tc.stockPend ||
				st.RunningAtClog == nil || *st.RunningAtClog != tc.stockRun {
				t.Errorf("stock outcome %+v", st)
			}
			if !strings.Contains(st.Config, "kube-scheduler") {
				t.Errorf("stock config %q", st.Config)
			}
			fl := w.Measured["fluence"]
			if fl.JobsCompleted != tc.groups || fl.Clogged == nil || *fl.Clogged {
				t.Errorf("fluence outcome %+v", fl)
			}
			if (fl.Makespan == nil) != (tc.fluenceSpan == nil) || (fl.Makespan != nil && *fl.Makespan != *tc.fluenceSpan) {
				t.Errorf("fluence makespan %v, want %v", fl.Makespan, tc.fluenceSpan)
			}
		})
	}
}

func TestLoadRun8Details(t *testing.T) {
	w := loadMeasured(t, "run8-lammps-mixed.yaml", 1)
	if w.Groups[0].Name != "lmp-0-0-size-2-2-2-2" || w.Groups[99].Name != "lmp-0-19-size-6-2-2-2" {
		t.Errorf("names %q .. %q", w.Groups[0].Name, w.Groups[99].Name)
	}
	q := w.Measured["quota"]
	if q.Clogged != nil || q.PendingAtClog != nil || q.MeanTurnaround != nil || !strings.Contains(q.Notes, "TLS") {
		t.Errorf("run8 kueue never ran; got %+v", q)
	}
	if m := w.Measured["stock"].MeanTurnaround; m == nil || *m != 217.8 {
		t.Errorf("stock mean turnaround %v", m)
	}
	cs := w.Measured["coscheduling"]
	if cs.JobsCompleted != 7 || cs.PendingAtClog != nil {
		t.Errorf("coscheduling %+v", cs)
	}
}

func TestReleaseDelaysSeeded(t *testing.T) {
	delays := func(seed uint64) []float64 {
		w := loadMeasured(t, "run8-lammps-mixed.yaml", seed)
		out := make([]float64, len(w.Groups))
		for i, g := range w.Groups {
			out[i] = g.ReleaseDelay
		}
		return out
	}
	a, b, c := delays(7), delays(7), delays(8)
	if !reflect.DeepEqual(a, b) {
		t.Error("the same seed gave different delays")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("different seeds gave the same delays")
	}
	distinct := map[float64]bool{}
	for _, d := range a {
		distinct[d] = true
	}
	if len(distinct) < 90 {
		t.Errorf("only %d distinct delays in 100 groups: not sampled per group", len(distinct))
	}
}

func TestNeedsReleaseCalibration(t *testing.T) {
	span := 100.0
	base := func() *Workload {
		return &Workload{
			Groups:   []GroupSpec{{Name: "a", Pods: []PodSpec{{CPU: 1}}}, {Name: "b", Pods: []PodSpec{{CPU: 1}}}},
			Measured: map[string]Measured{"fluence": {Makespan: &span}},
		}
	}
	tests := []struct {
		name string
		edit func(w *Workload)
		want bool
	}{
		{"all zero with a target", func(*Workload) {}, true},
		{"one delay known", func(w *Workload) { w.Groups[1].ReleaseDelay = 2 }, false},
		{"no fluence makespan", func(w *Workload) { w.Measured["fluence"] = Measured{} }, false},
		{"no measured", func(w *Workload) { w.Measured = nil }, false},
		{"no groups", func(w *Workload) { w.Groups = nil }, false},
	}
	for _, tc := range tests {
		w := base()
		tc.edit(w)
		if got := NeedsReleaseCalibration(w); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if NeedsReleaseCalibration(nil) {
		t.Error("nil workload")
	}
}

func TestParseNativeValid(t *testing.T) {
	w, err := LoadWorkload("testdata/native-valid.yaml", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const gi, mi = 1 << 30, 1 << 20
	want := &Workload{
		Name: "native-example",
		Cluster: Cluster{Nodes: []NodeSpec{
			{Name: "a-0", CPU: 3000, Memory: 29 * gi, Labels: map[string]string{"zone": "z1"}},
			{Name: "a-1", CPU: 3000, Memory: 29 * gi, Labels: map[string]string{"zone": "z1"}},
			{Name: "a-2", CPU: 3000, Memory: 29 * gi, Labels: map[string]string{"zone": "z1"}},
			{Name: "gpu", CPU: 8000, Memory: 64 * gi, GPU: 2},
		}},
		Groups: []GroupSpec{
			{Name: "j1", Arrival: 0, Runtime: 20, Duration: 30, Priority: 5, ReleaseDelay: 3,
				Pods: []PodSpec{{2000, gi, 0}, {2000, gi, 0}, {2000, gi, 0}, {2000, gi, 0}}},
			{Name: "j2", Arrival: 1.5, Runtime: 60,
				Pods: []PodSpec{{1000, 512 * mi, 0}, {1000, 512 * mi, 0}, {4000, 512 * mi, 1}}},
			{Name: "j3", Arrival: 2, Runtime: 0, Pods: []PodSpec{{500, 0, 0}}},
		},
		Params: Params{PermitTimeout: 10, QuotaCPU: 40000, QuotaPods: 1000},
	}
	if !reflect.DeepEqual(w, want) {
		t.Errorf("got  %+v\nwant %+v", w, want)
	}
	// The labels map is each node's own.
	w.Cluster.Nodes[0].Labels["zone"] = "changed"
	if w.Cluster.Nodes[1].Labels["zone"] != "z1" {
		t.Error("expanded nodes share one labels map")
	}
}

func TestParseNativeDefaults(t *testing.T) {
	w, err := ParseWorkload([]byte("cluster: {nodes: [{cpu: 2}]}\ngroups: [{pods: 1, cpu: 1, runtime: 5}]\n"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := w.Cluster.Nodes[0]
	if w.Name != "workload" || n.Name != "n0" || n.Memory != UnmodelledMemory || w.Groups[0].Name != "g0" || w.Params.PermitTimeout != 60 {
		t.Errorf("defaults: %+v", w)
	}
}

func TestParseNativeErrors(t *testing.T) {
	const nodes = "cluster: {nodes: [{cpu: 4}]}\n"
	tests := []struct {
		name, yaml string
		want       []string // substrings of the error
	}{
		{"unknown top key", nodes + "groups: [{pods: 1, cpu: 1, runtime: 1}]\ngroup: []\n", []string{"workload: group: unknown key"}},
		{"unknown group key", nodes + "groups: [{pods: 1, cpu: 1, runtime: 1, runtim: 2}]\n", []string{"groups[0].runtim: unknown key"}},
		{"unknown pod key", nodes + "groups: [{pods: [{count: 1, cpus: 1}], cpu: 1, runtime: 1}]\n", []string{"groups[0].pods[0].cpus: unknown key"}},
		{"unknown node key", "cluster: {nodes: [{cpu: 4, mem: 1Gi}]}\ngroups: [{pods: 1, cpu: 1, runtime: 1}]\n", []string{"cluster.nodes[0].mem: unknown key"}},
		{"pods 0", nodes + "groups: [{pods: 1, cpu: 1, runtime: 1}, {pods: 0, cpu: 1, runtime: 1}]\n", []string{"groups[1].pods: must be at least 1, got 0"}},
		{"pods list empty", nodes + "groups: [{pods: [], cpu: 1, runtime: 1}]\n", []string{"groups[0].pods: must list at least one"}},
		{"pod count 0", nodes + "groups: [{pods: [{count: 0}], cpu: 1, runtime: 1}]\n", []string{"groups[0].pods[0].count: must be at least 1, got 0"}},
		{"pods text", nodes + "groups: [{pods: many, cpu: 1, runtime: 1}]\n", []string{`groups[0].pods: must be an integer, got "many"`}},
		{"cpu abc", nodes + "groups: [{pods: 1, cpu: abc, runtime: 1}]\n", []string{`groups[0].cpu: must be a quantity`, `"abc"`}},
		{"pod cpu abc", nodes + "groups: [{pods: [{cpu: abc}], runtime: 1}]\n", []string{`groups[0].pods[0].cpu: must be a quantity`}},
		{"negative cpu", nodes + "groups: [{pods: 1, cpu: -1, runtime: 1}]\n", []string{"groups[0].cpu: must not be negative"}},
		{"huge cpu", nodes + "groups: [{pods: 1, cpu: 1e30, runtime: 1}]\n", []string{"groups[0].cpu: too large"}},
		{"memory abc", nodes + "groups: [{pods: 1, cpu: 1, memory: 1Gx, runtime: 1}]\n", []string{"groups[0].memory: must be a quantity"}},
		{"no cpu", nodes + "groups: [{pods: 1, runtime: 1}]\n", []string{"groups[0].cpu: required"}},
		{"requests nothing", nodes + "groups: [{pods: 1, cpu: 0, runtime: 1}]\n", []string{"groups[0]: a pod must request some cpu, memory or gpu"}},
		{"negative runtime", nodes + "groups: [{pods: 1, cpu: 1, runtime: -5}]\n", []string{"groups[0].runtime: must not be negative, got -5"}},
		{"infinite runtime", nodes + "groups: [{pods: 1, cpu: 1, runtime: .inf}]\n", []string{"groups[0].runtime: must be finite"}},
		{"nan duration", nodes + "groups: [{pods: 1, cpu: 1, runtime: 1, duration: .nan}]\n", []string{"groups[0].duration: must be finite"}},
		{"quoted runtime", nodes + "groups: [{pods: 1, cpu: 1, runtime: \"5\"}]\n", []string{`groups[0].runtime: must be a number, got "5"`}},
		{"no runtime", nodes + "groups: [{pods: 1, cpu: 1}]\n", []string{"groups[0].runtime: required"}},
		{"negative arrival", nodes + "groups: [{pods: 1, cpu: 1, runtime: 1, arrival: -1}]\n", []string{"groups[0].arrival: must not be negative"}},
		{"negative release", nodes + "groups: [{pods: 1, cpu: 1, runtime: 1, release_delay: -1}]\n", []string{"groups[0].release_delay: must not be negative"}},
		{"duplicate names", nodes + "groups: [{name: x, pods: 1, cpu: 1, runtime: 1}, {name: x, pods: 1, cpu: 1, runtime: 1}]\n", []string{`groups[1].name: "x" is already the name of groups[0]`}},
		{"duplicate default name", nodes + "groups: [{pods: 1, cpu: 1, runtime: 1}, {name: g0, pods: 1, cpu: 1, runtime: 1}]\n", []string{`groups[1].name: "g0" is already`}},
		{"duplicate key", nodes + "groups: [{pods: 1, pods: 2, cpu: 1, runtime: 1}]\n", []string{"groups[0].pods: duplicate key"}},
		{"empty groups", nodes + "groups: []\n", []string{"groups: must list at least one group"}},
		{"no groups", nodes, []string{"groups: required"}},
		{"groups not a list", nodes + "groups: {a: 1}\n", []string{"groups: must be a list, got a mapping"}},
		{"no nodes", "cluster: {nodes: []}\ngroups: [{pods: 1, cpu: 1, runtime: 1}]\n", []string{"cluster.nodes: must list at least one node"}},
		{"no cluster", "groups: [{pods: 1, cpu: 1, runtime: 1}]\n", []string{"cluster: required"}},
		{"node cpu 0", "cluster: {nodes: [{cpu: 0}]}\ngroups: [{pods: 1, cpu: 1, runtime: 1}]\n", []string{"cluster.nodes[0].cpu: must be positive"}},
		{"node count 0", "cluster: {nodes: [{cpu: 1, count: 0}]}\ngroups: [{pods: 1, cpu: 1, runtime: 1}]\n", []string{"cluster.nodes[0].count: must be at least 1"}},
		{"duplicate node", "cluster: {nodes: [{name: a, count: 2, cpu: 1}, {name: a-1, cpu: 1}]}\ngroups: [{pods: 1, cpu: 1, runtime: 1}]\n", []string{`cluster.nodes[1].name: node name "a-1" is already used by cluster.nodes[0]`}},
		{"permit 0", nodes + "params: {permit_timeout: 0}\ngroups: [{pods: 1, cpu: 1, runtime: 1}]\n", []string{"params.permit_timeout: must be positive"}},
		{"bad yaml", "groups: [unclosed\n", []string{"workload: invalid YAML"}},
		{"empty", "", []string{"workload: empty document"}},
		{"not a mapping", "- a\n- b\n", []string{"the document must be a mapping"}},
		{"too many pods", nodes + "groups: [{pods: 999999999999, cpu: 1, runtime: 1}]\n", []string{"groups[0].pods: too many pods"}},
		{"several errors", nodes + "groups: [{pods: 0, cpu: 1, runtime: 1}, {pods: 1, cpu: 1, runtime: -1}]\n",
			[]string{"groups[0].pods: must be at least 1", "groups[1].runtime: must not be negative"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := ParseWorkload([]byte(tc.yaml), LoadOptions{})
			if err == nil {
				t.Fatalf("accepted: %+v", w)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q\ndoes not contain %q", err, s)
				}
			}
		})
	}
}

func TestLoadWorkloadErrorNamesFile(t *testing.T) {
	_, err := LoadWorkload("testdata/native-bad-pods.yaml", LoadOptions{})
	const want = "workload native-bad-pods.yaml: groups[3].pods: must be at least 1, got 0"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	var we *WorkloadError
	if !errors.As(err, &we) || we.Path != "groups[3].pods" || we.Source != "native-bad-pods.yaml" {
		t.Errorf("not a *WorkloadError with the path: %#v", err)
	}
	if _, err := LoadWorkload("testdata/does-not-exist.yaml", LoadOptions{}); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// Edits of run8 that break one field each: every error names the path.
func TestParseExperimentErrors(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(measuredWorkloads, "run8-lammps-mixed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(data)
	tests := []struct {
		name, old, new, want string
	}{
		{"cpu 0", "{size: 4, cpus_per_pod: 2,", "{size: 4, cpus_per_pod: 0,", "jobs.types[2].cpus_per_pod: must be positive"},
		{"cpu text", "{size: 4, cpus_per_pod: 2,", "{size: 4, cpus_per_pod: two,", "jobs.types[2].cpus_per_pod: must be a quantity"},
		{"size 0", "{size: 3, cpus_per_pod: 2,", "{size: 0, cpus_per_pod: 2,", "jobs.types[1].size: must be at least 1, got 0"},
		{"no runtime for a size", "    6: {lammps_wall_seconds: 5.0, running_to_completion_seconds: 29.5, n: 20}\n", "", "runtimes.by_size: no entry for size 6 (jobs.types[4])"},
		{"negative runtime", "running_to_completion_seconds: 29.5", "running_to_completion_seconds: -29.5", "runtimes.by_size.6.running_to_completion_seconds: must not be negative"},
		{"no nodes", "  nodes: 8\n", "  nodes: 0\n", "cluster.nodes: must be at least 1, got 0"},
		{"free cpus", "free_cpus_per_node: 3", "free_cpus_per_node: 0", "cluster.free_cpus_per_node: must be positive"},
		{"iterations", "iterations: 20", "iterations: 0", "jobs.iterations: must be at least 1, got 0"},
		{"count mismatch", "iterations: 20", "iterations: 19", "jobs.count: says 100 jobs but 19 iterations of 5 types give 95"},
		{"release range", "{min: 2, max: 5}", "{min: 5, max: 2}", "jobs.release_delay_seconds: min 5 exceeds max 2"},
		{"inter-arrival", "inter_arrival_seconds: 0.2", "inter_arrival_seconds: -0.2", "jobs.inter_arrival_seconds: must not be negative"},
		{"name pattern", `name_pattern: "lmp-0-{i}-size-{size}-2-2-2"`, `name_pattern: "lmp-{size}"`, "jobs.name_pattern: gives the name \"lmp-2\" to jobs 0 and 5"},
		{"shuffle", "shuffle: false", "shuffle: true", "jobs.shuffle: shuffled submission orders are not supported"},
		{"jobs completed", "jobs_completed: 22", "jobs_completed: lots", "outcomes.default.jobs_completed: must be an integer"},
		{"clogged", "clogged: true\n    at_clog: {pending_pods: 345", "clogged: maybe\n    at_clog: {pending_pods: 345", "outcomes.default.clogged: must be true or false"},
		{"no types", "  types:\n", "  types: []\n  old_types:\n", "jobs.types: must list at least one job type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(src, tc.old) {
				t.Fatalf("run8 no longer contains %q", tc.old)
			}
			edited := strings.Replace(src, tc.old, tc.new, 1)
			_, err := ParseWorkload([]byte(edited), LoadOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant %q", err, tc.want)
			}
		})
	}
}

func TestExperimentFormatMinimal(t *testing.T) {
	// Unknown keys are informational in the experiment format; absent
	// memory is not modelled; a fixed release delay applies to all; no
	// coscheduling outcome leaves the plugin's default Permit timeout.
	const doc = `
cluster: {nodes: 2, free_cpus_per_node: 1.5, gpus_per_node: 1, anything: else}
jobs:
  iterations: 2
  inter_arrival_seconds: 1
  first_arrival_seconds: 10
  name_pattern: "j{k}-{type}"
  release_delay_seconds: 4
  types:
    - {size: 1, cpus_per_pod: 500m, memory_per_pod: 1Gi, gpus_per_pod: 1, note: x}
runtimes:
  by_size:
    1: {app_seconds: 3, running_to_completion_seconds: 99}
`
	w, err := ParseWorkload([]byte(doc), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []GroupSpec{
		{Name: "j0-0", Arrival: 10, Pods: []PodSpec{{500, 1 << 30, 1}}, Runtime: 3, ReleaseDelay: 4},
		{Name: "j1-0", Arrival: 11, Pods: []PodSpec{{500, 1 << 30, 1}}, Runtime: 3, ReleaseDelay: 4},
	}
	if !reflect.DeepEqual(w.Groups, want) {
		t.Errorf("groups %+v", w.Groups)
	}
	if n := w.Cluster.Nodes[1]; n.Name != "node1" || n.CPU != 1500 || n.Memory != UnmodelledMemory || n.GPU != 1 {
		t.Errorf("node %+v", n)
	}
	if w.Params.PermitTimeout != 60 || NeedsReleaseCalibration(w) || w.Name != "workload" {
		t.Errorf("params %+v, name %q", w.Params, w.Name)
	}
}

func TestClusterFromSpec(t *testing.T) {
	c := ClusterFromSpec(3, 4000, 0, 1)
	if len(c.Nodes) != 3 || c.Nodes[2].Name != "node2" || c.Nodes[0].Memory != UnmodelledMemory || c.Nodes[1].GPU != 1 {
		t.Errorf("%+v", c)
	}
	if c := ClusterFromSpec(1, 1000, 5, 0); c.Nodes[0].Memory != 5 {
		t.Errorf("%+v", c)
	}
}

// MarshalWorkload output reads back to the same workload.
func TestMarshalRoundTrip(t *testing.T) {
	s := DefaultSynthSpec()
	s.Nodes, s.Groups, s.NodeGPU, s.PodGPU, s.ReleaseDelay = 6, 40, 2, Choices{{0, 1}, {1, 1}}, 2.5
	syn, err := Synthesize(s)
	if err != nil {
		t.Fatal(err)
	}
	native, err := LoadWorkload("testdata/native-valid.yaml", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run8 := loadMeasured(t, "run8-lammps-mixed.yaml", 3)
	run8.Measured = nil // not part of the native format
	for _, w := range []*Workload{syn, native, run8, BackfillWorkload()} {
		data, err := MarshalWorkload(w)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseWorkload(data, LoadOptions{})
		if err != nil {
			t.Fatalf("%s: %v\n%s", w.Name, err, data)
		}
		if !reflect.DeepEqual(back, w) {
			t.Errorf("%s: round trip differs\n got %+v\nwant %+v", w.Name, back, w)
		}
	}
}

func FuzzParseWorkload(f *testing.F) {
	for _, p := range []string{
		filepath.Join(measuredWorkloads, "run8-lammps-mixed.yaml"),
		filepath.Join(measuredWorkloads, "run10-indexed-jobs.yaml"),
		"testdata/native-valid.yaml",
		"testdata/native-bad-pods.yaml",
	} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"{}",
		"cluster: {nodes: [{cpu: 4}]}\ngroups: [{pods: 1, cpu: 1, runtime: 1}]\n",
		"cluster: {nodes: [{cpu: 4, count: 3, name: x}]}\ngroups: [{pods: [{count: 2, cpu: 1}, {gpu: 1, cpu: 0}], runtime: 1}]\n",
		"a: &x [*x]\n",
		"a: &a [1,1]\nb: &b [*a,*a]\nc: [*b,*b,*b]\n",
		"jobs: {types: [{size: 1, cpus_per_pod: 1}], iterations: 1, inter_arrival_seconds: 0}\ncluster: {nodes: 1, free_cpus_per_node: 1}\nruntimes: {by_size: {1: {app_seconds: 1}}}\n",
		"jobs: {types: []}\n",
		"groups: [{pods: 1e3}]\n",
		"cluster: {nodes: [{cpu: 1, name: \"x y\", labels: {\"<<\": \"a\\tb\", null: \"\"}}]}\ngroups: [{name: \"true\", pods: 1, cpu: 1, runtime: 1}]\n",
		"cluster: {nodes: [{cpu: 1Ei}]}\ngroups: [{pods: 1, cpu: 0.0001m, runtime: 1e308}]\n",
		"cluster: {nodes: [{cpu: 4, labels: {r: a, z: \"1\"}}]}\ntopology_levels: [z, r]\ngroups: [{pods: 2, cpu: 1, runtime: 1, topology_required: r}, {pods: 1, cpu: 1, runtime: 1, topology_preferred: z}]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ParseWorkload(data, LoadOptions{Seed: 1})
		if err != nil {
			if w != nil {
				t.Fatal("a workload with an error")
			}
			return
		}
		if len(w.Cluster.Nodes) == 0 || len(w.Groups) == 0 {
			t.Fatalf("accepted an empty workload: %+v", w)
		}
		for _, g := range w.Groups {
			if len(g.Pods) == 0 {
				t.Fatalf("group %s has no pods", g.Name)
			}
			for _, v := range []float64{g.Arrival, g.Runtime, g.Duration, g.ReleaseDelay} {
				if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("group %s has a bad time: %+v", g.Name, g)
				}
			}
		}
		_ = LowerBound(w)
		if len(w.Groups) > 2000 || len(w.Cluster.Nodes) > 2000 {
			return // valid, and too slow to round-trip at fuzzing rates
		}
		// Whatever parses writes out and reads back the same.
		w.Measured = nil
		out, err := MarshalWorkload(w)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseWorkload(out, LoadOptions{})
		if err != nil {
			t.Fatalf("re-reading: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(back, w) {
			t.Fatalf("round trip differs\n got %+v\nwant %+v", back, w)
		}
	})
}

func wlPtr[T any](v T) *T { return &v }
