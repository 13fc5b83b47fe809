package experiments

import (
	"io/fs"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// experiment is the part of an embedded file this test checks.
type experiment struct {
	Name    string `yaml:"name"`
	Cluster struct {
		Nodes         int `yaml:"nodes"`
		CPUsPerNode   int `yaml:"cpus_per_node"`
		FreeCPUs      int `yaml:"free_cpus_per_node"`
		TotalFreeCPUs int `yaml:"total_free_cpus"`
		MaxPodsAtOnce int `yaml:"max_pods_at_once"`
		GPUs          int `yaml:"gpus_per_node"`
		KueueQuota    struct {
			CPU  int `yaml:"cpu"`
			Pods int `yaml:"pods"`
		} `yaml:"kueue_quota"`
	} `yaml:"cluster"`
	Jobs struct {
		Count        int     `yaml:"count"`
		Pods         int     `yaml:"pods"`
		Iterations   int     `yaml:"iterations"`
		Shuffle      bool    `yaml:"shuffle"`
		InterArrival float64 `yaml:"inter_arrival_seconds"`
		Types        []struct {
			Size int `yaml:"size"`
			CPUs int `yaml:"cpus_per_pod"`
		} `yaml:"types"`
		Gang string `yaml:"gang"`
	} `yaml:"jobs"`
	Outcomes map[string]struct {
		JobsCompleted   int         `yaml:"jobs_completed"`
		CompletedBySize map[int]int `yaml:"completed_by_size"`
		Clogged         *bool       `yaml:"clogged"`
		AtClog          *struct {
			Pending   *int `yaml:"pending_pods"`
			Running   *int `yaml:"running_pods"`
			Completed *int `yaml:"completed_pods"`
			Jobs      *int `yaml:"jobs_holding_running_pods"`
		} `yaml:"at_clog"`
		Makespan *float64 `yaml:"makespan_seconds"`
	} `yaml:"outcomes"`
}

// outcome is what docs/reference/experiments.md (sections 3.3 and 4.2)
// records for one scheduler; -1 means not recorded.
type outcome struct {
	done             int
	clogged          *bool
	pending, running int
	jobsHolding      int
	makespan         float64
}

var yes, no = true, false

// The embedded files must carry the facts docs/reference/experiments.md
// states, and agree with themselves: counts that follow from the loop,
// the cluster's totals, pod counts at the clogs.
func TestEmbeddedExperiments(t *testing.T) {
	tests := []struct {
		short, name           string
		jobs, pods, iters     int
		interArrival          float64
		sizes, cpus           []int
		maxPods, quotaCPU, qp int
		outcomes              map[string]outcome
	}{
		{
			short: "run8", name: "run8-lammps-mixed",
			jobs: 100, pods: 400, iters: 20, interArrival: 0.2,
			sizes: []int{2, 3, 4, 5, 6}, cpus: []int{1, 2, 2, 2, 2},
			outcomes: map[string]outcome{
				"fluence":      {done: 100, clogged: &no, pending: -1, running: -1, jobsHolding: -1, makespan: -1},
				"default":      {done: 22, clogged: &yes, pending: 345, running: 8, jobsHolding: -1, makespan: -1},
				"coscheduling": {done: 7, clogged: &yes, pending: -1, running: -1, jobsHolding: -1, makespan: -1},
				"kueue":        {done: 0, clogged: nil, pending: -1, running: -1, jobsHolding: -1, makespan: -1},
			},
		},
		{
			short: "run10", name: "run10-indexed-jobs",
			jobs: 50, pods: 200, iters: 10, interArrival: 0.3,
			sizes: []int{2, 3, 4, 5, 6}, cpus: []int{2, 2, 2, 2, 2},
			maxPods: 8, quotaCPU: 40, qp: 1000,
			outcomes: map[string]outcome{
				"fluence":      {done: 50, clogged: &no, pending: -1, running: -1, jobsHolding: -1, makespan: 1432},
				"coscheduling": {done: 50, clogged: &no, pending: -1, running: -1, jobsHolding: -1, makespan: 1471},
				"kueue":        {done: 50, clogged: &no, pending: -1, running: -1, jobsHolding: -1, makespan: 1006},
				"default":      {done: 2, clogged: &yes, pending: 187, running: 8, jobsHolding: 5, makespan: -1},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.short, func(t *testing.T) {
			data, err := Read(tc.short)
			if err != nil {
				t.Fatal(err)
			}
			byFile, err := Read(Names[tc.short])
			if err != nil || string(byFile) != string(data) {
				t.Fatalf("Read(%q) differs from Read(%q): %v", Names[tc.short], tc.short, err)
			}
			var e experiment
			if err := yaml.Unmarshal(data, &e); err != nil {
				t.Fatal(err)
			}
			if e.Name != tc.name {
				t.Errorf("name %q, want %q", e.Name, tc.name)
			}

			// Cluster (section 2): 8 nodes of 4 cores, 3 free each.
			c := e.Cluster
			if c.Nodes != 8 || c.CPUsPerNode != 4 || c.FreeCPUs != 3 || c.GPUs != 0 {
				t.Errorf("cluster %+v, want 8 nodes of 4 cores, 3 free, no GPUs", c)
			}
			if c.TotalFreeCPUs != c.Nodes*c.FreeCPUs {
				t.Errorf("total_free_cpus %d, want nodes x free = %d", c.TotalFreeCPUs, c.Nodes*c.FreeCPUs)
			}
			if c.MaxPodsAtOnce != tc.maxPods || c.KueueQuota.CPU != tc.quotaCPU || c.KueueQuota.Pods != tc.qp {
				t.Errorf("max_pods_at_once %d, kueue_quota %+v; want %d, {%d %d}", c.MaxPodsAtOnce, c.KueueQuota, tc.maxPods, tc.quotaCPU, tc.qp)
			}
			if c.MaxPodsAtOnce != 0 && c.MaxPodsAtOnce != c.Nodes*(c.FreeCPUs/slices.Min(tc.cpus)) {
				t.Errorf("max_pods_at_once %d does not follow from the cluster", c.MaxPodsAtOnce)
			}

			// Workload: the loop, and the totals that follow from it.
			j := e.Jobs
			if j.Count != tc.jobs || j.Pods != tc.pods || j.Iterations != tc.iters || j.InterArrival != tc.interArrival || j.Shuffle || j.Gang != "all" {
				t.Errorf("jobs: count %d, pods %d, iterations %d, inter-arrival %g, shuffle %v, gang %q",
					j.Count, j.Pods, j.Iterations, j.InterArrival, j.Shuffle, j.Gang)
			}
			var sizes, cpus []int
			podsPerIter := 0
			for _, ty := range j.Types {
				sizes = append(sizes, ty.Size)
				cpus = append(cpus, ty.CPUs)
				podsPerIter += ty.Size
			}
			if !slices.Equal(sizes, tc.sizes) || !slices.Equal(cpus, tc.cpus) {
				t.Errorf("types: sizes %v, cpus %v; want %v, %v", sizes, cpus, tc.sizes, tc.cpus)
			}
			if j.Count != j.Iterations*len(j.Types) || j.Pods != j.Iterations*podsPerIter {
				t.Errorf("count %d and pods %d do not follow from %d iterations of %v", j.Count, j.Pods, j.Iterations, sizes)
			}

			// Outcomes per scheduler.
			if len(e.Outcomes) != len(tc.outcomes) {
				t.Errorf("%d outcomes, want %d", len(e.Outcomes), len(tc.outcomes))
			}
			for s, want := range tc.outcomes {
				got, ok := e.Outcomes[s]
				if !ok {
					t.Errorf("no outcome for %s", s)
					continue
				}
				if got.JobsCompleted != want.done {
					t.Errorf("%s: %d jobs completed, want %d", s, got.JobsCompleted, want.done)
				}
				bySize := 0
				for _, n := range got.CompletedBySize {
					bySize += n
				}
				if bySize != got.JobsCompleted {
					t.Errorf("%s: completed_by_size sums to %d, not %d", s, bySize, got.JobsCompleted)
				}
				if (got.Clogged == nil) != (want.clogged == nil) || (got.Clogged != nil && *got.Clogged != *want.clogged) {
					t.Errorf("%s: clogged %v, want %v", s, ptr(got.Clogged), ptr(want.clogged))
				}
				if want.makespan >= 0 && (got.Makespan == nil || *got.Makespan != want.makespan) {
					t.Errorf("%s: makespan %v, want %g", s, ptr(got.Makespan), want.makespan)
				}
				if want.pending < 0 {
					continue
				}
				a := got.AtClog
				if a == nil || a.Pending == nil || a.Running == nil || a.Completed == nil {
					t.Errorf("%s: pod counts at the clog missing: %+v", s, a)
					continue
				}
				if *a.Pending != want.pending || *a.Running != want.running {
					t.Errorf("%s: %d Pending, %d Running at the clog; want %d, %d", s, *a.Pending, *a.Running, want.pending, want.running)
				}
				if *a.Pending+*a.Running+*a.Completed != j.Pods {
					t.Errorf("%s: %d Pending + %d Running + %d completed pods != %d pods", s, *a.Pending, *a.Running, *a.Completed, j.Pods)
				}
				donePods := 0
				for size, n := range got.CompletedBySize {
					donePods += size * n
				}
				if donePods != *a.Completed {
					t.Errorf("%s: completed jobs hold %d pods, at_clog says %d", s, donePods, *a.Completed)
				}
				if want.jobsHolding >= 0 && (a.Jobs == nil || *a.Jobs != want.jobsHolding) {
					t.Errorf("%s: jobs holding Running pods %v, want %d", s, ptr(a.Jobs), want.jobsHolding)
				}
			}
		})
	}
}

func ptr[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// Every embedded file has a short name and every short name a file.
func TestEmbeddedNames(t *testing.T) {
	embedded, err := fs.Glob(files, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, f := range Names {
		named = append(named, f)
	}
	slices.Sort(embedded)
	slices.Sort(named)
	if !slices.Equal(embedded, named) {
		t.Errorf("embedded %v, named %v", embedded, named)
	}
	if _, err := Read("run99"); err == nil {
		t.Error("unknown workload accepted")
	}
}
