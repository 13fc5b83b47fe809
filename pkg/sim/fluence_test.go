package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// gangWorkload: nodes x 3-CPU nodes; groups of 2-CPU pods arriving 0.2 s
// apart, sizes cycling through sizes; each runs 20 s, freed 3 s later.
func gangWorkload(nodes int, sizes []int, groups int) *Workload {
	w := &Workload{Name: "gangs"}
	for i := range nodes {
		w.Cluster.Nodes = append(w.Cluster.Nodes, NodeSpec{Name: fmt.Sprintf("node%d", i), CPU: 3000, Memory: 1 << 34})
	}
	for i := range groups {
		size := sizes[i%len(sizes)]
		g := GroupSpec{Name: fmt.Sprintf("g%d-size%d", i, size), Arrival: 0.2 * float64(i), Runtime: 20, ReleaseDelay: 3}
		for range size {
			g.Pods = append(g.Pods, PodSpec{CPU: 2000})
		}
		w.Groups = append(w.Groups, g)
	}
	return w
}

func runFluence(t *testing.T, w *Workload, pol queue.Policy) *Result {
	t.Helper()
	s, err := NewFluence(FluenceConfig{MatchPolicy: "lonode", Queue: queue.Config{Policy: pol}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(w, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestFluenceCompletesGangs(t *testing.T) {
	for _, pol := range queue.Policies() {
		t.Run(string(pol), func(t *testing.T) {
			w := gangWorkload(8, []int{2, 3, 4, 5, 6}, 40)
			r := runFluence(t, w, pol)
			if r.Stalled || r.JobsCompleted != 40 {
				t.Fatalf("completed %d of 40, stalled=%v at %.1f", r.JobsCompleted, r.Stalled, r.StalledAt)
			}
			// Whole groups only: a group's pods all start at the same time,
			// and never more than one 2-CPU pod per 3-CPU node.
			for _, s := range r.Timeline {
				if s.Running > 8 {
					t.Fatalf("t=%.1f: %d pods running on 8 nodes", s.T, s.Running)
				}
			}
			t.Logf("%s: makespan %.1f, mean wait %.1f", pol, r.Makespan, r.MeanWait)
		})
	}
}

func TestFluenceRejectsGroupThatNeverFits(t *testing.T) {
	w := gangWorkload(4, []int{2, 9, 2}, 3)
	r := runFluence(t, w, queue.Easy)
	if r.JobsRejected != 1 || r.JobsCompleted != 2 || r.Stalled {
		t.Fatalf("rejected %d completed %d stalled %v", r.JobsRejected, r.JobsCompleted, r.Stalled)
	}
	if !r.Jobs[1].Rejected {
		t.Fatalf("the 9-pod group on 4 nodes should be rejected: %+v", r.Jobs[1])
	}
}

func TestFluenceDeterministic(t *testing.T) {
	a := runFluence(t, gangWorkload(8, []int{2, 3, 4, 5, 6}, 30), queue.Conservative)
	b := runFluence(t, gangWorkload(8, []int{2, 3, 4, 5, 6}, 30), queue.Conservative)
	for i := range a.Jobs {
		if a.Jobs[i].Start != b.Jobs[i].Start || a.Jobs[i].End != b.Jobs[i].End {
			t.Fatalf("job %d differs: %+v vs %+v", i, a.Jobs[i], b.Jobs[i])
		}
	}
}

// The simulator sees nodes join as the scheduler does: in the pool-grow
// workload a group of four two-CPU pods that cannot fit the four original
// nodes starts the moment two nodes join (t=45.75 s), partly on them.
func TestNodesJoinDuringARun(t *testing.T) {
	s, err := NewFluence(FluenceConfig{Queue: queue.Config{Policy: queue.Easy}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(PoolGrowWorkload(), s, Options{PodReleaseGap: -1})
	if err != nil {
		t.Fatal(err)
	}
	if r.JobsCompleted != r.JobsTotal {
		t.Fatalf("%d of %d jobs completed", r.JobsCompleted, r.JobsTotal)
	}
	var g07 JobResult
	for _, j := range r.Jobs {
		if j.Name == "g07" {
			g07 = j
		}
	}
	if g07.Start != 45.75 {
		t.Errorf("g07 started at %v, want 45.75 (when the nodes joined)", g07.Start)
	}
	if !slices.Contains(g07.Nodes, "node-4") || !slices.Contains(g07.Nodes, "node-5") {
		t.Errorf("g07 ran on %v, want the new nodes among them", g07.Nodes)
	}
	// A model that does not see nodes join refuses the workload.
	if _, err := Run(PoolGrowWorkload(), NewStock(), Options{}); err == nil || !strings.Contains(err.Error(), "does not model nodes joining") {
		t.Errorf("the stock model ran a workload whose nodes change: %v", err)
	}
}

// The simulator's core takes the scheduler's topology levels: a bad list
// is refused as the scheduler refuses it, and a run with levels over
// labelled nodes completes every group.
func TestFluenceTopologyLevels(t *testing.T) {
	for _, tc := range []struct {
		levels []string
		want   string // error; "" runs
	}{
		{[]string{"example.com/block", "example.com/rack"}, ""},
		{[]string{"example.com/rack", "example.com/rack"}, "listed twice"},
		{[]string{""}, "empty label key"},
	} {
		s, err := NewFluence(FluenceConfig{Queue: queue.Config{Policy: queue.Easy}, TopologyLevels: tc.levels})
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q: error %v, want %q", tc.levels, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.levels, err)
		}
		if !strings.Contains(s.Config(), "topology levels example.com/block > example.com/rack") {
			t.Errorf("config %q does not name the levels", s.Config())
		}
		w := gangWorkload(8, []int{2, 3, 4}, 12)
		for i := range w.Cluster.Nodes {
			w.Cluster.Nodes[i].Labels = map[string]string{"example.com/block": fmt.Sprint("b", i/4), "example.com/rack": fmt.Sprint("r", i/2)}
		}
		r, err := Run(w, s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Stalled || r.JobsCompleted != 12 {
			t.Errorf("%q: completed %d of 12, stalled=%v", tc.levels, r.JobsCompleted, r.Stalled)
		}
	}
}
