package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// The packing bound answers what the area bounds cannot: how much of the
// cluster must stay idle because whole groups do not pack. On run8 a
// 6-pod gang of 2-CPU pods leaves 2 of the 8 slots that hold such pods
// idle for its whole hold, since no group needs fewer than 3 of them.
//
// At every moment of any schedule, the groups holding resources fit the
// cluster together: they form a compatible set. Let x_C be the time
// during which exactly the set C holds resources. Every group of kind k
// (same pods) holds for its hold time, so summed over a kind,
// sum_C a(C,k) x_C = H_k, where a(C,k) counts C's groups of kind k and
// H_k is the kind's total hold time; and the sum of all x_C is at most
// the time from the first start to the last release. So the linear
// program
//
//	minimise sum_C x_C   subject to   sum_C a(C,k) x_C >= H_k,  x >= 0
//
// is a lower bound on that time, and taking off the largest release
// delay (as for the hold-time bound) makes it one on the makespan.
// Only maximal compatible sets are needed: replacing a set by a larger
// one never breaks a constraint. The bound is certified by a solution y
// of the dual (maximise sum_k H_k y_k subject to sum_k a(C,k) y_k <= 1
// for every set C, y >= 0), which is checked against every set and
// scaled into feasibility: any such y bounds the optimum from below, so
// the figure is a bound whatever the solver's rounding.
//
// Whether a set of groups fits is a bin-packing question; on identical
// nodes it is answered exactly by covering the set's pods with node
// patterns (the pods one node holds at once). The bound is computed only
// for workloads small enough to enumerate (see the packing limits), on
// identical nodes with none joining.

// Limits on the packing bound's enumeration: beyond them it is skipped
// (PackingBound.Skipped says why) rather than run for minutes.
const (
	packMaxShapes   = 6
	packMaxKinds    = 16
	packMaxPatterns = 4096
	packMaxSets     = 20000
	packMaxFitCalls = 2_000_000
)

// GroupKind is a class of groups with the same pods, for the packing
// bound.
type GroupKind struct {
	// Pods counts pods per shape (PackingBound.Shapes).
	Pods []int
	// Groups is how many groups are of this kind; Hold their summed hold
	// time (runtime plus release delay), in seconds.
	Groups int
	Hold   float64
	// Weight is the dual value: the share of a second of cluster time one
	// second of this kind's hold costs at least.
	Weight float64
	// Name is one group of the kind, for reports.
	Name string
}

// PackingBound is the packing bound and how it was reached.
type PackingBound struct {
	// Bound is LP - LessDelay (0 when skipped or negative).
	Bound float64
	// LP is the certified value of the linear program: a lower bound on
	// the time from the first start to the last release.
	LP        float64
	LessDelay float64
	Shapes    []PodSpec
	Kinds     []GroupKind
	// Sets is the number of maximal compatible sets of groups.
	Sets int
	// Skipped says why no bound was computed ("" when one was).
	Skipped string
}

// packing holds the enumeration state.
type packing struct {
	node     PodSpec // one node's capacity
	nodes    int
	shapes   []PodSpec
	patterns [][]int // maximal node patterns: pods per shape on one node
	memo     map[string]int
	calls    int
}

// PackingBoundOf computes the packing bound of w.
func PackingBoundOf(w *Workload) PackingBound {
	var pb PackingBound
	if w == nil || len(w.Groups) == 0 || len(w.Cluster.Nodes) == 0 {
		pb.Skipped = "no groups or no nodes"
		return pb
	}
	if len(w.NodeArrivals) > 0 {
		pb.Skipped = "nodes join during the run"
		return pb
	}
	n0 := w.Cluster.Nodes[0]
	for _, n := range w.Cluster.Nodes[1:] {
		if n.CPU != n0.CPU || n.Memory != n0.Memory || n.GPU != n0.GPU {
			pb.Skipped = "the nodes are not identical"
			return pb
		}
	}
	p := &packing{node: PodSpec{CPU: n0.CPU, Memory: n0.Memory, GPU: n0.GPU}, nodes: len(w.Cluster.Nodes), memo: map[string]int{}}

	// Shapes, in a fixed order, of the pods that fit a node.
	for i := range w.Groups {
		for _, pod := range w.Groups[i].Pods {
			if Fits(p.node, pod) && !slices.Contains(p.shapes, pod) {
				p.shapes = append(p.shapes, pod)
			}
		}
	}
	slices.SortFunc(p.shapes, func(a, b PodSpec) int {
		return cmp.Or(cmp.Compare(a.CPU, b.CPU), cmp.Compare(a.Memory, b.Memory), cmp.Compare(a.GPU, b.GPU))
	})
	if len(p.shapes) > packMaxShapes {
		pb.Skipped = fmt.Sprintf("%d pod shapes (the limit is %d)", len(p.shapes), packMaxShapes)
		return pb
	}
	pb.Shapes = p.shapes
	if !p.enumeratePatterns() {
		pb.Skipped = fmt.Sprintf("more than %d ways to fill one node", packMaxPatterns)
		return pb
	}

	// Kinds: groups with the same pods. A group that cannot fit the empty
	// cluster is rejected by any scheduler and never completes: it is
	// left out, as in the other bounds.
	byKey := map[string]int{}
	for i := range w.Groups {
		g := &w.Groups[i]
		v, ok := p.vector(g.Pods)
		if !ok || !p.fits(v) {
			continue
		}
		pb.LessDelay = max(pb.LessDelay, g.ReleaseDelay)
		key := fmt.Sprint(v)
		k, seen := byKey[key]
		if !seen {
			if len(pb.Kinds) == packMaxKinds {
				pb.Skipped = fmt.Sprintf("more than %d kinds of groups", packMaxKinds)
				return pb
			}
			k = len(pb.Kinds)
			byKey[key] = k
			pb.Kinds = append(pb.Kinds, GroupKind{Pods: v, Name: g.Name})
		}
		pb.Kinds[k].Groups++
		pb.Kinds[k].Hold += g.Hold()
	}
	if len(pb.Kinds) == 0 {
		pb.Skipped = "no group fits the cluster"
		return pb
	}
	sets, why := p.maximalSets(pb.Kinds)
	if why != "" {
		pb.Skipped = why
		return pb
	}
	pb.Sets = len(sets)
	hold := make([]float64, len(pb.Kinds))
	for k, kind := range pb.Kinds {
		hold[k] = kind.Hold
	}
	y, lpValue, err := certifiedCover(sets, hold)
	if err != nil {
		pb.Skipped = "linear program: " + err.Error()
		return pb
	}
	for k := range pb.Kinds {
		pb.Kinds[k].Weight = y[k]
	}
	pb.LP = lpValue
	pb.Bound = max(lpValue-pb.LessDelay, 0)
	return pb
}

// vector counts pods per shape; false if a pod fits no node.
func (p *packing) vector(pods []PodSpec) ([]int, bool) {
	v := make([]int, len(p.shapes))
	for _, pod := range pods {
		i := slices.Index(p.shapes, pod)
		if i < 0 {
			return nil, false
		}
		v[i]++
	}
	return v, true
}

// enumeratePatterns lists the maximal sets of pods one node holds.
func (p *packing) enumeratePatterns() bool {
	cur := make([]int, len(p.shapes))
	var used PodSpec
	var walk func(i int) bool
	walk = func(i int) bool {
		if i == len(p.shapes) {
			for _, shape := range p.shapes {
				if Fits(minus(p.node, used), shape) {
					return true // not maximal: one more pod of shape fits
				}
			}
			if len(p.patterns) == packMaxPatterns {
				return false
			}
			p.patterns = append(p.patterns, slices.Clone(cur))
			return true
		}
		shape := p.shapes[i]
		n := 0
		for Fits(minus(p.node, used), shape) {
			used = plus(used, shape)
			n++
		}
		for ; n >= 0; n-- {
			cur[i] = n
			if !walk(i + 1) {
				return false
			}
			if n > 0 {
				used = minus(used, shape)
			}
		}
		cur[i] = 0
		return true
	}
	return walk(0)
}

func plus(a, b PodSpec) PodSpec {
	return PodSpec{CPU: a.CPU + b.CPU, Memory: a.Memory + b.Memory, GPU: a.GPU + b.GPU}
}

func minus(a, b PodSpec) PodSpec {
	return PodSpec{CPU: a.CPU - b.CPU, Memory: a.Memory - b.Memory, GPU: a.GPU - b.GPU}
}

// fits reports whether pods counted per shape fit the cluster's nodes.
func (p *packing) fits(v []int) bool { return p.minNodes(v) <= p.nodes }

// minNodes is the fewest nodes that hold the pods counted in v. Some node
// holds a pod of the first shape left, and what it holds lies within a
// maximal pattern holding that shape: trying those patterns, and taking
// away what each covers, is exact.
func (p *packing) minNodes(v []int) int {
	first := slices.IndexFunc(v, func(n int) bool { return n > 0 })
	if first < 0 {
		return 0
	}
	key := fmt.Sprint(v)
	if n, ok := p.memo[key]; ok {
		return n
	}
	p.calls++
	best := math.MaxInt32
	rest := make([]int, len(v))
	for _, pat := range p.patterns {
		if pat[first] == 0 {
			continue
		}
		for i := range v {
			rest[i] = max(v[i]-pat[i], 0)
		}
		best = min(best, 1+p.minNodes(rest))
	}
	p.memo[key] = best
	return best
}

// maximalSets enumerates the maximal compatible sets of groups, as counts
// per kind: adding any group still available does not fit.
func (p *packing) maximalSets(kinds []GroupKind) ([][]int, string) {
	pods := make([]int, len(p.shapes))
	cur := make([]int, len(kinds))
	var out [][]int
	add := func(k, sign int) {
		for s := range pods {
			pods[s] += sign * kinds[k].Pods[s]
		}
	}
	fitsWith := func(k int) bool {
		add(k, 1)
		ok := p.fits(pods)
		add(k, -1)
		return ok
	}
	var why string
	var walk func(k int)
	walk = func(k int) {
		if why != "" {
			return
		}
		if p.calls > packMaxFitCalls {
			why = "too many sets of groups to check"
			return
		}
		if k == len(kinds) {
			for j := range kinds {
				if cur[j] < kinds[j].Groups && fitsWith(j) {
					return // not maximal
				}
			}
			if len(out) == packMaxSets {
				why = fmt.Sprintf("more than %d compatible sets of groups", packMaxSets)
				return
			}
			out = append(out, slices.Clone(cur))
			return
		}
		n := 0
		for n < kinds[k].Groups && fitsWith(k) {
			add(k, 1)
			n++
		}
		for ; n >= 0; n-- {
			cur[k] = n
			walk(k + 1)
			if n > 0 {
				add(k, -1)
			}
		}
		cur[k] = 0
	}
	walk(0)
	return out, why
}
