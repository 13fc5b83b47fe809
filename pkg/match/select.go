package match

import "github.com/fluence-sched/fluence/pkg/resource"

// claim is one vertex a selection takes.
type claim struct {
	v int32
	// amt is the number of units of v's own pool taken; 0 is a shared touch
	// (the job uses v without consuming it, as a non-exclusive node).
	amt int64
	// subtree: v is held whole together with everything below it.
	subtree bool
}

type slotRec struct {
	q      *req
	anchor int32
	mark   int
}

// selector runs the select phase. It never changes committed state: its
// tentative claims live in epoch-stamped scratch arrays, so starting a new
// selection is O(1) (Fluxion's colour-base trick).
type selector struct {
	m       *Matcher
	req     *request
	at, dur int64
	now     int64
	sat     bool // satisfiability: ignore allocations and vertex status
	// replay: the placement is given (Place); vertex status does not
	// matter, what is already there does.
	replay   bool
	hasNodes bool
	nodeType resource.TypeID

	claims []claim
	// slots records each slot taken: its request and anchor, and the claim
	// count when it completed, so rollback can drop it with its claims.
	slots []slotRec

	epoch     uint32
	stamp     []uint32
	tentAmt   []int64 // units tentatively claimed on the vertex itself
	tentTouch []int32 // tentative claims at or below the vertex

	rem    []int64 // stack of remaining counts, one frame per active level
	remTop int
	// indexed: the slot count found the request fits and the node index
	// holds for this window (slotindex.go); probe, during a reservation
	// search's selection, is its bound, which holds for the window too.
	indexed bool
	probe   *probeBound
	free    []int64 // scratch for freeUnits
	// exactLeft is what remains of the selection's budget for exact
	// packing (exactpack.go).
	exactLeft int

	ex Explain
}

func (s *selector) init(m *Matcher) {
	n := m.g.Len()
	s.m = m
	s.stamp = make([]uint32, n)
	s.tentAmt = make([]int64, n)
	s.tentTouch = make([]int32, n)
	s.free = make([]int64, m.dims)
	s.nodeType, s.hasNodes = m.g.NodeType()
}

// run selects r for the window [at, at+dur). On success s.claims holds the
// selection; on failure s.ex says why.
func (s *selector) run(r *request, now, at, dur int64, sat bool) bool {
	s.begin(r, now, at, dur, sat, false)
	if len(r.missing) > 0 {
		s.ex.Missing = append(s.ex.Missing, r.missing...)
		return false
	}
	root := s.m.g.Root()
	if !s.rootFits(root, r.need) {
		return false
	}
	if s.countShort(root, r) {
		return false
	}
	return s.satisfy(root, r.top, true)
}

// begin resets the selector for one selection.
func (s *selector) begin(r *request, now, at, dur int64, sat, replay bool) {
	s.req, s.now, s.at, s.dur, s.sat, s.replay = r, now, at, dur, sat, replay
	s.indexed = false
	s.exactLeft = exactBudget
	s.claims = s.claims[:0]
	s.slots = s.slots[:0]
	s.ex.reset()
	s.ex.Empty = sat
	s.epoch++
	if s.epoch == 0 { // wrapped: clear stamps once every 4 billion runs
		clear(s.stamp)
		s.epoch = 1
	}
	if n := countReqs(r.top); cap(s.rem) < n {
		s.rem = make([]int64, n)
	}
	s.rem = s.rem[:cap(s.rem)]
	s.remTop = 0
}

// placeSlot takes one slot of q inside node v: a given placement, as Place
// replays it.
func (s *selector) placeSlot(v int32, q *req) bool {
	if !s.satisfy(v, q.with, false) {
		return false
	}
	s.slots = append(s.slots, slotRec{q: q, anchor: v, mark: len(s.claims)})
	return true
}

func countReqs(level []*req) int {
	n := len(level)
	for _, q := range level {
		n += countReqs(q.with)
	}
	return n
}

// rootFits checks the request's totals against the root aggregate (and the
// number of nodes up), recording what falls short.
func (s *selector) rootFits(root int32, need []int64) bool {
	m := s.m
	ok := true
	for d, n := range need {
		if n == 0 || d == m.jobDim {
			continue
		}
		have := m.total(root, d)
		if !s.sat {
			if i := m.inner[root]; i >= 0 && m.agg[i] != nil {
				have -= m.agg[i].UsedMax(s.at, s.dur, d)
			}
			if s.hasNodes && d == m.dimOf[s.nodeType] {
				// Down nodes are not subtracted from the aggregate, so the
				// count of nodes up bounds it separately.
				have = min(have, int64(m.g.NodesUp()))
				if have < n {
					s.ex.NodesDown = int64(len(m.g.ByType(s.nodeType)) - m.g.NodesUp())
				}
			}
		}
		if have < n {
			t := typeOfDim(d)
			unit := ""
			if vs := m.g.ByType(t); len(vs) > 0 {
				unit = m.g.Vertex(vs[0]).Unit
			}
			s.ex.Totals = append(s.ex.Totals, Shortfall{Type: m.g.TypeName(t), Need: n, Found: have, Unit: unit})
			ok = false
		}
	}
	return ok
}

// typeOfDim maps a dimension back to its type: dimensions are TypeIDs.
func typeOfDim(d int) resource.TypeID { return resource.TypeID(d) }

// satisfy fills one level (sibling requests) below u, or with the root
// itself as the only candidate when top is set. Range counts take as many
// units as they find, rounded down onto the count's lattice.
func (s *selector) satisfy(u int32, level []*req, top bool) bool {
	base := s.remTop
	s.remTop += len(level)
	defer func() { s.remTop = base }()
	rem := s.rem[base:s.remTop]
	for i, q := range level {
		rem[i] = q.count.Max
	}
	mark := len(s.claims)
	s.fill(u, level, rem, top)
	refill := false
	ok := true
	for i, q := range level {
		got := q.count.Max - rem[i]
		want := got
		met := rem[i] == 0
		if !q.count.IsFixed() {
			want = q.count.Lattice(got)
			met = want > 0
		}
		if !met {
			ok = false
			if top {
				s.ex.Short = append(s.ex.Short, Shortfall{Type: q.describe(), Need: q.count.Min, Found: got})
			}
		}
		if want != got {
			refill = true
		}
		rem[i] = want // the target, should we refill
	}
	if !ok {
		s.rollback(mark)
		return false
	}
	if !refill {
		return true
	}
	// Take exactly the lattice count: the visiting order is deterministic,
	// so a second pass with the smaller target picks a prefix of the first.
	s.rollback(mark)
	s.fill(u, level, rem, top)
	for i := range level {
		if rem[i] != 0 {
			s.rollback(mark)
			return false
		}
	}
	return true
}

func done(rem []int64) bool {
	for _, r := range rem {
		if r > 0 {
			return false
		}
	}
	return true
}

// fill claims units for level from below u, decrementing rem.
func (s *selector) fill(u int32, level []*req, rem []int64, top bool) {
	if top {
		s.visit(u, level, rem)
		return
	}
	if hasSlot(level) && s.isAnchor(u) {
		// Sibling slots (a heterogeneous pod group) pack in jobspec order.
		for i, q := range level {
			if q.slot && rem[i] > 0 {
				if q.requires != nil && !s.slotAllowed(u, q) {
					s.ex.SlotsConstrained++
					continue
				}
				s.packSlots(u, q, &rem[i])
			}
		}
		// The anchor is where this level's slots come from: below it there
		// is no capacity the packing did not already see.
		if done(rem) || onlySlots(level) {
			return
		}
	}
	if s.m.policy.Locality {
		if l := s.localityOrder(u, level); l != nil {
			for _, c := range l {
				if done(rem) {
					return
				}
				s.visit(c, level, rem)
			}
			return
		}
	}
	if s.m.tight && len(level) == 1 && level[0].domain {
		for _, c := range s.tightOrder(u, level[0]) {
			s.visit(c, level, rem)
			if done(rem) {
				return
			}
		}
		return
	}
	skip := s.indexed && s.m.sc.kidsLo[u] >= 0
	it := s.m.iterChildren(u)
	for c, ok := it.next(); ok; c, ok = it.next() {
		if skip && s.holdsNoSlot(c) {
			continue
		}
		s.visit(c, level, rem)
		if done(rem) {
			return
		}
	}
}

func hasSlot(level []*req) bool {
	for _, q := range level {
		if q.slot {
			return true
		}
	}
	return false
}

func typeIndex(level []*req, t resource.TypeID) int {
	for i, q := range level {
		if q.known && !q.slot && q.typ == t {
			return i
		}
	}
	return -1
}

// takerOf returns the request of the level that takes vertex c, given
// the first request of its type at i: the first of that type that still
// needs units and whose requires, if any, admits c itself; -1 when none.
// Leaves of one type repeat at a level only when each carries requires
// (a pod's DRA requests, jobspec validation checks it). The choice is
// greedy in request order: requests whose admitted sets overlap can
// miss an assignment a matching would find, never take a vertex a
// request does not admit.
func (s *selector) takerOf(level []*req, rem []int64, i int, c int32, vx *resource.Vertex) int {
	for ; i < len(level); i++ {
		q := level[i]
		if q.slot || !q.known || q.typ != vx.Type || rem[i] == 0 {
			continue
		}
		if q.requires != nil && !q.requires.Match(vx.DisplayName(), vx.Rank, vx.Properties) {
			s.ex.VerticesRefused++
			continue
		}
		return i
	}
	return -1
}

// isAnchor: a slot's contents come from one subtree, the nearest node at or
// above u; graphs without nodes anchor slots where their level is searched.
func (s *selector) isAnchor(u int32) bool {
	return !s.hasNodes || s.m.g.NodeOf(u) != resource.None
}

// packSlots takes as many slots at anchor a as are still needed and fit.
// The anchor's free units are read once and counted down per slot: once
// they cannot cover another slot, a leaf search that must fail is skipped.
func (s *selector) packSlots(a int32, q *req, rem *int64) {
	free := s.freeUnits(a, q.need)
	for *rem > 0 {
		if free != nil {
			for d, n := range q.need {
				if n > free[d] {
					return
				}
			}
		}
		if !s.satisfy(a, q.with, false) {
			return
		}
		for d, n := range q.need {
			if free != nil {
				free[d] -= n
			}
		}
		s.slots = append(s.slots, slotRec{q: q, anchor: a, mark: len(s.claims)})
		*rem--
	}
}

// visit considers one vertex for the level: claim it if its type is
// requested here, otherwise descend when its subtree can contribute.
func (s *selector) visit(c int32, level []*req, rem []int64) {
	m := s.m
	s.ex.Visited++
	vx := m.g.Vertex(c)
	isNode := s.hasNodes && vx.Type == s.nodeType
	if !s.sat && !s.replay && vx.Status == resource.Down {
		if isNode {
			s.ex.NodesDown++
		}
		return
	}
	if isNode && s.req.constraint != nil && !s.matchConstraint(c, vx) {
		s.ex.NodesConstrained++
		return
	}
	avail := s.avail(c, vx)
	if avail <= 0 || (isNode && s.m.policy.NodeExclusive && !s.committedFree(c)) {
		if isNode {
			s.ex.NodesBusy++
		}
		return
	}
	if i := typeIndex(level, vx.Type); i >= 0 {
		if i = s.takerOf(level, rem, i, c, vx); i < 0 {
			return
		}
		q := level[i]
		if len(q.with) == 0 && !q.subtree {
			s.takePool(c, vx, q, &rem[i], avail)
			return
		}
		if s.takeUnit(c, vx, q) {
			rem[i]--
		} else if isNode {
			s.ex.NodesBusy++
		}
		return
	}
	if m.inner[c] < 0 {
		return
	}
	if onlySlots(level) && s.isAnchor(c) {
		// packSlots reads the anchor's free units itself; checking the
		// aggregate here too would double the cost of every node visited.
		before, refused := remaining(rem), s.ex.SlotsConstrained
		s.fill(c, level, rem, false)
		// A node every wanted slot's requires refused is not busy.
		if isNode && remaining(rem) == before && s.ex.SlotsConstrained == refused {
			s.ex.NodesBusy++
		}
		return
	}
	if !s.canContribute(c, level, rem) {
		if isNode {
			s.ex.NodesBusy++
		}
		return
	}
	s.fill(c, level, rem, false)
}

func onlySlots(level []*req) bool {
	for _, q := range level {
		if !q.slot {
			return false
		}
	}
	return true
}

func remaining(rem []int64) int64 {
	var n int64
	for _, r := range rem {
		n += r
	}
	return n
}

// slotAllowed reports whether q's requires admits the node holding anchor
// a (a itself on a graph without nodes).
func (s *selector) slotAllowed(a int32, q *req) bool {
	n := a
	if s.hasNodes {
		n = s.m.g.NodeOf(a)
	}
	vx := s.m.g.Vertex(n)
	return q.requires.Match(vx.DisplayName(), vx.Rank, vx.Properties)
}

func (s *selector) matchConstraint(c int32, vx *resource.Vertex) bool {
	return s.req.constraint.Match(vx.DisplayName(), vx.Rank, vx.Properties)
}

// takePool claims up to rem units of a leaf request from pool c, of which
// avail are free.
func (s *selector) takePool(c int32, vx *resource.Vertex, q *req, rem *int64, avail int64) {
	if q.excl && vx.Size == 1 && s.overrunGuard(c) {
		return
	}
	take := min(avail, *rem)
	amt := take
	if !q.excl {
		amt = 0 // outside a slot and not exclusive: shared, as in Fluxion
	}
	s.push(claim{v: c, amt: amt})
	*rem -= take
}

// takeUnit claims c as one unit of q, after finding q's children below it.
func (s *selector) takeUnit(c int32, vx *resource.Vertex, q *req) bool {
	if (q.excl || q.subtree) && !s.exclusiveFree(c, vx) {
		return false
	}
	if s.m.inner[c] >= 0 && !s.fitsAgg(c, q.need) {
		return false
	}
	mark := len(s.claims)
	if len(q.with) > 0 && !s.satisfy(c, q.with, false) && !(q.domain && s.m.exact && s.packExact(c, q.with)) {
		return false
	}
	switch {
	case q.subtree:
		// The children were found only to prove the shape fits; the job
		// holds the whole vertex, so one claim replaces them.
		s.rollback(mark)
		s.push(claim{v: c, amt: vx.Size, subtree: true})
	case q.excl:
		s.push(claim{v: c, amt: vx.Size})
	default:
		s.push(claim{v: c})
	}
	return true
}

// avail is the part of c's own pool free for the whole window, less what
// this selection already took.
func (s *selector) avail(c int32, vx *resource.Vertex) int64 {
	a := vx.Size - s.tent(c)
	if !s.sat {
		if p := s.m.plan[c]; p != nil {
			a -= p.UsedMax(s.at, s.dur)
		}
	}
	return a
}

func (s *selector) tent(c int32) int64 {
	if s.stamp[c] != s.epoch {
		return 0
	}
	return s.tentAmt[c]
}

func (s *selector) tentBelow(c int32) int32 {
	if s.stamp[c] != s.epoch {
		return 0
	}
	return s.tentTouch[c]
}

// overrunGuard: an immediate exclusive claim also needs the vertex free of
// live allocations, whatever their planned end, so a job running past its
// duration is never doubled up on (Fluxion does the same).
func (s *selector) overrunGuard(c int32) bool {
	return !s.sat && s.at == s.now && s.m.allocs[c] > 0
}

// exclusiveFree: no job, committed or tentative, touches c or its subtree
// during the window.
func (s *selector) exclusiveFree(c int32, vx *resource.Vertex) bool {
	if s.tentBelow(c) > 0 || s.tent(c) > 0 {
		return false
	}
	return s.committedFree(c)
}

// committedFree: no other job touches c or its subtree during the window;
// this selection's own claims do not count. Under the *x policies a node
// is entered only when it is committedFree, so every node the job uses can
// be held whole.
func (s *selector) committedFree(c int32) bool {
	if s.sat {
		return true
	}
	if s.overrunGuard(c) {
		return false
	}
	m := s.m
	if p := m.plan[c]; p != nil && p.UsedMax(s.at, s.dur) > 0 {
		return false
	}
	if i := m.inner[c]; i >= 0 {
		if a := m.agg[i]; a != nil && a.UsedMax(s.at, s.dur, m.jobDim) > 0 {
			return false
		}
	}
	return true
}

// fitsAgg: c's subtree has need[d] free units of every dimension over the
// window. Tentative claims are not counted, so this is a necessary
// condition only; exact checks happen where units are claimed.
func (s *selector) fitsAgg(c int32, need []int64) bool {
	m := s.m
	i := m.inner[c]
	if i < 0 {
		return true
	}
	tot := m.totals[int(i)*m.dims : int(i+1)*m.dims]
	if !s.sat {
		if a := m.agg[i]; a != nil {
			for d, n := range need {
				if n > 0 && n > tot[d]-m.usedAtStart(i, d, s.at, s.at == s.now) {
					return false
				}
			}
			return a.Fits(s.at, s.dur, need)
		}
	}
	for d, n := range need {
		if n > tot[d] {
			return false
		}
	}
	return true
}

// freeUnits returns, for an inner vertex, its subtree's free units over the
// window in the dimensions need names (others are left 0), in a scratch
// vector valid until the next call; nil for leaves.
func (s *selector) freeUnits(c int32, need []int64) []int64 {
	m := s.m
	i := m.inner[c]
	if i < 0 {
		return nil
	}
	tot := m.totals[int(i)*m.dims : int(i+1)*m.dims]
	a := m.agg[i]
	for d, n := range need {
		s.free[d] = 0
		if n == 0 {
			continue
		}
		s.free[d] = tot[d]
		if !s.sat && a != nil {
			// The cached usage at the window start settles most full
			// subtrees without a planner walk.
			if s.free[d]-m.usedAtStart(i, d, s.at, s.at == s.now) < n {
				s.free[d] -= m.usedAtStart(i, d, s.at, s.at == s.now)
				return s.free
			}
			s.free[d] -= a.UsedMax(s.at, s.dur, d)
		}
	}
	return s.free
}

// canContribute: c's subtree can supply at least one unit of some request
// still open at this level.
func (s *selector) canContribute(c int32, level []*req, rem []int64) bool {
	for i, q := range level {
		if rem[i] > 0 && s.fitsAgg(c, q.need) {
			return true
		}
	}
	return false
}

func (s *selector) push(cl claim) {
	// A subtree claim takes the vertex's whole pool, so later visits stop
	// at the vertex and never reach what it contains.
	s.claims = append(s.claims, cl)
	s.touch(cl.v, cl.amt, 1)
}

func (s *selector) setTent(v int32, add int64) {
	if s.stamp[v] != s.epoch {
		s.stamp[v] = s.epoch
		s.tentAmt[v], s.tentTouch[v] = 0, 0
	}
	s.tentAmt[v] += add
}

// touch adds (sign 1) or removes (sign -1) a tentative claim of amt units on
// v, counting it on v and every ancestor.
func (s *selector) touch(v int32, amt int64, sign int32) {
	s.setTent(v, int64(sign)*amt)
	g := s.m.g
	for a := v; a != resource.None; a = g.Parent(a) {
		if s.stamp[a] != s.epoch {
			s.stamp[a] = s.epoch
			s.tentAmt[a], s.tentTouch[a] = 0, 0
		}
		s.tentTouch[a] += sign
	}
}

// rollback undoes claims made after mark.
func (s *selector) rollback(mark int) {
	for i := len(s.claims) - 1; i >= mark; i-- {
		cl := s.claims[i]
		s.touch(cl.v, cl.amt, -1)
	}
	s.claims = s.claims[:mark]
	for len(s.slots) > 0 && s.slots[len(s.slots)-1].mark > mark {
		s.slots = s.slots[:len(s.slots)-1]
	}
}

// wholeNodes rewrites a selection for the *x policies: everything claimed
// inside a node becomes one claim on the whole node, which visit made sure
// no other job touches.
func (s *selector) wholeNodes() {
	if !s.m.policy.NodeExclusive || !s.hasNodes {
		return
	}
	g := s.m.g
	out := s.claims[:0:0]
	seen := map[int32]bool{}
	for _, cl := range s.claims {
		n := g.NodeOf(cl.v)
		if n == resource.None {
			out = append(out, cl)
			continue
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, claim{v: n, amt: g.Vertex(n).Size, subtree: true})
		}
	}
	s.claims = out
}

// slotPlacements lists the selection's slots in jobspec order: the order in
// which the request tree lists slot requests, each request's slots in the
// order they were taken.
func (s *selector) slotPlacements() []SlotPlacement {
	if len(s.slots) == 0 {
		return nil
	}
	g := s.m.g
	var order []*req
	var walk func(level []*req)
	walk = func(level []*req) {
		for _, q := range level {
			if q.slot {
				order = append(order, q)
			}
			walk(q.with)
		}
	}
	walk(s.req.top)
	out := make([]SlotPlacement, 0, len(s.slots))
	for _, q := range order {
		for _, sr := range s.slots {
			if sr.q != q {
				continue
			}
			n := g.NodeOf(sr.anchor)
			if n == resource.None {
				n = sr.anchor
			}
			out = append(out, SlotPlacement{Label: q.label, Node: g.Vertex(n).DisplayName(), Vertex: n})
		}
	}
	return out
}
