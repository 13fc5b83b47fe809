package sim

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/optimize/convex/lp"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// groupOf builds a group of n like pods.
func groupOf(name string, n int, p PodSpec, runtime, delay float64) GroupSpec {
	g := GroupSpec{Name: name, Runtime: runtime, ReleaseDelay: delay}
	for range n {
		g.Pods = append(g.Pods, p)
	}
	return g
}

func TestHoldBound(t *testing.T) {
	two := PodSpec{CPU: 2000}
	tests := []struct {
		name    string
		w       *Workload
		want    float64
		binding string
	}{
		{
			// One slot: holds 12 + 15 = 27 s, less the largest delay (5 s):
			// the last group's delay falls after the makespan ends.
			name: "one slot",
			w: &Workload{Cluster: ClusterFromSpec(1, 3000, 0, 0), Groups: []GroupSpec{
				groupOf("a", 1, two, 10, 2), groupOf("b", 1, two, 10, 5),
			}},
			want: 22, binding: "shape cpu=2000m",
		},
		{
			// No delays: the hold-time bound is the runtime bound.
			name: "no delays",
			w: &Workload{Cluster: ClusterFromSpec(2, 3000, 0, 0), Groups: []GroupSpec{
				groupOf("a", 2, two, 10, 0), groupOf("b", 2, two, 10, 0),
			}},
			want: 20, binding: "shape cpu=2000m",
		},
		{
			// The longest job term is the runtime bound's: a lone group
			// completes at its runtime, whatever its delay.
			name: "longest job",
			w: &Workload{Cluster: ClusterFromSpec(4, 3000, 0, 0), Groups: []GroupSpec{
				groupOf("a", 1, two, 10, 50),
			}},
			want: 10, binding: "longest job",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := HoldBoundParts(tc.w)
			if got := HoldBound(tc.w); !near(got, tc.want, 1e-9) {
				t.Errorf("hold bound %g, want %g: %+v", got, tc.want, b)
			}
			if got := b.Binding(); got != tc.binding {
				t.Errorf("binding %q, want %q", got, tc.binding)
			}
			if rt := LowerBound(tc.w); HoldBound(tc.w) < rt-1e-9 && b.LessDelay == 0 {
				t.Errorf("without delays the hold bound %g is below the runtime bound %g", HoldBound(tc.w), rt)
			}
		})
	}
}

func TestPackingBound(t *testing.T) {
	two, one := PodSpec{CPU: 2000}, PodSpec{CPU: 1000}
	tests := []struct {
		name    string
		w       *Workload
		want    float64
		sets    int
		skipped string
	}{
		{
			// 8 slots: a 6 runs alone, 3s run in pairs: 2 x 10 + 2/2 x 10.
			// The hold-time bound says (120 + 60) / 8 = 22.5 s.
			name: "sixes alone, threes in pairs",
			w: &Workload{Cluster: ClusterFromSpec(8, 3000, 0, 0), Groups: []GroupSpec{
				groupOf("six-a", 6, two, 10, 0), groupOf("six-b", 6, two, 10, 0),
				groupOf("three-a", 3, two, 10, 0), groupOf("three-b", 3, two, 10, 0),
			}},
			want: 30, sets: 2,
		},
		{
			// 1-CPU pods fit beside 2-CPU pods on 3-CPU nodes: the two
			// groups run together.
			name: "small pods beside large ones",
			w: &Workload{Cluster: ClusterFromSpec(2, 3000, 0, 0), Groups: []GroupSpec{
				groupOf("large", 2, two, 10, 0), groupOf("small", 2, one, 10, 0),
			}},
			want: 10, sets: 1,
		},
		{
			// Holds count; the largest delay (4 s) comes off: 2 x 14 - 4.
			name: "release delays",
			w: &Workload{Cluster: ClusterFromSpec(1, 3000, 0, 0), Groups: []GroupSpec{
				groupOf("a", 1, two, 10, 4), groupOf("b", 1, two, 10, 4),
			}},
			want: 24, sets: 1,
		},
		{
			// A group larger than the cluster never runs: left out.
			name: "group too large",
			w: &Workload{Cluster: ClusterFromSpec(2, 3000, 0, 0), Groups: []GroupSpec{
				groupOf("a", 2, two, 10, 0), groupOf("huge", 3, two, 1000, 0),
			}},
			want: 10, sets: 1,
		},
		{
			name: "nodes differ",
			w: &Workload{Cluster: Cluster{Nodes: []NodeSpec{{Name: "a", CPU: 3000}, {Name: "b", CPU: 4000}}}, Groups: []GroupSpec{
				groupOf("a", 1, two, 10, 0),
			}},
			skipped: "not identical",
		},
		{
			name: "nodes join",
			w: &Workload{Cluster: ClusterFromSpec(1, 3000, 0, 0), Groups: []GroupSpec{groupOf("a", 1, two, 10, 0)},
				NodeArrivals: []NodeArrival{{At: 5, Node: NodeSpec{Name: "late", CPU: 3000}}}},
			skipped: "join",
		},
		{
			name: "too many shapes",
			w: func() *Workload {
				w := &Workload{Cluster: ClusterFromSpec(4, 64000, 0, 0)}
				for i := range packMaxShapes + 1 {
					w.Groups = append(w.Groups, groupOf("g", 1, PodSpec{CPU: int64(1000 * (i + 1))}, 10, 0))
				}
				return w
			}(),
			skipped: "pod shapes",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pb := PackingBoundOf(tc.w)
			if tc.skipped != "" {
				if !strings.Contains(pb.Skipped, tc.skipped) || pb.Bound != 0 {
					t.Errorf("skipped %q (bound %g), want a skip naming %q", pb.Skipped, pb.Bound, tc.skipped)
				}
				return
			}
			if pb.Skipped != "" || !near(pb.Bound, tc.want, 1e-6) || pb.Sets != tc.sets {
				t.Errorf("bound %g over %d sets (skipped %q), want %g over %d: %+v", pb.Bound, pb.Sets, pb.Skipped, tc.want, tc.sets, pb)
			}
		})
	}
}

// On run8 the packing bound is far above the runtime bound (1,134 s): the
// sets of groups that fit the 8 slots of 2-CPU pods together are {6},
// {5,3}, {4,4}, {4,3}, {3,3}, each with size-2 groups beside; the dual
// prices sixes and fives at a whole cluster, fours at half.
func TestPackingBoundRun8(t *testing.T) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for seed := uint64(1); seed <= 10; seed++ {
		w := loadMeasured(t, "run8-lammps-mixed.yaml", seed)
		pb := PackingBoundOf(w)
		if pb.Skipped != "" || len(pb.Kinds) != 5 {
			t.Fatalf("seed %d: %+v", seed, pb)
		}
		lo, hi = min(lo, pb.Bound), max(hi, pb.Bound)
		if seed == 1 {
			if !near(pb.Bound, 1501.7, 0.05) {
				t.Errorf("seed 1: packing bound %.2f, want about 1,501.7 s", pb.Bound)
			}
			weights := map[string]float64{}
			for _, k := range pb.Kinds {
				weights[k.Name] = k.Weight
			}
			want := map[string]float64{"lmp-0-0-size-2-2-2-2": 0, "lmp-0-0-size-3-2-2-2": 0, "lmp-0-0-size-4-2-2-2": 0.5, "lmp-0-0-size-5-2-2-2": 1, "lmp-0-0-size-6-2-2-2": 1}
			for name, wt := range want {
				if !near(weights[name], wt, 1e-9) {
					t.Errorf("dual weight of %s: %g, want %g", name, weights[name], wt)
				}
			}
		}
		if hb := HoldBound(w); pb.Bound <= hb {
			t.Errorf("seed %d: packing %g not above hold time %g", seed, pb.Bound, hb)
		}
	}
	if lo < 1490 || hi > 1515 {
		t.Errorf("seeds 1-10: packing bound %.1f-%.1f s, want within 1,490-1,515 s", lo, hi)
	}
	t.Logf("run8 packing bound, seeds 1-10: %.1f-%.1f s", lo, hi)
}

// The certified dual value matches the primal optimum gonum reports:
// the certificate loses nothing at an optimal basis.
func TestPackingCertificateIsTight(t *testing.T) {
	for _, file := range []string{"run8-lammps-mixed.yaml", "run10-indexed-jobs.yaml"} {
		w := loadMeasured(t, file, 3)
		for i := range w.Groups {
			w.Groups[i].ReleaseDelay += 1 // run10 records none
		}
		pb := PackingBoundOf(w)
		if pb.Skipped != "" {
			t.Fatalf("%s: %s", file, pb.Skipped)
		}
		p := &packing{node: PodSpec{CPU: w.Cluster.Nodes[0].CPU, Memory: w.Cluster.Nodes[0].Memory}, nodes: len(w.Cluster.Nodes), shapes: pb.Shapes, memo: map[string]int{}}
		if !p.enumeratePatterns() {
			t.Fatal("patterns")
		}
		sets, why := p.maximalSets(pb.Kinds)
		if why != "" {
			t.Fatal(why)
		}
		K := len(pb.Kinds)
		c, a := coverProgram(sets, K)
		hold := make([]float64, K)
		for k := range K {
			hold[k] = pb.Kinds[k].Hold
		}
		primal, _, err := lp.Simplex(c, a, hold, 1e-10, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !near(pb.LP, primal, 1e-6*primal) {
			t.Errorf("%s: certified %g, primal optimum %g", file, pb.LP, primal)
		}
	}
}

// No schedule beats a bound: small random workloads on identical nodes,
// replayed by fluence under every queue policy (with oracle durations
// too), never finish before the best bound.
func TestBoundsNeverExceedAMakespan(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 34))
	shapes := []PodSpec{{CPU: 1000}, {CPU: 2000}, {CPU: 3000}}
	packed, closest := 0, math.Inf(1)
	for trial := range 40 {
		w := &Workload{Name: "random", Cluster: ClusterFromSpec(2+rng.IntN(4), 4000, 0, 0)}
		for i := range 3 + rng.IntN(6) {
			g := groupOf("g"+string(rune('a'+i)), 1+rng.IntN(4), shapes[rng.IntN(len(shapes))], 5+rng.Float64()*30, rng.Float64()*5)
			g.Arrival = float64(i) * 0.5
			w.Groups = append(w.Groups, g)
		}
		b := BoundsOf(w)
		best, _ := b.Best()
		if b.Packing > 0 {
			packed++
		}
		for _, pol := range queue.Policies() {
			for _, oracle := range []bool{false, true} {
				s, err := NewFluence(FluenceConfig{Queue: queue.Config{Policy: pol}, Oracle: oracle})
				if err != nil {
					t.Fatal(err)
				}
				r, err := Run(w, s, Options{PodReleaseGap: -1})
				if err != nil {
					t.Fatal(err)
				}
				if r.JobsCompleted+r.JobsRejected != r.JobsTotal || r.JobsCompleted == 0 {
					continue
				}
				closest = min(closest, r.Makespan/best)
				if r.Makespan < best-1e-6 {
					t.Errorf("trial %d, %s oracle=%v: makespan %.3f below the best bound %.3f (%+v)", trial, pol, oracle, r.Makespan, best, b)
				}
			}
		}
	}
	t.Logf("closest makespan / best bound: %.3f", closest)
	if packed < 30 {
		t.Errorf("the packing bound was computed in only %d of 40 trials", packed)
	}
}
