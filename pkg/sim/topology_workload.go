package sim

import (
	"fmt"
	"math"
)

// The label keys of TopologyFragmentedWorkload's levels, outermost first.
const (
	ZoneLabelKey  = "topology.kubernetes.io/zone"
	BlockLabelKey = "example.com/block"
	RackLabelKey  = "example.com/rack"
)

// TopologyFragmentedWorkload is a cluster whose racks are unevenly loaded
// when a stream of topology-constrained groups arrives. It is built here,
// the same every time (no seed), as the backfill workload is.
//
// The cluster: 2 zones x 2 blocks x 4 racks x 4 nodes of 8 cores (64
// nodes, 512 cores), levels zone > block > rack. Label values are unique
// across the cluster (rack a1-r3 is in block a1 of zone a): a domain is
// the set of nodes sharing one value.
//
// The pre-load, 20 groups arriving in the first 5 s and running 700 to
// 1,500 s, takes 302 of the 512 cores: groups of 1 to 4 whole-node pods
// that require a rack, groups of 6-core pods that leave a 2-core sliver
// on each node, and lone pods. Fluence packs them: zone a ends up with
// every node taken (2 to 8 cores left per rack, in slivers), three racks
// of block b1 partly loaded, and five racks (b1-r4 and block b2) empty.
//
// The stream, from t = 10 s, one group every 20 s until t = 1,430 s: six
// rounds of twelve shapes of 2 to 16 pods, three of them heterogeneous
// (leaders of 6 or 8 cores with 2- or 4-core workers). Per round three
// require a rack (two of them a whole rack's cores), two a block, four
// prefer a rack (one a whole rack's cores), three ask nothing. Runtimes are 72 to
// 630 s. Every group declares a duration 25% over its runtime (rounded
// up to the second), so backfill can plan, and releases its nodes 2 s
// after completing.
//
// In all: 92 groups, 32 requiring a rack, 12 a block, 24 preferring a
// rack, 24 unconstrained. Every group fits its domain of the empty
// cluster, so every group completes under fluence; how long it waits for
// a rack or a block to free, and where the preferring groups land, is the
// point.
func TopologyFragmentedWorkload() *Workload {
	w := &Workload{
		Name:           "topology-fragmented",
		Params:         Params{PermitTimeout: defaultPermitTimeout},
		TopologyLevels: []string{ZoneLabelKey, BlockLabelKey, RackLabelKey},
	}
	for _, zone := range []string{"a", "b"} {
		for b := 1; b <= 2; b++ {
			block := fmt.Sprintf("%s%d", zone, b)
			for r := 1; r <= 4; r++ {
				rack := fmt.Sprintf("%s-r%d", block, r)
				for n := 1; n <= 4; n++ {
					w.Cluster.Nodes = append(w.Cluster.Nodes, NodeSpec{
						Name: fmt.Sprintf("%s-n%d", rack, n), CPU: 8000, Memory: UnmodelledMemory,
						Labels: map[string]string{ZoneLabelKey: "zone-" + zone, BlockLabelKey: block, RackLabelKey: rack},
					})
				}
			}
		}
	}
	// pods: count pods of cores each, then more of others (heterogeneous).
	type part struct{ count, cores int }
	type shape struct {
		name      string
		parts     []part
		runtime   float64
		req, pref string
	}
	group := func(s shape, arrival, runtime float64) GroupSpec {
		g := GroupSpec{Name: s.name, Arrival: arrival, Runtime: runtime, Duration: math.Ceil(runtime * 1.25),
			ReleaseDelay: 2, TopologyRequired: s.req, TopologyPreferred: s.pref}
		for _, p := range s.parts {
			for range p.count {
				g.Pods = append(g.Pods, PodSpec{CPU: int64(p.cores) * 1000})
			}
		}
		return g
	}
	rack, block := RackLabelKey, BlockLabelKey

	preload := []shape{
		{"pre-00", []part{{4, 8}}, 1500, rack, ""},
		{"pre-01", []part{{3, 8}}, 900, rack, ""},
		{"pre-02", []part{{3, 6}}, 1200, rack, ""},
		{"pre-03", []part{{1, 6}}, 1400, "", ""},
		{"pre-04", []part{{2, 8}}, 1100, rack, ""},
		{"pre-05", []part{{3, 8}}, 700, rack, ""},
		{"pre-06", []part{{2, 6}}, 1300, rack, ""},
		{"pre-07", []part{{1, 8}}, 1000, "", ""},
		{"pre-08", []part{{2, 8}}, 800, rack, ""},
		{"pre-09", []part{{1, 8}, {2, 6}}, 1500, rack, ""},
		{"pre-10", []part{{1, 4}}, 1200, "", ""},
		{"pre-11", []part{{3, 8}}, 1000, rack, ""},
		{"pre-12", []part{{2, 6}}, 900, rack, ""},
		{"pre-13", []part{{1, 8}}, 1400, "", ""},
		{"pre-14", []part{{3, 8}}, 1300, rack, ""},
		{"pre-15", []part{{2, 6}}, 1000, rack, ""},
		{"pre-16", []part{{1, 6}}, 1500, "", ""},
		{"pre-17", []part{{1, 8}, {1, 6}}, 800, rack, ""},
		{"pre-18", []part{{3, 6}}, 1400, rack, ""},
		{"pre-19", []part{{1, 4}}, 1100, "", ""},
	}
	for i, s := range preload {
		w.Groups = append(w.Groups, group(s, float64(i)*0.25, s.runtime))
	}

	stream := []shape{
		{"rack-whole", []part{{4, 8}}, 300, rack, ""},
		{"pref-8x2", []part{{8, 2}}, 200, "", rack},
		{"free-6x4", []part{{6, 4}}, 250, "", ""},
		{"block-lead", []part{{1, 8}, {11, 4}}, 400, block, ""},
		{"pref-3x8", []part{{3, 8}}, 300, "", rack},
		{"rack-lead", []part{{1, 6}, {5, 2}}, 180, rack, ""},
		{"free-2x2", []part{{2, 2}}, 120, "", ""},
		{"pref-16x2", []part{{16, 2}}, 350, "", rack},
		{"block-10x6", []part{{10, 6}}, 450, block, ""},
		{"pref-lead", []part{{2, 8}, {4, 2}}, 250, "", rack},
		{"rack-8x4", []part{{8, 4}}, 220, rack, ""},
		{"free-10x3", []part{{10, 3}}, 300, "", ""},
	}
	const rounds = 6
	for r := range rounds {
		for t, s := range stream {
			i := r*len(stream) + t
			// Runtimes vary by round: x0.6 to x1.4 of the shape's.
			scale := 0.6 + 0.2*float64((i*7)%5)
			s.name = fmt.Sprintf("s%02d-%s", i, s.name)
			w.Groups = append(w.Groups, group(s, 10+20*float64(i), math.Round(s.runtime*scale)))
		}
	}
	return w
}
