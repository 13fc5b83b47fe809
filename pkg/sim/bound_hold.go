package sim

// The runtime bound (LowerBoundParts) counts runtime only, so it holds
// however release delays are modelled, but it is weak wherever they
// matter: a finished group keeps its resources for its release delay, and
// no other group can use them meanwhile. The hold-time bound counts that.
//
// Each group holds every one of its pods from its start until completion
// plus its release delay (its pods are freed one by one from then on; the
// staggering only adds). So the area terms hold with hold times in place
// of runtimes, for the interval from the first start to the last
// release. Makespan ends at the last completion, which comes at most the
// largest release delay before the last release: taking that delay off
// the area terms keeps them below every schedule's makespan. The longest
// job term is the runtime bound's (arrival plus runtime).

// HoldBoundParts is LowerBoundParts with hold times (runtime plus release
// delay) in the area terms, each less the largest release delay of a
// runnable group (recorded in LessDelay).
func HoldBoundParts(w *Workload) BoundParts {
	b := boundParts(w, (*GroupSpec).Hold)
	if w == nil {
		return b
	}
	for i, ok := range runnableGroups(w) {
		if ok {
			b.LessDelay = max(b.LessDelay, w.Groups[i].ReleaseDelay)
		}
	}
	less := func(v float64) float64 {
		if v <= 0 {
			return 0
		}
		return max(v-b.LessDelay, 0)
	}
	b.CPU, b.Memory, b.GPU = less(b.CPU), less(b.Memory), less(b.GPU)
	for i := range b.PerShape {
		b.PerShape[i].Bound = less(b.PerShape[i].Bound)
	}
	return b
}

// HoldBound is the largest term of HoldBoundParts.
func HoldBound(w *Workload) float64 { return HoldBoundParts(w).Max() }
