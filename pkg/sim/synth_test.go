package sim

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestSynthesizeDefaults(t *testing.T) {
	s := DefaultSynthSpec()
	w, err := Synthesize(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Cluster.Nodes) != 1000 || len(w.Groups) != 10000 {
		t.Fatalf("%d nodes, %d groups", len(w.Cluster.Nodes), len(w.Groups))
	}
	if n := w.Cluster.Nodes[999]; n.Name != "node999" || n.CPU != 32000 || n.Memory != 128<<30 {
		t.Errorf("node %+v", n)
	}
	sizes := map[int]int{}
	cpus := map[int64]bool{}
	prev := 0.0
	for _, g := range w.Groups {
		size := g.Size()
		sizes[size]++
		if size < 1 || size > 128 {
			t.Fatalf("%s: size %d", g.Name, size)
		}
		p := g.Pods[0]
		for _, q := range g.Pods {
			if q != p {
				t.Fatalf("%s: pods differ", g.Name)
			}
		}
		cpus[p.CPU] = true
		if p.CPU < 1000 || p.CPU > 8000 || p.Memory < 1<<30 || p.Memory > 8<<30 || p.GPU != 0 {
			t.Fatalf("%s: pod %+v", g.Name, p)
		}
		if g.Runtime < 60 || g.Runtime > 3600 {
			t.Fatalf("%s: runtime %g", g.Name, g.Runtime)
		}
		if g.Duration < g.Runtime || g.Duration > 2*g.Runtime+0.001 {
			t.Fatalf("%s: declared %g for runtime %g", g.Name, g.Duration, g.Runtime)
		}
		if g.Arrival < prev {
			t.Fatalf("%s arrives at %g before %g", g.Name, g.Arrival, prev)
		}
		prev = g.Arrival
	}
	for _, size := range []int{1, 2, 4, 8, 16, 32, 64, 128} {
		// Weight 4 of 100 over 10,000 draws: about 400 of the rarest.
		if sizes[size] < 250 {
			t.Errorf("size %d drawn %d times", size, sizes[size])
		}
	}
	if len(sizes) != 8 || len(cpus) != 4 {
		t.Errorf("sizes %v, cpus %v", sizes, cpus)
	}
	// Poisson at 2 groups/s: 9,999 gaps of mean 0.5 s.
	if last := w.Groups[len(w.Groups)-1].Arrival; last < 4800 || last > 5200 {
		t.Errorf("last arrival %g, want about 5000", last)
	}
	if w.Groups[0].Name != "g0000" || w.Groups[9999].Name != "g9999" || w.Groups[0].Arrival != 0 {
		t.Errorf("first group %+v", w.Groups[0].Name)
	}
	// A busy cluster: the work alone takes well over the arrival span.
	if b := LowerBoundParts(w); b.CPU < 6000 {
		t.Errorf("cpu bound %g s: not busy", b.CPU)
	}
}

func TestSynthesizeDeterministic(t *testing.T) {
	s := DefaultSynthSpec()
	s.Nodes, s.Groups = 20, 300
	a, err := Synthesize(s)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Synthesize(s)
	if !reflect.DeepEqual(a, b) {
		t.Error("the same seed gave different workloads")
	}
	s.Seed = 2
	c, _ := Synthesize(s)
	if reflect.DeepEqual(a.Groups, c.Groups) {
		t.Error("different seeds gave the same workload")
	}
}

func TestSynthesizeOptions(t *testing.T) {
	// Every group must fit: on 4 nodes of 8 cores, 64 pods fit only
	// with 500m pods (4 x 16 = 64), never with 8-core ones.
	s, err := ParseSynthSpec("nodes=4,node-cpu=8,node-memory=0,groups=300,sizes=1:1/64:1,pod-cpu=500m:1/8:1,pod-memory=none,rate=0,overestimate=1,release-delay=3,runtime-min=10,runtime-max=10")
	if err != nil {
		t.Fatal(err)
	}
	w, err := Synthesize(s)
	if err != nil {
		t.Fatal(err)
	}
	big := 0
	for _, g := range w.Groups {
		p := g.Pods[0]
		if slots := clusterSlots(p, w.Cluster.Nodes); int64(g.Size()) > slots {
			t.Fatalf("%s: %d pods of %+v on a cluster holding %d", g.Name, g.Size(), p, slots)
		}
		if g.Size() == 64 {
			big++
			if p.CPU != 500 {
				t.Fatalf("%s: 64 pods of %dm", g.Name, p.CPU)
			}
		}
		if g.Arrival != 0 || g.Runtime != 10 || g.Duration != 13 || g.ReleaseDelay != 3 || p.Memory != 0 {
			t.Fatalf("%s: %+v", g.Name, g)
		}
	}
	if big == 0 {
		t.Error("no 64-pod group drawn")
	}
	if w.Cluster.Nodes[0].Memory != UnmodelledMemory {
		t.Errorf("node-memory=0 should leave memory unmodelled: %+v", w.Cluster.Nodes[0])
	}
}

func TestParseSynthSpec(t *testing.T) {
	s, err := ParseSynthSpec("nodes=100, groups=500,sizes=1:1+8:1,seed=3,node-memory=64Gi,pod-cpu=2,rate=0.5,pod-gpu=none")
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultSynthSpec()
	want.Nodes, want.Groups, want.Seed, want.NodeMemory, want.ArrivalRate = 100, 500, 3, 64<<30, 0.5
	want.Sizes = Choices{{1, 1}, {8, 1}}
	want.PodCPU = Choices{{2000, 1}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got  %+v\nwant %+v", s, want)
	}
	if d, err := ParseSynthSpec(""); err != nil || !reflect.DeepEqual(d, DefaultSynthSpec()) {
		t.Errorf("empty spec: %+v, %v", d, err)
	}
	// String is what ParseSynthSpec reads back.
	for _, sp := range []SynthSpec{DefaultSynthSpec(), s} {
		back, err := ParseSynthSpec(sp.String())
		if err != nil || !reflect.DeepEqual(back, sp) {
			t.Errorf("round trip of %s: %+v, %v", sp, back, err)
		}
	}
}

func TestParseSynthSpecErrors(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"nodez=3", `unknown key "nodez"`},
		{"nodes", `"nodes": want key=value`},
		{"nodes=abc", "nodes: bad value"},
		{"nodes=0", "nodes: must be in 1..100000, got 0"},
		{"nodes=2,nodes=3", "nodes: given twice"},
		{"groups=-1", "groups: must be in"},
		{"node-cpu=lots", "node-cpu: bad value"},
		{"node-cpu=0", "node-cpu: must be positive"},
		{"node-memory=-1Gi", "node-memory: bad value"},
		{"sizes=", "sizes: bad value"},
		{"sizes=0:1", "sizes: value 0 is below 1"},
		{"sizes=1:x", `sizes: bad value "1:x": "1:x": weight`},
		{"sizes=1:-1", "sizes: weight of 1 must be a non-negative number"},
		{"sizes=1:0/2:0", "sizes: the weights add up to 0"},
		{"sizes=none", "sizes: must not be empty"},
		{"pod-cpu=64", "pod-cpu: value 64000 exceeds node-cpu (32000)"},
		{"pod-cpu=0", "pod-cpu: value 0 is below 1"},
		{"pod-memory=256Gi", "pod-memory: value 274877906944 exceeds node-memory"},
		{"pod-gpu=1", "pod-gpu: value 1 exceeds node-gpu (0)"},
		{"rate=-1", "rate: must be a non-negative number"},
		{"rate=inf", "rate: bad value"},
		{"runtime-min=0", "runtime-min: must be positive"},
		{"runtime-max=10", "runtime-max: must be at least runtime-min (60), got 10"},
		{"overestimate=0.5", "overestimate: must be at least 1"},
		{"release-delay=-2", "release-delay: must be a non-negative number"},
		{"seed=-1", "seed: bad value"},
		{"name=", "name: must not be empty"},
		{"nodes=1,node-cpu=1,pod-cpu=1,sizes=2", "sizes: even the smallest group (2 pods of cpu=1000m"},
		{"groups=100000,sizes=128", "groups: 100000 groups of up to 128 pods may exceed"},
	}
	for _, tc := range tests {
		_, err := ParseSynthSpec(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.spec, err, tc.want)
		}
	}
	if _, err := Synthesize(SynthSpec{}); err == nil {
		t.Error("Synthesize accepted the zero spec")
	}
}

func TestBackfillWorkload(t *testing.T) {
	w := BackfillWorkload()
	if len(w.Cluster.Nodes) != 4 || w.Cluster.Nodes[0].CPU != 4000 {
		t.Fatalf("cluster %+v", w.Cluster)
	}
	head, big := w.Groups[0], w.Groups[1]
	if head.Size() != 3 || head.Arrival != 0 || head.Runtime != 100 || head.Pods[0].CPU != 4000 {
		t.Errorf("head %+v", head)
	}
	if big.Size() != 4 || big.Arrival != 1 || big.Runtime != 100 || big.Pods[0].CPU != 4000 {
		t.Errorf("big %+v", big)
	}
	// The short groups, started in arrival order on the idle node's four
	// cores, all end before big's reservation at t=100: easy backfill can
	// take every one. Each long one would end after it.
	var free [4]float64
	short, long := 0, 0
	for _, g := range w.Groups[2:] {
		if g.Size() != 1 || g.Pods[0].CPU != 1000 || g.Arrival < 2 {
			t.Fatalf("small group %+v", g)
		}
		if g.Runtime >= 300 {
			long++
			if g.Arrival+g.Runtime <= 100 {
				t.Errorf("%s would not delay big", g.Name)
			}
			continue
		}
		short++
		k := 0
		for i := range free {
			if free[i] < free[k] {
				k = i
			}
		}
		start := math.Max(free[k], g.Arrival)
		free[k] = start + g.Runtime
		if free[k] > 100 {
			t.Errorf("%s would end at %g, after big's reservation", g.Name, free[k])
		}
	}
	if short < 8 || long < 2 {
		t.Errorf("%d short and %d long groups", short, long)
	}
	names := map[string]bool{}
	for _, g := range w.Groups {
		if names[g.Name] {
			t.Errorf("duplicate name %s", g.Name)
		}
		names[g.Name] = true
	}
	if lb := LowerBound(w); lb != 311.5 {
		t.Errorf("bound %g, want 311.5 (the last long group)", lb)
	}
}
