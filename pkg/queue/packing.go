package queue

// Packing-aware backfill. Plain backfill walks the window in queue order
// and starts every group that fits: the first fit. When the groups differ
// in size that strands capacity: 4 free slots go to a 3-slot group ahead
// of a 4-slot one, and the last slot idles until something ends. With
// Config.Packing the loop instead collects the groups it may only start
// now (no reservation left to make), and starts the set of them that
// fills the most of the cluster (match.Matcher.Share, summed), judged by
// the matcher itself:
//
//  1. each candidate is matched alone against the state the loop left
//     (reservations in place, so no choice delays one); those that fail
//     wait, as under plain backfill;
//  2. a depth-first search over those that fit, in queue order, taking
//     each before leaving it out: the first complete set it meets is the
//     first fit, and a later set replaces it only if it fills strictly
//     more, so ties keep queue order. A branch that cannot beat the best
//     set even with every remaining candidate is cut;
//  3. the best set is started in queue order, then any candidate left
//     that still fits beside it (the search may have run out of budget).
//
// A step that fails undoes the whole decision: what it placed is
// cancelled and the candidates wait as before (pack.go).
//
// Cost: per loop, one match.Matcher.Fits per candidate matched alone (it
// writes nothing), and at most PackingBudget matches in the search, each
// undone by a cancel except at the search's last candidate, which is only
// weighed (Fits). It runs only when something changed since the last loop, as
// every match does (the queue's skip rule).

// DefaultPackingBudget bounds the matches one packing search makes.
const DefaultPackingBudget = 64

// candidate is a group the loop may only start now.
type candidate struct {
	e     *entry
	out   int // index of its decision
	share float64
	// busy: known not to fit now (it failed at this generation and
	// nothing changed since), so it is not matched alone.
	busy bool
}

// decidePacked starts the best-filling set of candidates and records
// every candidate's decision, in out at its place. When packing fails,
// what it placed has been cancelled: the candidates are pending as they
// were, but any whose job the matcher would not give back, which run.
func (q *Manager) decidePacked(cands []candidate, out []Decision, now int64) error {
	ds, err := q.pack(cands, now)
	for i, c := range cands {
		d, e := ds[i], c.e
		switch d.State {
		case Running:
			e.state, e.at = Running, d.At
			q.running[e.g.ID] = e
		case Rejected:
			e.state, e.reason = Rejected, d.Reason
			delete(q.byID, e.g.ID)
		default:
			if err != nil {
				// Not all were matched: none is known not to fit.
				d = Decision{Group: e.g, State: Pending, Reason: e.reason}
				break
			}
			e.state, e.reason, e.busyGen = Pending, d.Reason, q.gen
		}
		out[c.out] = d
	}
	return err
}
