package queue

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/match"
)

// Policy names a queueing policy.
type Policy string

const (
	FCFS         Policy = "fcfs"
	Easy         Policy = "easy"
	Hybrid       Policy = "hybrid"
	Conservative Policy = "conservative"
)

// Policies lists the known policies.
func Policies() []Policy { return []Policy{FCFS, Easy, Hybrid, Conservative} }

// Defaults from Fluxion's qmanager.
const (
	DefaultQueueDepth       = 32
	DefaultReservationDepth = 64
	maxDepth                = 1_000_000
)

// Config selects the policy and its depths. Zero depths take the defaults.
type Config struct {
	Policy Policy
	// QueueDepth bounds the pending groups considered per loop.
	QueueDepth int
	// ReservationDepth bounds the groups holding reservations (hybrid only;
	// easy is 1, conservative is QueueDepth).
	ReservationDepth int
	// Packing: of the groups a loop may only start now (once it may make
	// no more reservations), start the set that fills the most of the
	// cluster instead of the first that fit (packing.go). It changes
	// nothing under fcfs, where nothing passes a waiting group, or under
	// conservative, where every group may reserve.
	Packing bool
	// PackingBudget bounds the matches of one packing search; 0 means
	// DefaultPackingBudget.
	PackingBudget int
}

// Validate checks a configuration and fills defaults.
func (c *Config) Validate() error {
	if c.Policy == "" {
		c.Policy = FCFS
	}
	if !slices.Contains(Policies(), c.Policy) {
		names := make([]string, 0, 4)
		for _, p := range Policies() {
			names = append(names, string(p))
		}
		return fmt.Errorf("queue: unknown policy %q (known: %s)", c.Policy, strings.Join(names, ", "))
	}
	if c.QueueDepth == 0 {
		c.QueueDepth = DefaultQueueDepth
	}
	if c.ReservationDepth == 0 {
		c.ReservationDepth = DefaultReservationDepth
	}
	if c.PackingBudget == 0 {
		c.PackingBudget = DefaultPackingBudget
	}
	if c.PackingBudget < 1 || c.PackingBudget > maxDepth {
		return fmt.Errorf("queue: packing budget %d outside 1..%d", c.PackingBudget, maxDepth)
	}
	if c.QueueDepth < 1 || c.QueueDepth > maxDepth {
		return fmt.Errorf("queue: queue-depth %d outside 1..%d", c.QueueDepth, maxDepth)
	}
	if c.ReservationDepth < 1 || c.ReservationDepth > maxDepth {
		return fmt.Errorf("queue: reservation-depth %d outside 1..%d", c.ReservationDepth, maxDepth)
	}
	return nil
}

// reservationDepth is how many groups may hold reservations in one loop.
func (c *Config) reservationDepth() int {
	switch c.Policy {
	case Easy:
		return 1
	case Hybrid:
		return c.ReservationDepth
	case Conservative:
		return c.QueueDepth
	}
	return 0
}

// Group is a pod group waiting to be placed.
type Group struct {
	// ID is unique among live groups; it is also the matcher's job id.
	ID       int64
	Name     string
	Priority int64
	Submit   int64
	Jobspec  *jobspec.Jobspec
	// NotBefore, when later than the loop's time, keeps the group from
	// starting until then while it keeps its place in line: it may hold a
	// reservation at NotBefore or later, which groups behind it must not
	// delay, and under fcfs nothing behind it starts. A scheduler holding
	// a group off for a moment (a node turned it away) uses it, so the
	// pause does not let later groups take what the group was waiting for.
	NotBefore int64
}

// State is where a group stands.
type State uint8

const (
	Pending State = iota + 1
	Reserved
	Blocked
	Running
	Rejected
)

var stateNames = [...]string{"", "pending", "reserved", "blocked", "running", "rejected"}

func (s State) String() string {
	if int(s) < len(stateNames) && s != 0 {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Decision reports what one loop did with one group.
type Decision struct {
	Group *Group
	State State
	// At is the start time: now for Running, the reservation for Reserved.
	At    int64
	Nodes []match.NodeUsage
	// Reason explains Pending, Blocked and Rejected.
	Reason string
}

type entry struct {
	g      *Group
	state  State
	at     int64
	reason string
	// busyGen is the generation at which an allocate-now last failed; while
	// nothing is freed the answer cannot change, so the match is skipped.
	busyGen uint64
	// share is match.Matcher.Share of the jobspec (packing weighs by it).
	share float64
	// slotShapes is the jobspec read as plain slots (label -> shape), nil
	// when it is something else; short what the last failed allocate fell
	// short of (shortfall.go).
	slotShapes map[string]slotShape
	short      shortfall
	// req is the jobspec compiled for the matcher (request.go).
	req *match.Request
}

// newEntry returns the queue's record of a group.
func newEntry(g *Group, state State) *entry {
	e := &entry{g: g, state: state, short: shortfall{at: -1}}
	e.slotShapes, _ = slotsOf(g.Jobspec)
	return e
}

// Manager is the queue over one matcher. Not safe for concurrent use.
type Manager struct {
	m       engine
	cfg     Config
	pending []*entry // sorted by priority desc, submit asc, id asc
	blocked []*entry
	running map[int64]*entry
	byID    map[int64]*entry
	// reserved lists groups holding a reservation from the last loop.
	reserved []*entry
	// gen counts changes that free resources (Complete, Remove,
	// ResourcesChanged). firstNew is the lowest queue position a Submit
	// took since the last loop: entries before it saw exactly the same
	// queue and state then as now.
	gen      uint64
	loopGen  uint64
	firstNew int
	// Skipped counts matches avoided because they could not have changed.
	Skipped int64
	// ShortfallSkips counts the matches among them avoided because less
	// than the group fell short of was freed (shortfall.go).
	ShortfallSkips int64
	// PackingSearches counts loops that searched for the best fill.
	PackingSearches int64

	// log holds what was freed, event by event, node by node; shortfalls
	// recorded before barrier are void (shortfall.go). dropped are the
	// reservations given up since the last loop.
	log     [][]freedNode
	barrier int
	dropped []heldReservation
	// used is what running groups hold per node vertex, caps what each
	// node holds; unknown nodes hold a job the queue cannot weigh.
	used    map[int32]units
	caps    map[int32]units
	unknown map[int32]bool
	// out is the decisions buffer, reused by every loop; cands and
	// packed are packing's (packing.go), reused likewise: with thousands
	// waiting, allocating them every loop made much of the garbage.
	out    []Decision
	cands  []candidate
	packed []Decision
	// matchAll turns both skip rules off (tests compare against it).
	matchAll bool
}

// New returns a manager placing groups on m.
func New(m *match.Matcher, cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Manager{m: m, cfg: cfg, running: map[int64]*entry{}, byID: map[int64]*entry{},
		used: map[int32]units{}, caps: map[int32]units{}, unknown: map[int32]bool{}}, nil
}

// Config returns the validated configuration.
func (q *Manager) Config() Config { return q.cfg }

func less(a, b *entry) int {
	if c := cmp.Compare(b.g.Priority, a.g.Priority); c != 0 {
		return c
	}
	if c := cmp.Compare(a.g.Submit, b.g.Submit); c != 0 {
		return c
	}
	return cmp.Compare(a.g.ID, b.g.ID)
}

// Submit queues a group. A group the graph can never hold is rejected at
// once and never enters the queue.
func (q *Manager) Submit(g *Group) (Decision, error) {
	if g == nil || g.Jobspec == nil {
		return Decision{}, fmt.Errorf("queue: group without a jobspec")
	}
	if _, dup := q.byID[g.ID]; dup {
		return Decision{}, fmt.Errorf("queue: group id %d already queued", g.ID)
	}
	res, err := q.m.Match(match.Satisfiability, g.Jobspec, g.ID, g.Submit)
	if err != nil {
		return Decision{}, err
	}
	if res.Status != match.Satisfiable {
		return Decision{Group: g, State: Rejected, Reason: res.Status.String() + ": " + res.Reason}, nil
	}
	e := newEntry(g, Pending)
	if q.cfg.Packing {
		e.share = q.m.Share(g.Jobspec)
	}
	i, _ := slices.BinarySearchFunc(q.pending, e, less)
	q.pending = slices.Insert(q.pending, i, e)
	q.firstNew = min(q.firstNew, i)
	q.byID[g.ID] = e
	return Decision{Group: g, State: Pending}, nil
}

// settle records what a match decided for a group and returns the
// decision: started, reserved, waiting (a failed allocate), blocked (no
// time works under the current state) or rejected.
func (q *Manager) settle(e *entry, op match.Op, res *match.Result) (Decision, error) {
	d := Decision{Group: e.g, At: res.At, Nodes: res.Nodes, Reason: res.Reason}
	switch res.Status {
	case match.Allocated:
		e.state, e.at = Running, res.At
		q.running[e.g.ID] = e
		q.holding(e, res.Slots, res.Nodes, 1)
	case match.Reserved:
		e.state, e.at = Reserved, res.At
		q.reserved = append(q.reserved, e)
	case match.Busy:
		if op == match.AllocateOrElseReserve {
			// No time works under the current state: blocked until
			// resources change.
			e.state, e.reason = Blocked, res.Reason
			q.blocked = append(q.blocked, e)
		} else {
			e.state, e.reason, e.busyGen = Pending, res.Reason, q.gen
			q.noteShort(e, res.Explain)
		}
	case match.Unsatisfiable, match.Invalid:
		e.state, e.reason = Rejected, res.Status.String()+": "+res.Reason
		delete(q.byID, e.g.ID)
		d.Reason = e.reason
	default:
		return Decision{}, fmt.Errorf("queue: group %d: unexpected status %s", e.g.ID, res.Status)
	}
	d.State = e.state
	return d, nil
}

// holdOff decides for a group that may not start before its NotBefore: a
// reservation at NotBefore or later when the loop may still make one,
// otherwise it waits.
func (q *Manager) holdOff(e *entry, now int64, mayReserve bool) (Decision, error) {
	d := Decision{Group: e.g, State: Pending, Reason: fmt.Sprintf("held until %d", e.g.NotBefore)}
	if !mayReserve {
		// No reason is recorded: the loop's "still cannot start" shortcut
		// must not outlive NotBefore.
		e.state, e.reason = Pending, ""
		return d, nil
	}
	res, err := q.m.ReserveFrom(e.g.Jobspec, e.g.ID, now, e.g.NotBefore)
	if err != nil {
		return Decision{}, err
	}
	switch res.Status {
	case match.Reserved:
		e.state, e.at = Reserved, res.At
		q.reserved = append(q.reserved, e)
		return Decision{Group: e.g, State: Reserved, At: res.At, Nodes: res.Nodes, Reason: res.Reason}, nil
	case match.Busy:
		e.state, e.reason = Blocked, res.Reason
		q.blocked = append(q.blocked, e)
		return Decision{Group: e.g, State: Blocked, Reason: res.Reason}, nil
	case match.Unsatisfiable, match.Invalid:
		e.state, e.reason = Rejected, res.Status.String()+": "+res.Reason
		delete(q.byID, e.g.ID)
		return Decision{Group: e.g, State: Rejected, Reason: e.reason}, nil
	}
	return Decision{}, fmt.Errorf("queue: group %d: unexpected status %s", e.g.ID, res.Status)
}

// Complete releases a running group's allocation (the group finished, or
// was deleted). If the matcher keeps the allocation, the group keeps
// running and the error says why.
func (q *Manager) Complete(id int64) error {
	e, ok := q.running[id]
	if !ok {
		return fmt.Errorf("queue: group %d is not running", id)
	}
	info, held := q.m.Info(id)
	gone, err := q.cancel(id)
	if !gone {
		return fmt.Errorf("queue: release group %d: %w", id, err)
	}
	if held {
		q.logFreed(e, info)
	} else {
		q.clearShortfalls()
	}
	delete(q.running, id)
	delete(q.byID, id)
	q.freed()
	return err
}

// Release frees what a running group holds on the given node vertices
// and keeps the rest running: some of its pods went (evicted alone) and
// their room is free again. It reports whether the group held nothing
// else, in which case it is gone as Complete leaves it. On an error the
// matcher and the queue keep the group as it was.
func (q *Manager) Release(id int64, vertices []int32) (gone bool, err error) {
	e, ok := q.running[id]
	if !ok {
		return false, fmt.Errorf("queue: group %d is not running", id)
	}
	before, held := q.m.Info(id)
	gone, err = q.m.PartialCancel(id, vertices)
	if err != nil {
		return false, fmt.Errorf("queue: release part of group %d: %w", id, err)
	}
	switch {
	case gone:
		if held {
			q.logFreed(e, before)
		}
		delete(q.running, id)
		delete(q.byID, id)
	case held:
		after, _ := q.m.Info(id)
		q.holding(e, before.Slots, before.Nodes, -1)
		q.holding(e, after.Slots, after.Nodes, 1)
	}
	q.freed()
	q.clearShortfalls()
	return gone, nil
}

// Remove drops a group wherever it is, releasing what it holds.
func (q *Manager) Remove(id int64) error {
	e, ok := q.byID[id]
	if !ok {
		return fmt.Errorf("queue: no group %d", id)
	}
	switch e.state {
	case Running:
		return q.Complete(id)
	case Reserved:
		info, held := q.m.Info(id)
		gone, err := q.cancel(id)
		if !gone {
			return fmt.Errorf("queue: cancel reservation of group %d: %w", id, err)
		}
		if held {
			q.logUnblocked(e, info.Slots)
		}
		q.reserved = slices.DeleteFunc(q.reserved, func(x *entry) bool { return x == e })
		q.forget(e)
		return err
	}
	q.forget(e)
	return nil
}

// forget takes a group that holds nothing off every list.
func (q *Manager) forget(e *entry) {
	q.pending = slices.DeleteFunc(q.pending, func(x *entry) bool { return x == e })
	q.blocked = slices.DeleteFunc(q.blocked, func(x *entry) bool { return x == e })
	delete(q.byID, e.g.ID)
	q.freed()
}

// ResourcesChanged returns blocked groups to the queue (a node came back,
// capacity was added) and rejects waiting groups the graph can no longer
// hold at all (capacity was removed). It returns the rejections, also
// those made before an error stopped it: the groups not judged yet wait
// as they were.
func (q *Manager) ResourcesChanged() ([]Decision, error) {
	q.freed()
	q.clearShortfalls()
	var out []Decision
	var keep []*entry
	var errs []error
	for i, e := range q.pending {
		res, err := q.m.Match(match.Satisfiability, e.g.Jobspec, e.g.ID, e.g.Submit)
		if err != nil {
			q.pending = append(keep, q.pending[i:]...)
			return out, errors.Join(append(errs, err)...)
		}
		if res.Status == match.Satisfiable {
			keep = append(keep, e)
			continue
		}
		if e.state == Reserved {
			gone, err := q.cancel(e.g.ID)
			if !gone {
				q.pending = append(keep, q.pending[i:]...)
				return out, errors.Join(append(errs, fmt.Errorf("queue: cancel reservation of group %d: %w", e.g.ID, err))...)
			}
			if err != nil {
				errs = append(errs, err) // it held nothing: rejected all the same
			}
			q.reserved = slices.DeleteFunc(q.reserved, func(x *entry) bool { return x == e })
		}
		e.state, e.reason = Rejected, res.Status.String()+": "+res.Reason
		delete(q.byID, e.g.ID)
		out = append(out, Decision{Group: e.g, State: Rejected, Reason: e.reason})
	}
	q.pending = keep
	return out, errors.Join(errs...)
}

// freed records that resources were released: answers may change, and
// blocked groups get another try (a group blocked because the jobs holding
// its resources ran past their planned end can start once they are gone).
func (q *Manager) freed() {
	q.gen++
	for _, e := range q.blocked {
		e.state = Pending
		i, _ := slices.BinarySearchFunc(q.pending, e, less)
		q.pending = slices.Insert(q.pending, i, e)
		q.firstNew = min(q.firstNew, i)
	}
	q.blocked = q.blocked[:0]
}

// Pending returns the groups waiting (pending or reserved), in queue order.
func (q *Manager) Pending() []*Group {
	out := make([]*Group, len(q.pending))
	for i, e := range q.pending {
		out[i] = e.g
	}
	return out
}

// Blocked returns the groups on the blocked list.
func (q *Manager) Blocked() []*Group {
	out := make([]*Group, len(q.blocked))
	for i, e := range q.blocked {
		out[i] = e.g
	}
	return out
}

// Running returns the ids of running groups in ascending order.
func (q *Manager) Running() []int64 {
	ids := make([]int64, 0, len(q.running))
	for id := range q.running {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// StateOf returns a group's state and, for pending and blocked groups, why.
func (q *Manager) StateOf(id int64) (State, string, bool) {
	e, ok := q.byID[id]
	if !ok {
		return 0, "", false
	}
	return e.state, e.reason, true
}

// Extend lengthens a running group's allocation (it ran past its declared
// duration and still holds its resources). Reservations are planned on
// the old end, so they are all dropped and recomputed by the next loop.
func (q *Manager) Extend(id, duration int64) error {
	if _, ok := q.running[id]; !ok {
		return fmt.Errorf("queue: group %d is not running", id)
	}
	_, err := q.releaseReservations(0, 0)
	q.gen++
	if err != nil {
		return err
	}
	return q.m.Extend(id, duration)
}

// SetNodeStatus marks a node vertex up or down. A node coming up frees
// resources (answers may change, blocked groups get another try); a node
// going down takes them away from future matches (running groups keep
// what they hold) and has the next loop recompute every reservation.
func (q *Manager) SetNodeStatus(v int32, up bool) error {
	if !up {
		// Nothing is freed, but reservations on the node must move: the
		// next loop recomputes them rather than keep them.
		q.gen++
		return q.m.MarkDown(v)
	}
	if err := q.m.MarkUp(v); err != nil {
		return err
	}
	q.freed()
	q.clearShortfalls()
	return nil
}

// Freed tells the queue that resources it does not manage were released
// (a pod placed outside the queue ended): answers may change, and blocked
// groups get another try.
func (q *Manager) Freed() {
	q.freed()
	q.clearShortfalls()
}

// drop remembers a reservation about to be given up (reconcile).
func (q *Manager) drop(e *entry) {
	if info, ok := q.m.Info(e.g.ID); ok {
		q.dropped = append(q.dropped, heldReservation{e: e, info: info})
	} else {
		q.clearShortfalls()
	}
}

// Place records a group whose pods already sit on known nodes (replayed
// after a restart or a graph rebuild) as running, committing it with
// match.Matcher.Place. A Busy or Invalid answer is returned as a decision
// and nothing is recorded.
func (q *Manager) Place(g *Group, slotNodes []int32, now int64) (Decision, error) {
	if g == nil || g.Jobspec == nil {
		return Decision{}, fmt.Errorf("queue: group without a jobspec")
	}
	if _, dup := q.byID[g.ID]; dup {
		return Decision{}, fmt.Errorf("queue: group id %d already queued", g.ID)
	}
	res, err := q.m.Place(g.Jobspec, g.ID, now, slotNodes)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Group: g, At: res.At, Nodes: res.Nodes, Reason: res.Reason}
	if res.Status != match.Allocated {
		d.State = Pending
		d.Reason = res.Status.String() + ": " + res.Reason
		return d, nil
	}
	e := newEntry(g, Running)
	e.at = res.At
	q.holding(e, res.Slots, res.Nodes, 1)
	q.running[g.ID] = e
	q.byID[g.ID] = e
	d.State = Running
	return d, nil
}

// Waiting counts the groups pending, reserved or blocked.
func (q *Manager) Waiting() int { return len(q.pending) + len(q.blocked) }
