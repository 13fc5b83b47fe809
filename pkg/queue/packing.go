package queue

import (
	"fmt"
	"slices"

	"github.com/fluence-sched/fluence/pkg/match"
)

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
// every candidate's decision, in out at its place.
func (q *Manager) decidePacked(cands []candidate, out []Decision, now int64) error {
	ds, err := q.pack(cands, now)
	if err != nil {
		return err
	}
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
			e.state, e.reason, e.busyGen = Pending, d.Reason, q.gen
		}
		out[c.out] = d
	}
	return nil
}

// pack decides the candidates: it returns the decisions, in candidate
// order, with State Running, Pending or Rejected.
//
// It starts with the first fit, for real: usually no other set can do
// better, and then nothing more is matched. A candidate the first fit
// left out could only be part of a better set if it fits alone, without
// the first fit's groups; when its shortfall beside them is more than
// they hold (shortfall.go), it cannot. Only when some candidate might is
// the first fit undone, those candidates matched alone and the best set
// searched for.
func (q *Manager) pack(cands []candidate, now int64) ([]Decision, error) {
	out := slices.Grow(q.packed[:0], len(cands))[:len(cands)]
	clear(out)
	q.packed = out
	var greedy, failed []int
	explains := make(map[int]*match.Explain)
	var slots [][]match.SlotPlacement // of the greedy set, by position in greedy
	for i, c := range cands {
		if c.busy {
			out[i] = Decision{Group: c.e.g, State: Pending, Reason: c.e.reason}
			continue
		}
		res, err := q.m.MatchRequest(match.Allocate, q.request(c.e), c.e.g.ID, now)
		if err != nil {
			return nil, err
		}
		switch res.Status {
		case match.Allocated:
			greedy = append(greedy, i)
			slots = append(slots, res.Slots)
			q.holding(c.e, res.Slots, res.Nodes, 1)
			out[i] = Decision{Group: c.e.g, State: Running, At: res.At, Nodes: res.Nodes, Reason: res.Reason}
		case match.Busy:
			failed = append(failed, i)
			explains[i] = res.Explain
			out[i] = Decision{Group: c.e.g, State: Pending, Reason: res.Reason}
		default:
			out[i] = Decision{Group: c.e.g, State: Rejected, Reason: res.Status.String() + ": " + res.Reason}
		}
	}
	// What the first fit holds, node by node; nil when it cannot be
	// weighed (then every candidate left out might fit without it).
	var held map[int32]units
	if len(greedy) > 0 && !q.m.Policy().NodeExclusive {
		held = map[int32]units{}
		for k, i := range greedy {
			per, ok := byNode(cands[i].e, slots[k])
			if !ok {
				held = nil
				break
			}
			for v, us := range per {
				held[v] = held[v].add(us, 1)
			}
		}
	}
	// A candidate left out fits without the first fit only if what it
	// fell short of beside it is no more than the first fit holds.
	var unsure []int
	sure := map[int]shortfall{}
	for _, i := range failed {
		if len(greedy) == 0 {
			break
		}
		sf := q.shortOf(cands[i].e, explains[i])
		if held != nil && !q.matchAll && (sf.slots > 0 || len(sf.totals) > 0) && sf.less(held) {
			sure[i] = sf
			continue
		}
		unsure = append(unsure, i)
	}
	if len(unsure) == 0 {
		// The first fit is the best fill: this is the loop's final state.
		for _, i := range failed {
			q.noteShort(cands[i].e, explains[i])
		}
		return out, nil
	}
	// Those that cannot fit alone keep what they miss in any state with
	// no more room than without the first fit.
	for _, i := range failed {
		sf, ok := sure[i]
		if !ok {
			continue
		}
		sf.at, sf.scanned = len(q.log), len(q.log)
		cands[i].e.short = sf
	}
	// Undo the first fit and look for a better set.
	for k := len(greedy) - 1; k >= 0; k-- {
		c := cands[greedy[k]]
		if err := q.m.Cancel(c.e.g.ID); err != nil {
			return nil, err
		}
		q.holding(c.e, slots[k], nil, -1)
		out[greedy[k]] = Decision{Group: c.e.g, State: Pending}
	}
	fit := slices.Clone(greedy)
	for _, i := range unsure {
		c := cands[i]
		// Whether it fits alone: Fits answers as a match would, without
		// writing the placement only to cancel it.
		res, err := q.m.FitsRequest(q.request(c.e), c.e.g.ID, now)
		if err != nil {
			return nil, err
		}
		if res.Status == match.Allocated {
			fit = append(fit, i)
			continue
		}
		q.noteShort(c.e, res.Explain) // alone: at most as roomy as what follows
		out[i] = Decision{Group: c.e.g, State: Pending, Reason: res.Reason}
	}
	slices.Sort(fit)
	chosen, err := q.bestFill(cands, fit, now)
	if err != nil {
		return nil, err
	}
	taken := make(map[int]bool, len(fit))
	start := func(i int) error {
		c := cands[i]
		res, err := q.m.MatchRequest(match.Allocate, q.request(c.e), c.e.g.ID, now)
		if err != nil {
			return err
		}
		if res.Status != match.Allocated {
			q.noteShort(c.e, res.Explain) // beside what started: the loop's final state
			out[i] = Decision{Group: c.e.g, State: Pending, Reason: res.Reason}
			return nil
		}
		taken[i] = true
		q.holding(c.e, res.Slots, res.Nodes, 1)
		out[i] = Decision{Group: c.e.g, State: Running, At: res.At, Nodes: res.Nodes, Reason: res.Reason}
		return nil
	}
	for _, i := range chosen {
		if err := start(i); err != nil {
			return nil, err
		}
	}
	for _, i := range fit {
		if !taken[i] {
			if err := start(i); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// bestFill searches the sets of fitting candidates (indexes into cands,
// in queue order) for the one with the largest summed share, within the
// packing budget, and returns it in queue order. The matcher is left as
// it was found.
func (q *Manager) bestFill(cands []candidate, fit []int, now int64) ([]int, error) {
	const eps = 1e-9
	rest := make([]float64, len(fit)+1) // rest[k]: share of fit[k:]
	for k := len(fit) - 1; k >= 0; k-- {
		rest[k] = rest[k+1] + cands[fit[k]].share
	}
	// The first complete set takes len(fit) matches: never cut it short.
	budget := max(q.cfg.PackingBudget, len(fit))
	var best, cur []int
	bestShare := -1.0
	var dfs func(k int, share float64) error
	dfs = func(k int, share float64) error {
		if k == len(fit) {
			if share > bestShare+eps {
				bestShare, best = share, append(best[:0], cur...)
			}
			return nil
		}
		if share+rest[k] <= bestShare+eps || budget <= 0 {
			return nil
		}
		c := cands[fit[k]]
		budget--
		// The last candidate is only weighed, never built on: Fits
		// answers for it without writing and cancelling a placement.
		last := k == len(fit)-1
		var res *match.Result
		var err error
		if last {
			res, err = q.m.FitsRequest(q.request(c.e), c.e.g.ID, now)
		} else {
			res, err = q.m.MatchRequest(match.Allocate, q.request(c.e), c.e.g.ID, now)
		}
		if err != nil {
			return err
		}
		if res.Status == match.Allocated {
			cur = append(cur, fit[k])
			err := dfs(k+1, share+c.share)
			cur = cur[:len(cur)-1]
			if !last {
				if cerr := q.m.Cancel(c.e.g.ID); cerr != nil {
					return fmt.Errorf("packing search: %w", cerr)
				}
			}
			if err != nil {
				return err
			}
		}
		return dfs(k+1, share)
	}
	if err := dfs(0, 0); err != nil {
		return nil, err
	}
	q.PackingSearches++
	return best, nil
}
