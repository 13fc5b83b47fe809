package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Priorities of PackedRackWorkload's groups.
const (
	PackedRackLow      = 0    // most of the background
	PackedRackStandard = 100  // some of it
	PackedRackUrgent   = 1000 // the gangs that need a rack
)

// packedRackStream is the PCG stream constant of PackedRackWorkload; the
// seed picks the sequence.
const packedRackStream = 0x7261636b // "rack"

// PackedRackWorkload is racks packed with running work into which urgent
// gangs arrive that must each run within one rack: the case for
// topology-aware preemption (docs/design/008-preemption.md). It is drawn
// from the seed, the same every time for one seed.
//
// The cluster: 4 racks (example.com/rack r1 .. r4) of 8 nodes of 8 cores
// (memory not modelled); one topology level, the rack.
//
// The background, asking no domain: first a pre-load arriving in the
// first seconds (one group every 0.5 s) until it asks 90% of the
// cluster's cores, then one group every 500 s from t = 600 s to 9,000 s.
// Pre-load shapes (pods x cores): large 8x8, 6x8, 4x8; medium 4x4, 3x8,
// 2x8; small 1x8, 2x4, 1x4. Later groups take whole nodes (the shapes of
// 8-core pods), so the half nodes the pre-load leaves free stay free:
// room a small group can be moved to. A fifth of the pre-load has
// priority 100 (PackedRackStandard), the rest of the background 0
// (PackedRackLow). Runtimes are 3,600 to 10,800 s in the pre-load and
// 3,600 to 7,200 s after; half the groups checkpoint, every 300, 600 or
// 900 s of run; three quarters of the small groups and half the medium
// ones are movable (never the large).
//
// The urgent gangs, priority 1000 (PackedRackUrgent), requiring one rack:
// eight, one every 900 s from t = 1,800 s, of 4 to 8 whole-node pods (8
// cores), running 900 to 1,800 s. Each needs half a rack or more in one
// rack while every rack is packed: it must evict, or move, what runs
// there.
//
// Every group declares a duration 25% over its runtime (rounded up to the
// second) and releases its nodes 3 s after completing.
func PackedRackWorkload(seed uint64) *Workload {
	const (
		racks    = 4
		nodesPer = 8
		cores    = 8
	)
	w := &Workload{
		Name:           fmt.Sprintf("packed-rack-%d", seed),
		Params:         Params{PermitTimeout: defaultPermitTimeout},
		TopologyLevels: []string{RackLabelKey},
	}
	for r := 1; r <= racks; r++ {
		rack := fmt.Sprintf("r%d", r)
		for n := 1; n <= nodesPer; n++ {
			w.Cluster.Nodes = append(w.Cluster.Nodes, NodeSpec{
				Name: fmt.Sprintf("%s-n%d", rack, n), CPU: cores * 1000, Memory: UnmodelledMemory,
				Labels: map[string]string{RackLabelKey: rack},
			})
		}
	}
	rng := rand.New(rand.NewPCG(seed, packedRackStream))
	type shape struct {
		pods  int
		cores int64
		class string // large, medium, small
	}
	shapes := []shape{
		{8, 8, "large"}, {6, 8, "large"}, {4, 8, "large"},
		{4, 4, "medium"}, {3, 8, "medium"}, {2, 8, "medium"},
		{1, 8, "small"}, {2, 4, "small"}, {1, 4, "small"},
	}
	var wholeNodes []shape
	for _, s := range shapes {
		if s.cores == cores {
			wholeNodes = append(wholeNodes, s)
		}
	}
	uniform := func(lo, hi float64) float64 { return math.Round(lo + rng.Float64()*(hi-lo)) }
	group := func(name string, arrival float64, pods int, podCores int64, runtime float64, prio int64) GroupSpec {
		g := GroupSpec{Name: name, Arrival: arrival, Runtime: runtime, Duration: math.Ceil(runtime * 1.25),
			Priority: prio, ReleaseDelay: 3}
		for range pods {
			g.Pods = append(g.Pods, PodSpec{CPU: podCores * 1000, Memory: 0})
		}
		return g
	}
	background := func(arrival, rtLo, rtHi float64, from []shape) GroupSpec {
		s := from[rng.IntN(len(from))]
		prio := int64(PackedRackLow)
		if rng.IntN(5) == 0 && arrival < 600 {
			prio = PackedRackStandard
		}
		g := group("", arrival, s.pods, s.cores, uniform(rtLo, rtHi), prio)
		g.Name = fmt.Sprintf("bg-%02d-%dx%d", len(w.Groups), s.pods, s.cores)
		if rng.IntN(2) == 0 {
			g.CheckpointEvery = float64(300 * (1 + rng.IntN(3)))
		}
		switch s.class {
		case "small":
			g.Movable = rng.IntN(4) < 3
		case "medium":
			g.Movable = rng.IntN(2) == 0
		}
		return g
	}
	capacity := int64(racks * nodesPer * cores)
	var asked int64
	for t := 0.0; asked*10 < capacity*9; t += 0.5 {
		g := background(t, 3600, 10800, shapes)
		asked += int64(len(g.Pods)) * g.Pods[0].CPU / 1000
		w.Groups = append(w.Groups, g)
	}
	for t := 600.0; t <= 9000; t += 500 {
		w.Groups = append(w.Groups, background(t, 3600, 7200, wholeNodes))
	}
	for i := range 8 {
		pods := 4 + rng.IntN(5)
		g := group(fmt.Sprintf("urgent-%d-%dx8", i, pods), 1800+900*float64(i), pods, 8, uniform(900, 1800), PackedRackUrgent)
		g.TopologyRequired = RackLabelKey
		w.Groups = append(w.Groups, g)
	}
	return w
}
