package sim

import (
	"math"
	"reflect"
	"testing"
)

// On run8 a 3-CPU node holds one 2-CPU pod, so the 360 two-CPU pods
// (20 x (3x18.7 + 4x23.5 + 5x25.3 + 6x29.5) = 9,072 pod-seconds) need
// 9,072 / 8 = 1,134 s even though the CPU total says 800 s.
func TestLowerBoundRun8(t *testing.T) {
	w := loadMeasured(t, "run8-lammps-mixed.yaml", 1)
	b := LowerBoundParts(w)
	if len(b.PerShape) != 2 {
		t.Fatalf("shapes %+v", b.PerShape)
	}
	one, two := b.PerShape[0], b.PerShape[1]
	if one.Shape != (PodSpec{CPU: 1000}) || one.Pods != 40 || one.Slots != 24 || !near(one.Bound, 20*2*26.7/24, 1e-9) {
		t.Errorf("1-CPU shape %+v", one)
	}
	if two.Shape != (PodSpec{CPU: 2000}) || two.Pods != 360 || two.Slots != 8 || !near(two.Bound, 1134, 1) {
		t.Errorf("2-CPU shape %+v, want about 1134 s", two)
	}
	if !near(b.CPU, (1068*1000+9072*2000)/24000.0, 1e-6) || b.Memory != 0 || b.GPU != 0 {
		t.Errorf("resource terms cpu %g memory %g gpu %g", b.CPU, b.Memory, b.GPU)
	}
	if !near(b.Longest, 19.8+29.5, 1e-9) || b.LongestGroup != "lmp-0-19-size-6-2-2-2" {
		t.Errorf("longest %g (%s)", b.Longest, b.LongestGroup)
	}
	if lb := LowerBound(w); !near(lb, 1134, 1) || b.Binding() != "shape cpu=2000m" {
		t.Errorf("bound %g bound by %s", lb, b.Binding())
	}
	// Release delays are after completion: they never enter the bound.
	if LowerBound(loadMeasured(t, "run8-lammps-mixed.yaml", 99)) != LowerBound(w) {
		t.Error("the bound depends on the sampled release delays")
	}
}

func TestLowerBoundTerms(t *testing.T) {
	const gi = 1 << 30
	group := func(name string, arrival, runtime float64, n int, p PodSpec) GroupSpec {
		g := GroupSpec{Name: name, Arrival: arrival, Runtime: runtime, ReleaseDelay: 50}
		for range n {
			g.Pods = append(g.Pods, p)
		}
		return g
	}
	tests := []struct {
		name    string
		w       *Workload
		want    float64
		binding string
		check   func(t *testing.T, b BoundParts)
	}{
		{
			// Arrival 5, first arrival 2: it cannot end before 3 + 100.
			name: "longest job",
			w: &Workload{Cluster: ClusterFromSpec(10, 4000, 0, 0), Groups: []GroupSpec{
				group("early", 2, 1, 1, PodSpec{CPU: 1000}),
				group("late", 5, 100, 1, PodSpec{CPU: 1000}),
			}},
			want: 103, binding: "longest job",
		},
		{
			// One 4-core node: 3+1+2 cores for 10 s each = 60 core-s / 4
			// cores = 15 s; each shape alone needs at most 10 s.
			name: "cpu total",
			w: &Workload{Cluster: ClusterFromSpec(1, 4000, 0, 0), Groups: []GroupSpec{
				group("a", 0, 10, 1, PodSpec{CPU: 3000}),
				group("b", 0, 10, 1, PodSpec{CPU: 1000}),
				group("c", 0, 10, 1, PodSpec{CPU: 2000}),
			}},
			want: 15, binding: "cpu",
			check: func(t *testing.T, b BoundParts) {
				want := []float64{10.0 / 4, 10.0 / 2, 10}
				for i, s := range b.PerShape {
					if s.Bound != want[i] {
						t.Errorf("shape %d: %+v, want bound %g", i, s, want[i])
					}
				}
			},
		},
		{
			// 8 GiB node: (4+4+8) GiB x 10 s / 8 GiB = 20 s; CPU 7.5 s.
			name: "memory total",
			w: &Workload{Cluster: ClusterFromSpec(1, 4000, 8*gi, 0), Groups: []GroupSpec{
				group("a", 0, 10, 1, PodSpec{CPU: 1000, Memory: 4 * gi}),
				group("b", 0, 10, 1, PodSpec{CPU: 1000, Memory: 4 * gi}),
				group("c", 0, 10, 1, PodSpec{CPU: 1000, Memory: 8 * gi}),
			}},
			want: 20, binding: "memory",
			check: func(t *testing.T, b BoundParts) {
				if b.CPU != 7.5 {
					t.Errorf("cpu term %g, want 7.5", b.CPU)
				}
			},
		},
		{
			// 2 nodes x 2 GPUs; 6 one-GPU pods x 10 s / 4 GPUs = 15 s.
			name: "gpu total",
			w: &Workload{Cluster: ClusterFromSpec(2, 8000, 0, 2), Groups: []GroupSpec{
				group("a", 0, 10, 2, PodSpec{CPU: 1000, GPU: 1}),
				group("b", 0, 10, 2, PodSpec{CPU: 1000, GPU: 1}),
				group("c", 0, 10, 2, PodSpec{CPU: 1000, GPU: 1}),
			}},
			want: 15, binding: "gpu",
			check: func(t *testing.T, b BoundParts) {
				if b.Memory != 0 || b.CPU != 60000.0/16000 {
					t.Errorf("memory %g cpu %g", b.Memory, b.CPU)
				}
			},
		},
		{
			// 3-core nodes hold one 2-core pod each: 4 pods x 10 s on 2
			// nodes = 20 s, though the CPU total says 80/6 s.
			name: "pod shape",
			w: &Workload{Cluster: ClusterFromSpec(2, 3000, 0, 0), Groups: []GroupSpec{
				group("a", 0, 10, 2, PodSpec{CPU: 2000}),
				group("b", 0, 10, 2, PodSpec{CPU: 2000}),
			}},
			want: 20, binding: "shape cpu=2000m",
		},
		{
			// The shape's slots are the minimum over its resources: a
			// 4-core, 4 GiB node holds one 1-core 3 GiB pod.
			name: "pod shape bound by memory",
			w: &Workload{Cluster: ClusterFromSpec(1, 4000, 4*gi, 0), Groups: []GroupSpec{
				group("a", 0, 10, 1, PodSpec{CPU: 1000, Memory: 3 * gi}),
				group("b", 0, 10, 1, PodSpec{CPU: 1000, Memory: 3 * gi}),
				group("c", 0, 10, 1, PodSpec{CPU: 1000, Memory: 3 * gi}),
			}},
			want: 30, binding: "shape cpu=1000m,memory=3221225472",
		},
		{
			// A group that fits no node is rejected, never completes, and
			// adds nothing (else the bound would exceed the optimum).
			name: "unrunnable group excluded",
			w: &Workload{Cluster: ClusterFromSpec(2, 4000, 0, 0), Groups: []GroupSpec{
				group("ok", 0, 10, 1, PodSpec{CPU: 1000}),
				group("huge", 0, 1000, 1, PodSpec{CPU: 16000}),
				group("gpu", 0, 1000, 2, PodSpec{CPU: 1000, GPU: 1}),
			}},
			want: 10, binding: "longest job",
			check: func(t *testing.T, b BoundParts) {
				if b.Excluded != 2 || len(b.PerShape) != 1 || b.GPU != 0 {
					t.Errorf("%+v", b)
				}
			},
		},
		{
			// Each pod fits a node, but the gang needs more nodes than
			// there are: it never starts either.
			name: "group larger than the cluster excluded",
			w: &Workload{Cluster: ClusterFromSpec(2, 3000, 0, 0), Groups: []GroupSpec{
				group("ok", 0, 10, 2, PodSpec{CPU: 2000}),
				group("wide", 0, 1000, 3, PodSpec{CPU: 2000}),
			}},
			want: 10, binding: "longest job",
			check: func(t *testing.T, b BoundParts) {
				if b.Excluded != 1 || b.PerShape[0].Pods != 2 {
					t.Errorf("%+v", b)
				}
			},
		},
		{
			// Nodes joining count in the capacity: 4 one-core pods x 10 s
			// on 1 + 1 cores is 20 s, not the 40 s one node alone gives.
			name: "nodes joining count",
			w: &Workload{Cluster: ClusterFromSpec(1, 1000, 0, 0), Groups: []GroupSpec{
				group("a", 0, 10, 1, PodSpec{CPU: 1000}), group("b", 0, 10, 1, PodSpec{CPU: 1000}),
				group("c", 0, 10, 1, PodSpec{CPU: 1000}), group("d", 0, 10, 1, PodSpec{CPU: 1000}),
			}, NodeArrivals: []NodeArrival{{At: 1, Node: NodeSpec{Name: "late", CPU: 1000, Memory: UnmodelledMemory}}}},
			want: 20, binding: "cpu",
		},
		{
			name: "no groups",
			w:    &Workload{Cluster: ClusterFromSpec(1, 1000, 0, 0)},
			want: 0, binding: "longest job",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := LowerBoundParts(tc.w)
			if got := LowerBound(tc.w); !near(got, tc.want, 1e-9) || got != b.Max() {
				t.Errorf("bound %g (parts max %g), want %g: %+v", got, b.Max(), tc.want, b)
			}
			if got := b.Binding(); got != tc.binding {
				t.Errorf("binding %q, want %q", got, tc.binding)
			}
			if tc.check != nil {
				tc.check(t, b)
			}
		})
	}
}

func TestLowerBoundDeterministicAndSorted(t *testing.T) {
	s := DefaultSynthSpec()
	s.Nodes, s.Groups = 50, 400
	w, err := Synthesize(s)
	if err != nil {
		t.Fatal(err)
	}
	a, b := LowerBoundParts(w), LowerBoundParts(w)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two calls differ")
	}
	for i := 1; i < len(a.PerShape); i++ {
		p, q := a.PerShape[i-1].Shape, a.PerShape[i].Shape
		if p.CPU > q.CPU || (p.CPU == q.CPU && p.Memory >= q.Memory) {
			t.Errorf("shapes out of order: %+v then %+v", p, q)
		}
	}
	if lb := LowerBound(w); lb <= 0 || math.IsInf(lb, 0) || math.IsNaN(lb) {
		t.Errorf("bound %g", lb)
	}
}

func TestClusterSlotsSaturates(t *testing.T) {
	nodes := []NodeSpec{{CPU: math.MaxInt64, Memory: math.MaxInt64}, {CPU: math.MaxInt64, Memory: math.MaxInt64}}
	if got := clusterSlots(PodSpec{CPU: 1}, nodes); got != math.MaxInt64 {
		t.Errorf("slots %d, want saturation", got)
	}
	if got := clusterSlots(PodSpec{}, nodes); got != 0 {
		t.Errorf("an empty request has no per-shape limit, got %d", got)
	}
}
