package queue

import (
	"errors"
	"fmt"
	"slices"

	"github.com/fluence-sched/fluence/pkg/match"
)

// packRun is one packing decision (packing.go): the candidates, their
// decisions, and the jobs it placed, so that a step that fails can be
// undone and leave the matcher holding nothing the queue calls pending.
type packRun struct {
	q     *Manager
	cands []candidate
	out   []Decision // by candidate
	now   int64
	// placed are the candidates whose job the matcher holds for this
	// run, in the order placed; counted those of them counted in what
	// the queue holds per node (holding), with their slots.
	placed  []int
	counted map[int][]match.SlotPlacement
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
//
// On an error every job it placed is cancelled and the decisions say
// Pending (Running for a job the matcher would not give back).
func (q *Manager) pack(cands []candidate, now int64) ([]Decision, error) {
	out := slices.Grow(q.packed[:0], len(cands))[:len(cands)]
	clear(out)
	q.packed = out
	p := &packRun{q: q, cands: cands, out: out, now: now, counted: map[int][]match.SlotPlacement{}}
	if err := p.run(); err != nil {
		return out, errors.Join(err, p.abandon())
	}
	return out, nil
}

// run takes the steps of a packing decision.
func (p *packRun) run() error {
	greedy, failed, explains, err := p.firstFit()
	if err != nil {
		return err
	}
	unsure := p.unsure(greedy, failed, explains)
	if len(unsure) == 0 {
		// The first fit is the best fill: this is the loop's final state.
		for _, i := range failed {
			p.q.noteShort(p.cands[i].e, explains[i])
		}
		return nil
	}
	if err := p.undo(greedy); err != nil {
		return err
	}
	fit, err := p.fitsAlone(greedy, unsure)
	if err != nil {
		return err
	}
	chosen, err := p.bestFill(fit)
	if err != nil {
		return err
	}
	return p.start(chosen, fit)
}

// firstFit starts every candidate that fits, in queue order; it returns
// those it started (greedy), those that did not fit (failed) and why.
func (p *packRun) firstFit() (greedy, failed []int, explains map[int]*match.Explain, err error) {
	explains = map[int]*match.Explain{}
	for i, c := range p.cands {
		if c.busy {
			p.out[i] = Decision{Group: c.e.g, State: Pending, Reason: c.e.reason}
			continue
		}
		res, err := p.allocate(i)
		if err != nil {
			return nil, nil, nil, err
		}
		switch res.Status {
		case match.Allocated:
			greedy = append(greedy, i)
			p.count(i, res)
		case match.Busy:
			failed = append(failed, i)
			explains[i] = res.Explain
			p.out[i] = Decision{Group: c.e.g, State: Pending, Reason: res.Reason}
		default:
			p.out[i] = Decision{Group: c.e.g, State: Rejected, Reason: res.Status.String() + ": " + res.Reason}
		}
	}
	return greedy, failed, explains, nil
}

// unsure returns the candidates the first fit left out that might fit
// without it. Those that cannot keep what they miss: in any state with
// no more room than without the first fit, they miss at least that.
func (p *packRun) unsure(greedy, failed []int, explains map[int]*match.Explain) []int {
	if len(greedy) == 0 {
		return nil
	}
	q := p.q
	// What the first fit holds, node by node; nil when it cannot be
	// weighed (then every candidate left out might fit without it).
	var held map[int32]units
	if !q.m.Policy().NodeExclusive {
		held = map[int32]units{}
		for _, i := range greedy {
			per, ok := byNode(p.cands[i].e, p.counted[i])
			if !ok {
				held = nil
				break
			}
			for v, us := range per {
				held[v] = held[v].add(us, 1)
			}
		}
	}
	var unsure []int
	sure := map[int]shortfall{}
	for _, i := range failed {
		sf := q.shortOf(p.cands[i].e, explains[i])
		if held != nil && !q.matchAll && (sf.slots > 0 || len(sf.totals) > 0) && sf.less(held) {
			sure[i] = sf
			continue
		}
		unsure = append(unsure, i)
	}
	if len(unsure) == 0 {
		return nil
	}
	for _, i := range failed {
		if sf, ok := sure[i]; ok {
			sf.at, sf.scanned = len(q.log), len(q.log)
			p.cands[i].e.short = sf
		}
	}
	return unsure
}

// undo cancels the first fit, latest first.
func (p *packRun) undo(greedy []int) error {
	for k := len(greedy) - 1; k >= 0; k-- {
		i := greedy[k]
		if err := p.release(i); err != nil {
			return err
		}
		p.out[i] = Decision{Group: p.cands[i].e.g, State: Pending}
	}
	return nil
}

// fitsAlone returns, in queue order, the first fit and the unsure
// candidates that fit with nothing else started. Fits answers as a match
// would, without writing the placement only to cancel it.
func (p *packRun) fitsAlone(greedy, unsure []int) ([]int, error) {
	fit := slices.Clone(greedy)
	for _, i := range unsure {
		c := p.cands[i]
		res, err := p.q.m.FitsRequest(p.q.request(c.e), c.e.g.ID, p.now)
		if err != nil {
			return nil, err
		}
		if res.Status == match.Allocated {
			fit = append(fit, i)
			continue
		}
		p.q.noteShort(c.e, res.Explain) // alone: at most as roomy as what follows
		p.out[i] = Decision{Group: c.e.g, State: Pending, Reason: res.Reason}
	}
	slices.Sort(fit)
	return fit, nil
}

// start starts the chosen set, then any candidate that fits beside it
// (the search may have run out of budget).
func (p *packRun) start(chosen, fit []int) error {
	taken := make(map[int]bool, len(fit))
	try := func(i int) error {
		c := p.cands[i]
		res, err := p.allocate(i)
		if err != nil {
			return err
		}
		if res.Status != match.Allocated {
			p.q.noteShort(c.e, res.Explain) // beside what started: the loop's final state
			p.out[i] = Decision{Group: c.e.g, State: Pending, Reason: res.Reason}
			return nil
		}
		taken[i] = true
		p.count(i, res)
		return nil
	}
	for _, i := range chosen {
		if err := try(i); err != nil {
			return err
		}
	}
	for _, i := range fit {
		if !taken[i] {
			if err := try(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// allocate matches candidate i for now, remembering a job it placed.
func (p *packRun) allocate(i int) (*match.Result, error) {
	c := p.cands[i]
	res, err := p.q.m.MatchRequest(match.Allocate, p.q.request(c.e), c.e.g.ID, p.now)
	if err == nil && res.Status == match.Allocated {
		p.placed = append(p.placed, i)
	}
	return res, err
}

// count records candidate i as started with res: held on its nodes and
// decided Running.
func (p *packRun) count(i int, res *match.Result) {
	c := p.cands[i]
	p.q.holding(c.e, res.Slots, res.Nodes, 1)
	p.counted[i] = res.Slots
	p.out[i] = Decision{Group: c.e.g, State: Running, At: res.At, Nodes: res.Nodes, Reason: res.Reason}
}

// release cancels candidate i's job. Unless the matcher still holds it,
// the run forgets it, and the queue no longer counts it as held.
func (p *packRun) release(i int) error {
	c := p.cands[i]
	gone, err := p.q.cancel(c.e.g.ID)
	if !gone {
		return fmt.Errorf("queue: packing: cancel group %d: %w", c.e.g.ID, err)
	}
	p.placed = slices.DeleteFunc(p.placed, func(x int) bool { return x == i })
	if slots, ok := p.counted[i]; ok {
		p.q.holding(c.e, slots, nil, -1)
		delete(p.counted, i)
	}
	return nil
}

// abandon undoes a run that failed: every job it placed is cancelled and
// every candidate is pending again, as before the run. A job the matcher
// does not give back runs: the queue must know what the matcher holds.
// Shortfalls noted during the run may have been judged beside jobs now
// cancelled, so they are forgotten.
func (p *packRun) abandon() error {
	var errs []error
	for k := len(p.placed) - 1; k >= 0; k-- {
		if err := p.release(p.placed[k]); err != nil {
			errs = append(errs, err)
		}
	}
	for i, c := range p.cands {
		c.e.short = shortfall{at: -1}
		if !slices.Contains(p.placed, i) {
			p.out[i] = Decision{Group: c.e.g, State: Pending, Reason: c.e.reason}
			continue
		}
		info, _ := p.q.m.Info(c.e.g.ID)
		if _, ok := p.counted[i]; !ok {
			p.q.holding(c.e, info.Slots, info.Nodes, 1)
			p.counted[i] = info.Slots
		}
		p.out[i] = Decision{Group: c.e.g, State: Running, At: info.At, Nodes: info.Nodes}
	}
	return errors.Join(errs...)
}

// bestFill searches the sets of fitting candidates (indexes into cands,
// in queue order) for the one with the largest summed share, within the
// packing budget, and returns it in queue order. The matcher is left as
// it was found, also when the search fails, unless a cancel fails: the
// job is then among those placed, for abandon.
func (p *packRun) bestFill(fit []int) ([]int, error) {
	const eps = 1e-9
	q, cands := p.q, p.cands
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
			res, err = q.m.FitsRequest(q.request(c.e), c.e.g.ID, p.now)
		} else {
			res, err = p.allocate(fit[k])
		}
		if err != nil {
			return err
		}
		if res.Status == match.Allocated {
			cur = append(cur, fit[k])
			err := dfs(k+1, share+c.share)
			cur = cur[:len(cur)-1]
			if !last {
				if cerr := p.release(fit[k]); cerr != nil {
					return errors.Join(err, fmt.Errorf("packing search: %w", cerr))
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
