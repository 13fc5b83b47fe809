package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// The lower bound answers "how far from the best possible is this
// makespan?" without solving the scheduling problem: no schedule, however
// clever, finishes before any of these terms. Makespan is measured as in
// Result: first arrival to last completion, so the terms use Runtime (not
// Runtime + ReleaseDelay: the last group's release delay falls after the
// makespan ends) and measure from the first arrival.
//
// Groups with a pod that fits no node are left out of every term: a
// scheduler must reject them, they never complete, and counting their work
// would let the bound exceed an optimal schedule's makespan.

// ShapeBound is the bound from one pod shape: all pods of that shape must
// run, and the cluster can hold at most Slots of them at once.
type ShapeBound struct {
	Shape      PodSpec
	Pods       int     // pods of this shape
	PodSeconds float64 // sum of their runtimes
	Slots      int64   // how many fit the cluster at once (each node alone)
	Bound      float64 // PodSeconds / Slots
}

// BoundParts is LowerBound term by term, so a report can say which binds.
type BoundParts struct {
	// Longest is the latest any one group can finish if it starts at its
	// arrival: max over groups of arrival - first arrival + runtime.
	Longest      float64
	LongestGroup string
	// CPU, Memory and GPU: total request x runtime over the cluster's
	// total of that resource (0 when no group requests it).
	CPU, Memory, GPU float64
	// PerShape, sorted by shape (CPU, then memory, then GPU).
	PerShape []ShapeBound
	// Excluded counts groups left out because a pod fits no node.
	Excluded int
	// LessDelay is what the hold-time bound took off its area terms (the
	// largest release delay); 0 for the runtime bound.
	LessDelay float64
}

// Max is the bound: the largest term.
func (b BoundParts) Max() float64 {
	m := max(b.Longest, b.CPU, b.Memory, b.GPU)
	for _, s := range b.PerShape {
		m = max(m, s.Bound)
	}
	return m
}

// Binding names the largest term: "longest job", "cpu", "memory", "gpu" or
// "shape cpu=2000m" (ties go to the first in that order).
func (b BoundParts) Binding() string {
	name, best := "longest job", b.Longest
	for _, t := range []struct {
		name string
		v    float64
	}{{"cpu", b.CPU}, {"memory", b.Memory}, {"gpu", b.GPU}} {
		if t.v > best {
			name, best = t.name, t.v
		}
	}
	for _, s := range b.PerShape {
		if s.Bound > best {
			name, best = "shape "+shapeString(s.Shape), s.Bound
		}
	}
	return name
}

// shapeString describes a pod shape, e.g. "cpu=2000m" or
// "cpu=1000m,memory=1073741824,gpu=1".
func shapeString(p PodSpec) string {
	s := fmt.Sprintf("cpu=%dm", p.CPU)
	if p.Memory > 0 {
		s += fmt.Sprintf(",memory=%d", p.Memory)
	}
	if p.GPU > 0 {
		s += fmt.Sprintf(",gpu=%d", p.GPU)
	}
	return s
}

// LowerBound is a lower bound on any schedule's makespan for w: the
// largest of the terms of LowerBoundParts. 0 for a workload with no
// runnable group.
func LowerBound(w *Workload) float64 { return LowerBoundParts(w).Max() }

// LowerBoundParts computes every term of the lower bound:
//
//   - the longest job: no group completes before its arrival plus its
//     runtime;
//   - per resource: the cluster cannot do more than its capacity of
//     request-seconds per second;
//   - per pod shape: the pods of one shape cannot run more at once than
//     the cluster holds, counting each node alone (floor of capacity over
//     request for every requested resource). This is the term the
//     resource totals miss: on run8 a 3-CPU node holds one 2-CPU pod, so
//     a third of the CPU can never serve the 2-CPU pods.
func LowerBoundParts(w *Workload) BoundParts { return boundParts(w, (*GroupSpec).runtime) }

func (g *GroupSpec) runtime() float64 { return g.Runtime }

// boundParts computes the terms with each group weighing in for
// weight(g) seconds: its runtime for the runtime bound, its hold time for
// the hold-time bound (HoldBoundParts).
func boundParts(w *Workload, weight func(*GroupSpec) float64) BoundParts {
	var b BoundParts
	if w == nil || len(w.Groups) == 0 {
		return b
	}
	var capCPU, capMem, capGPU float64
	nodes := boundNodes(w)
	for _, n := range nodes {
		capCPU += float64(n.CPU)
		capMem += float64(n.Memory)
		capGPU += float64(n.GPU)
	}
	first := math.Inf(1)
	runnable := runnableGroups(w)
	for i := range w.Groups {
		g := &w.Groups[i]
		if runnable[i] {
			first = min(first, g.Arrival)
		} else {
			b.Excluded++
		}
	}
	type acc struct {
		pods int
		sec  float64
	}
	shapes := map[PodSpec]*acc{}
	var workCPU, workMem, workGPU float64
	for i := range w.Groups {
		if !runnable[i] {
			continue
		}
		g := &w.Groups[i]
		if l := g.Arrival - first + g.Runtime; l > b.Longest || b.LongestGroup == "" {
			b.Longest, b.LongestGroup = l, g.Name
		}
		h := weight(g)
		for _, p := range g.Pods {
			workCPU += float64(p.CPU) * h
			workMem += float64(p.Memory) * h
			workGPU += float64(p.GPU) * h
			a := shapes[p]
			if a == nil {
				a = &acc{}
				shapes[p] = a
			}
			a.pods++
			a.sec += h
		}
	}
	b.CPU = ratio(workCPU, capCPU)
	b.Memory = ratio(workMem, capMem)
	b.GPU = ratio(workGPU, capGPU)
	for p, a := range shapes {
		slots := clusterSlots(p, nodes)
		if slots <= 0 {
			continue // requests nothing: no per-shape limit
		}
		b.PerShape = append(b.PerShape, ShapeBound{Shape: p, Pods: a.pods, PodSeconds: a.sec, Slots: slots, Bound: a.sec / float64(slots)})
	}
	slices.SortFunc(b.PerShape, func(x, y ShapeBound) int {
		return cmp.Or(cmp.Compare(x.Shape.CPU, y.Shape.CPU), cmp.Compare(x.Shape.Memory, y.Shape.Memory), cmp.Compare(x.Shape.GPU, y.Shape.GPU))
	})
	return b
}

func ratio(work, capacity float64) float64 {
	if work <= 0 || capacity <= 0 {
		return 0
	}
	return work / capacity
}

// boundNodes is every node the run will have: those of the cluster and
// those joining it. Capacity never exceeds theirs, so the area terms
// divide by it; dividing by the first cluster's would overstate them.
func boundNodes(w *Workload) []NodeSpec {
	nodes := slices.Clone(w.Cluster.Nodes)
	for _, a := range w.NodeArrivals {
		nodes = append(nodes, a.Node)
	}
	return nodes
}

// runnableGroups marks the groups a scheduler can ever start: the bounds
// leave the others out. A group counts as runnable when first-fit
// decreasing places all its pods on the empty nodes; that is proof it
// fits. When it fails the group may still fit a cleverer packing, and
// leaving it out only lowers the bounds: they stay bounds.
func runnableGroups(w *Workload) []bool {
	nodes := boundNodes(w)
	out := make([]bool, len(w.Groups))
	known := map[string]bool{}
	for i := range w.Groups {
		pods := slices.Clone(w.Groups[i].Pods)
		slices.SortFunc(pods, func(a, b PodSpec) int {
			return cmp.Or(cmp.Compare(b.CPU, a.CPU), cmp.Compare(b.Memory, a.Memory), cmp.Compare(b.GPU, a.GPU))
		})
		key := fmt.Sprint(pods)
		fits, ok := known[key]
		if !ok {
			fits = len(pods) > 0 && firstFitDecreasing(pods, nodes)
			known[key] = fits
		}
		out[i] = fits
	}
	return out
}

// firstFitDecreasing places pods (sorted largest first) each on the first
// node with room, and reports whether all found one.
func firstFitDecreasing(pods []PodSpec, nodes []NodeSpec) bool {
	free := make([]PodSpec, len(nodes))
	for i, n := range nodes {
		free[i] = PodSpec{CPU: n.CPU, Memory: n.Memory, GPU: n.GPU}
	}
	start := 0 // nodes before it have no room for any pod left
	for _, p := range pods {
		placed := false
		for i := start; i < len(free); i++ {
			if Fits(free[i], p) {
				free[i] = minus(free[i], p)
				placed = true
				break
			}
		}
		if !placed {
			return false
		}
		for start < len(free) && !Fits(free[start], pods[len(pods)-1]) {
			start++
		}
	}
	return true
}

// clusterSlots is how many pods of shape p the cluster holds at once: the
// sum over nodes of the fewest that any requested resource allows on that
// node alone. 0 when p requests nothing (no limit to state). Saturates
// instead of overflowing (tiny requests on huge nodes).
func clusterSlots(p PodSpec, nodes []NodeSpec) int64 {
	if p.CPU <= 0 && p.Memory <= 0 && p.GPU <= 0 {
		return 0
	}
	var total int64
	for _, n := range nodes {
		per := int64(math.MaxInt64)
		if p.CPU > 0 {
			per = min(per, n.CPU/p.CPU)
		}
		if p.Memory > 0 {
			per = min(per, n.Memory/p.Memory)
		}
		if p.GPU > 0 {
			per = min(per, n.GPU/p.GPU)
		}
		if per < 0 {
			per = 0
		}
		if total > math.MaxInt64-per {
			return math.MaxInt64
		}
		total += per
	}
	return total
}
