package queue

import (
	"errors"
	"fmt"
	"slices"

	"github.com/fluence-sched/fluence/pkg/match"
)

// Schedule runs one loop at time now and returns a decision for every
// group it considered, in queue order.
//
// The loop has Fluxion's semantics: reservations are recomputed and every
// considered group is matched. Where nothing was freed since the last loop
// and no group was queued ahead, a group's answer is known to be the same
// (the engine is deterministic, the state is the same, and a later window
// only meets more of it), so the match is skipped: a group that could not
// start still cannot, and a reservation still in the future stands. So is
// the match of a group that fell short of more than was freed since
// (shortfall.go).
//
// An error ends the loop early with the queue and the matcher in
// agreement (Check): every step either completes or is undone, groups
// the loop started stay running, the rest stay where they were, and the
// decisions returned say what the loop did up to there.
//
// The decisions are valid until the next call, which reuses their slice.
func (q *Manager) Schedule(now int64) ([]Decision, error) {
	// A prefix of the queue is unchanged when no resources were freed and
	// nothing was queued into it; its reservations stand if still ahead.
	prefix := 0
	if q.gen == q.loopGen && !q.matchAll {
		prefix = min(q.firstNew, len(q.pending))
	}
	kept, err := q.releaseReservations(prefix, now)
	if err != nil {
		return nil, err
	}
	q.loopGen, q.firstNew = q.gen, len(q.pending)
	l := &loop{q: q, now: now, prefix: prefix, keptSet: kept, depth: q.cfg.reservationDepth(),
		packing: q.cfg.Packing && q.cfg.Policy != FCFS, out: q.out[:0], cands: q.cands[:0]}
	defer l.recycle()
	err = l.walk()
	if err == nil && len(l.cands) > 0 {
		err = l.pack()
	}
	l.finish()
	return l.out, err
}

// releaseReservations cancels the reservations the last loop made, but
// those in the unchanged prefix that are still ahead, which stand; it
// returns how many stand. A reservation the matcher still holds after a
// failed cancel stays recorded, and the error is returned once every
// other one was released.
func (q *Manager) releaseReservations(prefix int, now int64) (int, error) {
	var kept []*entry
	var errs []error
	for _, e := range q.reserved {
		if pos := slices.Index(q.pending, e); pos >= 0 && pos < prefix && e.at > now {
			kept = append(kept, e)
			continue
		}
		if err := q.unreserve(e); err != nil {
			errs = append(errs, err)
		}
		if e.state == Reserved {
			kept = append(kept, e)
		}
	}
	q.reserved = kept
	return len(kept), errors.Join(errs...)
}

// unreserve cancels a group's reservation, remembering it for reconcile;
// the group is pending again unless the matcher still holds the
// reservation. The caller takes it off the reservation list.
func (q *Manager) unreserve(e *entry) error {
	q.drop(e)
	gone, err := q.cancel(e.g.ID)
	if gone {
		e.state = Pending
	}
	if err != nil {
		return fmt.Errorf("queue: cancel reservation of group %d: %w", e.g.ID, err)
	}
	return nil
}

// loop is one Schedule call's walk over the queue.
type loop struct {
	q       *Manager
	now     int64
	prefix  int // unchanged since the last loop
	keptSet int // reservations that stand from the last loop
	depth   int // reservations the loop may hold
	// packing: the groups the loop may only start now are decided
	// together after the walk (packing.go).
	packing bool

	out   []Decision
	cands []candidate
	// The walk keeps the entries that stay waiting by compacting them in
	// place (w <= pos): with thousands waiting, copying the whole queue
	// every loop was most of the loop's cost. Entries past pos are moved
	// up once, by finish.
	w, pos       int
	reservations int
	reconciled   bool
	stop         bool
}

// recycle hands the buffers back to the manager for the next loop.
func (l *loop) recycle() {
	l.q.out = l.out[:0]
	clear(l.cands)
	l.q.cands = l.cands[:0]
}

// keep leaves e waiting at the next kept position.
func (l *loop) keep(e *entry) {
	l.q.pending[l.w] = e
	l.w++
}

// finish closes the queue over the entries the walk did not reach.
func (l *loop) finish() {
	l.q.pending = append(l.q.pending[:l.w], l.q.pending[l.pos:]...)
}

// walk decides the groups in queue order, up to queue-depth. On an
// error the entry at pos is not kept yet, so finish leaves it waiting.
func (l *loop) walk() error {
	for considered := 0; l.pos < len(l.q.pending) && !l.stop && considered < l.q.cfg.QueueDepth; l.pos++ {
		considered++
		if err := l.step(l.q.pending[l.pos]); err != nil {
			return err
		}
	}
	return nil
}

// step decides one group.
func (l *loop) step(e *entry) error {
	q := l.q
	if l.pos < l.prefix && e.state == Reserved && l.keptSet > 0 {
		l.reservations++
		l.keep(e)
		l.out = append(l.out, Decision{Group: e.g, State: Reserved, At: e.at})
		q.Skipped++
		return nil
	}
	if e.g.NotBefore > l.now {
		d, err := q.holdOff(e, l.now, l.reservations < l.depth)
		if err != nil {
			return err
		}
		l.record(e, d)
		// Under fcfs nothing passes a held group, even one rejected now.
		l.stop = l.stop || (d.State == Rejected && q.cfg.Policy == FCFS)
		return nil
	}
	// Satisfiability was settled at Submit (and again by
	// ResourcesChanged), so a failure here only means "not now": the
	// plain allocate spares a second, state-free selection per group.
	op := match.Allocate
	if l.reservations < l.depth {
		op = match.AllocateOrElseReserve
	}
	if op == match.Allocate && !l.reconciled {
		// Every reservation this loop makes is made: weigh those given
		// up against what waits (shortfall.go).
		q.reconcile()
		l.reconciled = true
	}
	known := l.pos < l.prefix && e.state == Pending && e.busyGen == q.gen && e.reason != ""
	if op == match.Allocate && !known && e.state == Pending && e.reason != "" && !q.matchAll && !q.mayFit(e) {
		known = true // nothing it fell short of was freed
		q.ShortfallSkips++
	}
	if l.packing && op == match.Allocate {
		// Decided with the others the loop may only start now.
		l.cands = append(l.cands, candidate{e: e, out: len(l.out), share: e.share, busy: known})
		l.keep(e)
		l.out = append(l.out, Decision{Group: e.g, State: Pending, Reason: e.reason})
		if known {
			q.Skipped++
		}
		return nil
	}
	if op == match.Allocate && known {
		l.record(e, Decision{Group: e.g, State: Pending, Reason: e.reason})
		q.Skipped++
		return nil
	}
	res, err := q.m.MatchRequest(op, q.request(e), e.g.ID, l.now)
	if err != nil {
		return err
	}
	d, err := q.settle(e, op, res)
	if err != nil {
		return err
	}
	l.record(e, d)
	return nil
}

// record counts a decision made for e in the loop and keeps e waiting
// unless it started, was blocked or was rejected; under fcfs a group
// that cannot start now ends the loop.
func (l *loop) record(e *entry, d Decision) {
	if d.State == Reserved {
		l.reservations++
	}
	if d.State == Reserved || d.State == Pending {
		l.keep(e)
	}
	if (d.State == Pending || d.State == Blocked) && l.q.cfg.Policy == FCFS {
		l.stop = true
	}
	l.out = append(l.out, d)
}

// pack starts the best-filling set of the candidates; those it started
// or rejected leave the queue.
func (l *loop) pack() error {
	err := l.q.decidePacked(l.cands, l.out, l.now)
	n := 0
	for _, e := range l.q.pending[:l.w] {
		if e.state == Pending || e.state == Reserved {
			l.q.pending[n] = e
			n++
		}
	}
	l.w = n
	return err
}
