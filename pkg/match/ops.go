package match

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// Match runs one operation for job id at time now. Failures to place are
// reported in the Result (Busy, Unsatisfiable, Invalid); the error is for
// misuse (a job id already in use) and internal faults.
func (m *Matcher) Match(op Op, js *jobspec.Jobspec, id, now int64) (*Result, error) {
	return m.match(op, m.Compile(js), id, now, false)
}

// Request is a jobspec checked and compiled for one matcher. A queue
// matches a waiting group at every loop; validating and compiling its
// jobspec each time was a sixth of what a match cost. The jobspec must
// not change while the Request is in use.
type Request struct {
	m   *Matcher
	js  *jobspec.Jobspec
	r   *request
	bad string // why the jobspec is unusable (Invalid), if it is
}

// Compile checks and compiles a jobspec for MatchRequest and FitsRequest.
// An unusable jobspec gives a Request whose every match is Invalid.
func (m *Matcher) Compile(js *jobspec.Jobspec) *Request {
	if js == nil {
		return &Request{m: m, bad: "no jobspec"}
	}
	if err := jobspec.Validate(js); err != nil {
		return &Request{m: m, js: js, bad: err.Error()}
	}
	return &Request{m: m, js: js, r: m.compile(js)}
}

// MatchRequest is Match with a compiled request.
func (m *Matcher) MatchRequest(op Op, rq *Request, id, now int64) (*Result, error) {
	return m.match(op, rq, id, now, false)
}

// FitsRequest is Fits with a compiled request.
func (m *Matcher) FitsRequest(rq *Request, id, now int64) (*Result, error) {
	return m.match(Allocate, rq, id, now, true)
}

// Fits answers what Match(Allocate, ...) would, and commits nothing: an
// Allocated result holds nothing (no nodes, no slots, no job to cancel).
// A queue that only needs to know whether a group could start now (to
// choose among several) uses it instead of a match and a cancel, which
// would write and remove every span of the placement.
func (m *Matcher) Fits(js *jobspec.Jobspec, id, now int64) (*Result, error) {
	return m.match(Allocate, m.Compile(js), id, now, true)
}

func (m *Matcher) match(op Op, rq *Request, id, now int64, dry bool) (*Result, error) {
	if op < Allocate || op > Satisfiability {
		return nil, fmt.Errorf("match: unknown operation %d", op)
	}
	r, dur, bad, err := m.prepareRequest(rq, id, now, op != Satisfiability)
	if bad != nil || err != nil {
		return bad, err
	}
	if op == Satisfiability {
		if ok, ex := m.satisfiable(r); !ok {
			return failed(Unsatisfiable, ex), nil
		}
		return &Result{Status: Satisfiable}, nil
	}
	s := &m.sel
	if s.run(r, now, now, dur, false) {
		if dry {
			m.stats.VisitedTotal += s.ex.Visited
			return &Result{Status: Allocated, JobID: id, At: now, Duration: dur}, nil
		}
		return m.place(id, now, dur, false)
	}
	m.stats.MatchFailed++
	m.stats.VisitedTotal += s.ex.Visited
	busy := s.ex.clone()
	if op == Allocate {
		return failed(Busy, busy), nil
	}
	if op == AllocateOrElseReserve {
		if at, ok := m.findReservation(r, now, now, dur); ok {
			return m.place(id, at, m.reservedDuration(rq.js, at, dur), true)
		}
	}
	if ok, ex := m.satisfiable(r); !ok {
		return failed(Unsatisfiable, ex), nil
	}
	return failed(Busy, busy), nil
}

// prepare validates a request and compiles it: an Invalid result for an
// unusable request, an error for misuse (a job id in use, when newJob), else
// the compiled request and its duration (0 means until the horizon).
func (m *Matcher) prepare(js *jobspec.Jobspec, id, now int64, newJob bool) (*request, int64, *Result, error) {
	return m.prepareRequest(m.Compile(js), id, now, newJob)
}

// prepareRequest is prepare for a compiled request.
func (m *Matcher) prepareRequest(rq *Request, id, now int64, newJob bool) (*request, int64, *Result, error) {
	m.ops++
	if rq == nil || rq.m != m {
		return nil, 0, nil, fmt.Errorf("match: job %d: no request, or one compiled for another matcher", id)
	}
	if rq.bad != "" {
		return nil, 0, invalid(rq.bad), nil
	}
	js := rq.js
	if now < 0 || now >= Horizon {
		return nil, 0, invalid(fmt.Sprintf("time %d is outside [0, %d)", now, Horizon)), nil
	}
	dur := js.Duration
	if dur == 0 {
		dur = Horizon - now
	}
	if dur > Horizon-now {
		return nil, 0, invalid(fmt.Sprintf("duration %d reaches past the scheduling horizon (%d)", dur, Horizon)), nil
	}
	if _, dup := m.jobs[id]; dup && newJob {
		return nil, 0, nil, fmt.Errorf("match: job %d already exists", id)
	}
	return rq.r, dur, nil, nil
}

// reservedDuration keeps an unlimited job unlimited when it starts later.
func (m *Matcher) reservedDuration(js *jobspec.Jobspec, at, dur int64) int64 {
	if js.Duration == 0 {
		return Horizon - at
	}
	return dur
}

func (m *Matcher) place(id, at, dur int64, reserved bool) (*Result, error) {
	s := &m.sel
	m.stats.VisitedTotal += s.ex.Visited
	s.wholeNodes()
	j, err := m.commit(id, at, dur, reserved, s.claims)
	if err != nil {
		return nil, err
	}
	j.slots = s.slotPlacements()
	m.jobs[id] = j
	m.stats.MatchOK++
	st := Allocated
	if reserved {
		st = Reserved
		m.stats.Reservations++
	}
	return &Result{Status: st, JobID: id, At: at, Duration: dur, Nodes: m.nodeUsage(j), Slots: j.slots}, nil
}

// ReserveFrom reserves job id at the earliest time not before from (a
// moment after now): the job may not start sooner, though it could. It is
// recorded as a reservation, so until it starts the immediate allocations
// around it are judged as they would be without it. Busy when no time
// works under the current state, Unsatisfiable when none ever can.
func (m *Matcher) ReserveFrom(js *jobspec.Jobspec, id, now, from int64) (*Result, error) {
	if from <= now {
		return nil, fmt.Errorf("match: ReserveFrom at %d is not after now (%d); use Match", from, now)
	}
	r, dur, bad, err := m.prepare(js, id, from, true)
	if bad != nil || err != nil {
		return bad, err
	}
	s := &m.sel
	at, ok := from, s.run(r, now, from, dur, false)
	if !ok {
		at, ok = m.findReservation(r, now, from, dur)
	}
	if ok {
		return m.place(id, at, m.reservedDuration(js, at, dur), true)
	}
	m.stats.MatchFailed++
	busy := s.ex.clone()
	if ok, ex := m.satisfiable(r); !ok {
		return failed(Unsatisfiable, ex), nil
	}
	return failed(Busy, busy), nil
}

// findReservation tries, in time order, every moment after from at which
// the graph's state changes and the root aggregate could hold the request,
// and returns the first one where a full selection succeeds.
func (m *Matcher) findReservation(r *request, now, from, dur int64) (int64, bool) {
	root := m.g.Root()
	if m.inner[root] < 0 || len(r.missing) > 0 {
		return 0, false
	}
	a := m.agg[m.inner[root]]
	if a == nil {
		return 0, false // nothing will ever be released: later looks like now
	}
	var bound *probeBound
	if r.count != nil && !m.sc.off {
		bound = &m.probes
		bound.start(m, r.count)
	}
	// skipped is the last probe the bound passed over, if no selection ran
	// after it: a failed search leaves the last probe's explanation in the
	// selector (ReserveFrom reports it), so that probe is selected after
	// all.
	skipped, skippedOK := int64(0), false
	fail := func() (int64, bool) {
		if skippedOK {
			m.sel.run(r, now, skipped, dur, false)
		}
		return 0, false
	}
	t := from
	for {
		next, ok := a.NextChange(t)
		if !ok {
			return fail()
		}
		if Horizon-next < dur {
			return fail()
		}
		fit, ok := a.EarliestFit(next, dur, r.need)
		if !ok || Horizon-fit < dur {
			return fail()
		}
		m.stats.ReserveProbes++
		if bound != nil && bound.slotsAt(fit) < r.top[0].count.Min {
			// Too few slots whatever the selection: no need to try.
			t, skipped, skippedOK = fit, fit, true
			continue
		}
		skippedOK = false
		m.sel.probe = bound
		ok = m.sel.run(r, now, fit, dur, false)
		m.sel.probe = nil
		if ok {
			return fit, true
		}
		t = fit
	}
}

// satisfiable runs the selection on the empty, all-up graph.
func (m *Matcher) satisfiable(r *request) (bool, *Explain) {
	s := &m.sel
	if s.run(r, 0, 0, 1, true) {
		return true, nil
	}
	return false, s.ex.clone()
}

func invalid(reason string) *Result {
	return &Result{Status: Invalid, Reason: reason}
}

func failed(st Status, ex *Explain) *Result {
	return &Result{Status: st, Reason: ex.String(), Explain: ex}
}

// Cancel releases a job's allocation or reservation.
func (m *Matcher) Cancel(id int64) error {
	j, ok := m.jobs[id]
	if !ok {
		return fmt.Errorf("match: no job %d", id)
	}
	m.release(j)
	delete(m.jobs, id)
	return nil
}

// PartialCancel releases what a job holds on the given nodes (vertices of
// any type; everything the job holds in their subtrees is released) and
// keeps the rest. It reports whether the job is now gone entirely.
func (m *Matcher) PartialCancel(id int64, vertices []int32) (bool, error) {
	j, ok := m.jobs[id]
	if !ok {
		return false, fmt.Errorf("match: no job %d", id)
	}
	for _, v := range vertices {
		if v < 0 || int(v) >= m.g.Len() {
			return false, fmt.Errorf("match: vertex %d out of range", v)
		}
	}
	keep := m.claimsOutside(j, vertices)
	if len(keep) == len(j.claims) {
		return false, nil
	}
	// Re-commit what remains: simpler than shrinking every ancestor's
	// span, and obviously equal to a job that only ever held the rest.
	m.release(j)
	if len(keep) == 0 {
		delete(m.jobs, id)
		return true, nil
	}
	nj, err := m.commit(j.ID, j.At, j.Duration, j.Reserved, keep)
	if err != nil {
		// The job keeps everything it held: a half-released job would
		// leave the engine's picture wrong.
		if err2 := m.apply(j); err2 != nil {
			return false, fmt.Errorf("match: job %d: partial cancel failed (%v) and restoring failed: %w", id, err, err2)
		}
		return false, err
	}
	for _, sl := range j.slots {
		if !slices.Contains(vertices, sl.Vertex) && !slices.ContainsFunc(vertices, func(v int32) bool { return m.g.IsAncestor(v, sl.Vertex) }) {
			nj.slots = append(nj.slots, sl)
		}
	}
	m.jobs[id] = nj
	return false, nil
}

// claimsOutside is what the job holds apart from the vertices: a claim
// on a vertex, in its subtree or above it goes with it.
func (m *Matcher) claimsOutside(j *Job, vertices []int32) []claim {
	var keep []claim
	for _, cl := range j.claims {
		released := slices.ContainsFunc(vertices, func(v int32) bool {
			return m.g.IsAncestor(v, cl.v) || m.g.IsAncestor(cl.v, v)
		})
		if !released {
			keep = append(keep, cl)
		}
	}
	return keep
}

// JobInfo describes a job.
type JobInfo struct {
	ID       int64
	Status   Status
	At       int64
	Duration int64
	Nodes    []NodeUsage
	Slots    []SlotPlacement
}

// Info returns a job's state.
func (m *Matcher) Info(id int64) (JobInfo, bool) {
	j, ok := m.jobs[id]
	if !ok {
		return JobInfo{}, false
	}
	st := Allocated
	if j.Reserved {
		st = Reserved
	}
	return JobInfo{ID: id, Status: st, At: j.At, Duration: j.Duration, Nodes: m.nodeUsage(j), Slots: j.slots}, true
}

// JobIDs lists the jobs held, in ascending order.
func (m *Matcher) JobIDs() []int64 {
	ids := make([]int64, 0, len(m.jobs))
	for id := range m.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// nodeUsage summarizes a job per node, in vertex order.
func (m *Matcher) nodeUsage(j *Job) []NodeUsage {
	g := m.g
	// The nodes are found through the commit scratch's stamps rather than
	// a map: this runs for every placement.
	u := &m.acc
	u.reset(m)
	// Size the result first: growing it claim by claim was most of the
	// garbage a placement made.
	// A shared claim above the nodes (the rack a job asked to be within)
	// takes nothing from it and is on no node.
	_, hasNodes := g.NodeType()
	above := func(cl claim) bool {
		return hasNodes && !cl.subtree && cl.amt == 0 && g.NodeOf(cl.v) == resource.None
	}
	distinct := 0
	for _, cl := range j.claims {
		if above(cl) {
			continue
		}
		n := g.NodeOf(cl.v)
		if n == resource.None {
			n = g.Root()
		}
		if u.stamp[n] != u.epoch {
			u.stamp[n] = u.epoch
			distinct++
		}
	}
	u.reset(m)
	var out []NodeUsage
	if distinct > 0 {
		out = make([]NodeUsage, 0, distinct)
	}
	get := func(v int32) *NodeUsage {
		n := g.NodeOf(v)
		if n == resource.None {
			n = g.Root()
		}
		if u.stamp[n] != u.epoch {
			u.stamp[n] = u.epoch
			u.index[n] = int32(len(out))
			out = append(out, NodeUsage{Vertex: n, Name: g.Vertex(n).DisplayName()})
		}
		return &out[u.index[n]]
	}
	count := func(u *NodeUsage, v int32, amt int64) {
		switch g.TypeName(g.Vertex(v).Type) {
		case "core":
			u.Core++
		case "gpu":
			u.GPU++
		case "memory":
			u.Memory += amt
		}
	}
	for _, cl := range j.claims {
		if above(cl) {
			continue
		}
		if cl.subtree {
			end := g.SubtreeEnd(cl.v)
			for v := cl.v; v < end; v++ {
				if g.NodeOf(v) == v {
					get(v).Whole = true
				}
				count(get(v), v, g.Vertex(v).Size)
			}
			continue
		}
		u := get(cl.v)
		if cl.amt > 0 || g.NodeOf(cl.v) != cl.v {
			count(u, cl.v, cl.amt)
		}
	}
	slices.SortFunc(out, func(a, b NodeUsage) int { return cmp.Compare(a.Vertex, b.Vertex) })
	return out
}

// Place commits a job whose pods are already on known nodes: the replay of
// recorded allocations after a restart, and the accounting of pods another
// scheduler bound. The jobspec's top level must be slots with fixed counts;
// slotNodes gives, for every slot in jobspec order (the order of
// Result.Slots), the node vertex it occupies. Vertex status and constraints
// are not consulted (the pods are there); free resources are: a slot that
// does not fit its node makes the result Busy, naming the slot and the
// node, and nothing is committed.
func (m *Matcher) Place(js *jobspec.Jobspec, id, now int64, slotNodes []int32) (*Result, error) {
	r, dur, bad, err := m.prepare(js, id, now, true)
	if bad != nil || err != nil {
		return bad, err
	}
	if len(r.missing) > 0 {
		return invalid("the graph has no " + strings.Join(r.missing, ", ")), nil
	}
	total := 0
	for _, q := range r.top {
		if !q.slot || !q.count.IsFixed() {
			return invalid("Place needs a jobspec whose top level is slots with fixed counts"), nil
		}
		total += int(q.count.Min)
	}
	if len(slotNodes) != total {
		return invalid(fmt.Sprintf("the jobspec has %d slots, %d nodes were given", total, len(slotNodes))), nil
	}
	for i, v := range slotNodes {
		if v < 0 || int(v) >= m.g.Len() || m.inner[v] < 0 {
			return invalid(fmt.Sprintf("slot %d: vertex %d is not an inner vertex of the graph", i, v)), nil
		}
	}
	s := &m.sel
	s.begin(r, now, now, dur, false, true)
	i := 0
	for _, q := range r.top {
		for range q.count.Min {
			v := slotNodes[i]
			if !s.placeSlot(v, q) {
				s.rollback(0)
				m.stats.MatchFailed++
				ex := &Explain{Short: []Shortfall{{Type: q.label, Need: 1, Found: 0}}}
				return &Result{Status: Busy, Explain: ex,
					Reason: fmt.Sprintf("slot %d (%s) does not fit on %s: its free resources are taken", i, q.label, m.g.Vertex(v).DisplayName())}, nil
			}
			i++
		}
	}
	return m.place(id, now, dur, false)
}

// Extend changes a live job's duration, keeping its start and its claims:
// a job that runs past its planned end must keep holding what it uses,
// or the planner would offer it to others from the planned end on. It
// fails, and changes nothing, when the longer span would collide with
// another job holding the same resources later (a reservation, which the
// caller cancels first).
func (m *Matcher) Extend(id, duration int64) error {
	j, ok := m.jobs[id]
	if !ok {
		return fmt.Errorf("match: no job %d", id)
	}
	if duration < 1 {
		return fmt.Errorf("match: job %d: duration %d is not positive", id, duration)
	}
	if j.At+duration > Horizon {
		duration = Horizon - j.At
	}
	if duration == j.Duration {
		return nil
	}
	old := j.Duration
	m.release(j)
	j.Duration = duration
	if err := m.apply(j); err != nil {
		j.Duration = old
		if err2 := m.apply(j); err2 != nil {
			return fmt.Errorf("match: job %d: extend failed (%v) and restoring failed: %w", id, err, err2)
		}
		return fmt.Errorf("match: job %d: cannot extend to %d s: %w", id, duration, err)
	}
	return nil
}

// Share is how much of the graph a job takes at least: over every resource
// type it requests, the units it needs over the graph's total of that
// type, summed. A queue comparing sets of jobs by how well they fill the
// cluster weighs them with it. 0 for an invalid jobspec.
func (m *Matcher) Share(js *jobspec.Jobspec) float64 {
	if js == nil || jobspec.Validate(js) != nil {
		return 0
	}
	r := m.compile(js)
	root := m.g.Root()
	s := 0.0
	for d, n := range r.need {
		if d == m.jobDim || n <= 0 {
			continue
		}
		if t := m.total(root, d); t > 0 {
			s += float64(n) / float64(t)
		}
	}
	return s
}

// FitsWithout is Fits as if the jobs named by without were gone: what a
// job would find free should those jobs be cancelled (a preemption's
// question). Their spans are taken out for the match and put back after
// it, as Extend does, so nothing changes.
func (m *Matcher) FitsWithout(js *jobspec.Jobspec, id, now int64, without []int64) (*Result, error) {
	parts := make([]Without, len(without))
	for i, w := range without {
		parts[i] = Without{ID: w}
	}
	return m.FitsWithoutParts(js, id, now, parts)
}

// Without names what a FitsWithoutParts probe takes away: the whole job
// ID, or, with Vertices, only what it holds on those vertices, as
// PartialCancel would release it.
type Without struct {
	ID       int64
	Vertices []int32
}

// FitsWithoutParts is FitsWithout for jobs or parts of jobs: a job
// named whole anywhere goes whole; the parts named of one job add up.
func (m *Matcher) FitsWithoutParts(js *jobspec.Jobspec, id, now int64, without []Without) (*Result, error) {
	type cut struct {
		j        *Job
		whole    bool
		vertices []int32
	}
	var cuts []*cut
	at := make(map[*Job]int, len(without)) // the cut of each job
	for _, w := range without {
		j, ok := m.jobs[w.ID]
		if !ok {
			return nil, fmt.Errorf("match: no job %d", w.ID)
		}
		for _, v := range w.Vertices {
			if v < 0 || int(v) >= m.g.Len() {
				return nil, fmt.Errorf("match: vertex %d out of range", v)
			}
		}
		i, seen := at[j]
		if !seen {
			cuts = append(cuts, &cut{j: j})
			i = len(cuts) - 1
			at[j] = i
		}
		cuts[i].whole = cuts[i].whole || len(w.Vertices) == 0
		cuts[i].vertices = append(cuts[i].vertices, w.Vertices...)
	}
	// Each cut job is released, and what it keeps committed as a
	// stand-in, for the match; then the stand-ins go and the jobs return.
	var stand []*Job
	var err error
	for _, c := range cuts {
		m.release(c.j)
		if c.whole {
			continue
		}
		keep := m.claimsOutside(c.j, c.vertices)
		if len(keep) == 0 {
			continue
		}
		nj, cerr := m.commit(c.j.ID, c.j.At, c.j.Duration, c.j.Reserved, keep)
		if cerr != nil {
			err = fmt.Errorf("match: job %d: its part kept for a match could not be planned: %w", c.j.ID, cerr)
			break
		}
		stand = append(stand, nj)
	}
	var r *Result
	if err == nil {
		r, err = m.Fits(js, id, now)
	}
	for i := len(stand) - 1; i >= 0; i-- {
		m.release(stand[i])
	}
	for i := len(cuts) - 1; i >= 0; i-- {
		if aerr := m.apply(cuts[i].j); aerr != nil && err == nil {
			err = fmt.Errorf("match: job %d could not be put back after a match without it: %w", cuts[i].j.ID, aerr)
		}
	}
	return r, err
}

// Holds reports whether the job claims units of vertex v itself (the
// core asks whether the devices a pod's allocation names are the ones its
// job took).
func (m *Matcher) Holds(id int64, v int32) bool {
	j, ok := m.jobs[id]
	if !ok {
		return false
	}
	for _, cl := range j.claims {
		if cl.v == v && cl.amt > 0 {
			return true
		}
	}
	return false
}

// FreeAt is how many units of vertex v no job holds at time t.
func (m *Matcher) FreeAt(v int32, t int64) int64 {
	a := m.g.Vertex(v).Size
	if p := m.plan[v]; p != nil {
		a -= p.UsedMax(t, 1)
	}
	return a
}
