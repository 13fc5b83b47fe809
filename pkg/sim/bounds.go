package sim

// Bounds are the lower bounds on a workload's makespan, each valid for
// every schedule; the best is the largest. They differ in what they
// count:
//
//   - Runtime (LowerBound): runtime only, so it holds however release
//     delays are modelled, and is weak where they matter.
//   - Hold (HoldBound): hold times (runtime plus release delay), less the
//     largest delay.
//   - Packing (PackingBoundOf): hold times of whole groups that must fit
//     together, on identical nodes; 0 where it was not computed
//     (PackingSkipped says why).
type Bounds struct {
	Runtime, Hold, Packing float64
	PackingSkipped         string
}

// BoundsOf computes every bound of w.
func BoundsOf(w *Workload) Bounds {
	pb := PackingBoundOf(w)
	return Bounds{Runtime: LowerBound(w), Hold: HoldBound(w), Packing: pb.Bound, PackingSkipped: pb.Skipped}
}

// Best returns the largest bound and its name ("runtime", "hold time" or
// "packing"); ties go to the first in that order.
func (b Bounds) Best() (float64, string) {
	v, name := b.Runtime, "runtime"
	if b.Hold > v {
		v, name = b.Hold, "hold time"
	}
	if b.Packing > v {
		v, name = b.Packing, "packing"
	}
	return v, name
}
