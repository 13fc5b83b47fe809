package replay

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fluence-sched/fluence/pkg/sim"
)

// group builds a group of n identical pods of cpu millicores.
func group(name string, n int, cpu int64, arrival, runtime, release float64) sim.GroupSpec {
	g := sim.GroupSpec{Name: name, Arrival: arrival, Runtime: runtime, ReleaseDelay: release}
	for range n {
		g.Pods = append(g.Pods, sim.PodSpec{CPU: cpu})
	}
	return g
}

func workload(groups ...sim.GroupSpec) *sim.Workload {
	return &sim.Workload{
		Name:     "w",
		Cluster:  sim.ClusterFromSpec(2, 3000, 8<<30, 0),
		Groups:   groups,
		Measured: map[string]sim.Measured{"stock": {JobsCompleted: 1}},
	}
}

func TestCompress(t *testing.T) {
	w := workload(group("a", 2, 1000, 0, 20, 5), group("b", 3, 2000, 1, 30, 0))
	w.Groups[1].Duration = 100
	c, err := Compress(w, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ arrival, runtime, duration float64 }{{0, 2.5, 0}, {0.1, 3, 10}} {
		g := c.Groups[i]
		if g.Arrival != want.arrival || g.Runtime != want.runtime || g.Duration != want.duration || g.ReleaseDelay != 0 {
			t.Errorf("group %d: arrival %v runtime %v duration %v release %v; want %+v and no release delay",
				i, g.Arrival, g.Runtime, g.Duration, g.ReleaseDelay, want)
		}
	}
	if w.Groups[0].Runtime != 20 || w.Groups[0].ReleaseDelay != 5 {
		t.Errorf("Compress changed its input: %+v", w.Groups[0])
	}
}

func TestCompressRefuses(t *testing.T) {
	mixed := group("mixed", 2, 1000, 0, 1, 0)
	mixed.Pods[1].CPU = 2000
	prio := group("urgent", 2, 1000, 0, 1, 0)
	prio.Priority = 10
	grow := workload(group("a", 1, 1000, 0, 1, 0))
	grow.NodeArrivals = []sim.NodeArrival{{At: 5}}
	for _, tc := range []struct {
		name   string
		w      *sim.Workload
		factor float64
		want   string
	}{
		{"zero factor", workload(group("a", 1, 1000, 0, 1, 0)), 0, "positive factor"},
		{"NaN factor", workload(group("a", 1, 1000, 0, 1, 0)), math.NaN(), "positive factor"},
		{"pods differ", workload(mixed), 10, "group mixed: pod 1"},
		{"priority", workload(prio), 10, "group urgent: priority 10"},
		{"nodes join", grow, 10, "nodes join"},
		{"no groups", workload(), 10, "no groups"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Compress(tc.w, tc.factor); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestFirst(t *testing.T) {
	w := workload(group("a", 1, 1000, 0, 1, 0), group("b", 1, 1000, 1, 1, 0), group("c", 1, 1000, 2, 1, 0))
	for _, tc := range []struct {
		n, want  int
		measured bool
	}{{0, 3, true}, {3, 3, true}, {9, 3, true}, {2, 2, false}} {
		got, err := First(w, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Groups) != tc.want || (got.Measured != nil) != tc.measured {
			t.Errorf("First(%d): %d groups, measured %v; want %d, %v", tc.n, len(got.Groups), got.Measured != nil, tc.want, tc.measured)
		}
	}
	if _, err := First(w, -1); err == nil {
		t.Error("First(-1) accepted")
	}
}

func TestScale(t *testing.T) {
	r := &sim.Result{
		Jobs: []sim.JobResult{
			{Submit: 1, Start: 2, End: 4, Wait: 1, Turnaround: 3},
			{Submit: 1.5, Start: -1, End: -1, Wait: math.NaN(), Turnaround: math.NaN()},
		},
		Timeline:  []sim.Sample{{T: 0.5}, {T: 4}},
		StalledAt: 3, Makespan: 3, LowerBound: 2, MeanTurnaround: 3, MeanWait: 1, MaxWait: 1.5, SimulatedUntil: 9,
		Bounds: sim.Bounds{Runtime: 2, Hold: 2.5, Packing: 2.8},
	}
	Scale(r, 10)
	j := r.Jobs[0]
	if j.Submit != 10 || j.Start != 20 || j.End != 40 || j.Wait != 10 || j.Turnaround != 30 {
		t.Errorf("job 0 scaled to %+v", j)
	}
	if j := r.Jobs[1]; j.Start != -1 || j.End != -1 || !math.IsNaN(j.Wait) {
		t.Errorf("never-started job scaled to %+v; -1 and NaN must stay", j)
	}
	if r.Timeline[1].T != 40 || r.StalledAt != 30 || r.Makespan != 30 || r.LowerBound != 20 ||
		r.MeanTurnaround != 30 || r.MeanWait != 10 || r.MaxWait != 15 || r.SimulatedUntil != 90 ||
		r.Bounds != (sim.Bounds{Runtime: 20, Hold: 25, Packing: 28}) {
		t.Errorf("result scaled to %+v", r)
	}
}

func TestCheckStall(t *testing.T) {
	w := workload(group("a", 1, 1000, 0, 3, 0), group("b", 1, 1000, 0, 1, 0))
	if err := CheckStall(w, 3*time.Second); err == nil || !strings.Contains(err.Error(), "longest job's hold (3s") {
		t.Errorf("a window equal to the longest hold: err = %v", err)
	}
	if err := CheckStall(w, 3100*time.Millisecond); err != nil {
		t.Errorf("a window over the longest hold refused: %v", err)
	}
}
