package sim

import (
	"container/heap"
	"errors"
	"math"
	"slices"
)

// The coscheduling model: kube-scheduler with the scheduler-plugins
// Coscheduling plugin (docs/reference/peers.md 3; docs/reference/experiments.md
// 3.3, 5.3). Each group is a PodGroup with minMember = its size and no
// minResources (the experiments set none, so the aggregate resource check
// never applied).
//
// Per pod, in the order kube-scheduler pops them from its queue:
//
//   - QueueSort: priority descending, then the PodGroup's timestamp (its
//     last scheduling-failure time if any, else its creation time: the
//     semantics of scheduler-plugins PR #949, so a group that failed sorts
//     behind newer groups of the same priority), then group name, then
//     group index and pod index.
//   - PreFilter: a group in back-off (podGroupBackoffSeconds, default 0 =
//     off) is refused; its pods are retried when the back-off ends. The
//     minMember check always passes: all pods are created at arrival.
//   - Filter/Score: as the stock model, over the model's node view: free =
//     allocatable - bound pods (env) - assumed pods (this model).
//   - Reserve + Permit: the placed pod is assumed (it holds its node's
//     resources in the view but is not bound, so the env still counts it
//     Pending) and waits. When assumed + bound members reach minMember, all
//     waiting members are bound at once and the group starts. The first
//     waiter starts the Permit timer (each waiting pod has its own timer in
//     kube-scheduler, and the first to expire rejects the whole group, so
//     the group's deadline is the first waiter's start + the timeout) and
//     activates its queued siblings (pods-to-activate: out of back-off and
//     the unschedulable pool, straight to the active queue).
//   - Permit timeout (Unreserve): all waiting members are rejected: their
//     resources return to the view, the group's failure time becomes now,
//     and they re-enter the queue in back-off.
//   - PostFilter, when a pod fits nowhere: if assigned (assumed + bound) >=
//     minMember, nothing; else if the unassigned fraction is at most
//     podGroupRejectPercentage (10 %), the pod just waits to be retried;
//     otherwise all waiting siblings are rejected (as at a timeout), the
//     group backs off if podGroupBackoffSeconds > 0, and the failure time
//     is recorded.
//
// Retries. A pod that fits nowhere waits in the unschedulable pool for a
// cluster event: a group's release (pods deleted), or assumed pods being
// forgotten (a Permit timeout or a PostFilter rejection; kube-scheduler's
// AssignedPodDelete move). After the event it is retried once its pod
// back-off (1 s doubling to 10 s per failed attempt, kube-scheduler's
// default) is over. Rejected waiting pods, and a pod whose own PostFilter
// freed resources, skip the pool and only wait out their back-off
// (kube-scheduler sends a pod to back-off when a move request arrives
// during its scheduling cycle). With back-off off, a pod is retried at the
// next Schedule call that follows the event (never twice at one instant).
// Wakeup reports the earliest Permit deadline or end of a back-off.
//
// Unlike the stock model, whose attempts take StockOptions.AttemptSeconds
// each, this model schedules instantaneously at event times: every pod
// ready to be tried is tried at the instant of the event. That is one of
// the things it does not reproduce (docs/design/002-simulator.md). Within
// one instant the model pops exactly the pod kube-scheduler's activeQ
// would pop next, even as pods become active mid-pass (an event, an
// activation) and groups change place (a failure moves a group behind the
// others): the active list is kept sorted and a small heap holds what
// changed during the pass (TestCoschedulingPassMatchesReference checks this
// against a rescan-everything reference). Each pod is tried at most once per
// instant, which bounds a pass even with back-off off.

// CoschedulingOptions tune the coscheduling model.
type CoschedulingOptions struct {
	// PermitTimeout is the Permit wait in seconds (PodGroup
	// scheduleTimeoutSeconds, else permitWaitingTimeSeconds; the plugin's
	// default is 60). Zero or negative means 60.
	PermitTimeout float64
	// RejectPercentage is podGroupRejectPercentage (default 10).
	RejectPercentage int
	// GroupBackoff is podGroupBackoffSeconds (default 0 = off).
	GroupBackoff float64
	// Backoff is kube-scheduler's per-pod back-off (DefaultBackoff); the
	// zero value turns it off.
	Backoff Backoff
	// CreationOrder sorts groups by creation time only, ignoring failures:
	// the QueueSort of scheduler-plugins before PR #949 (merged 2026), so
	// of any version the 2024 experiments can have run. Failed groups keep
	// their place and can starve newer ones (#713).
	CreationOrder bool
}

// NewCoscheduling returns the Coscheduling model with the given Permit
// timeout (seconds) and the plugin's and kube-scheduler's other defaults.
func NewCoscheduling(permitTimeout float64) Scheduler {
	return NewCoschedulingWith(CoschedulingOptions{
		PermitTimeout: permitTimeout, RejectPercentage: 10, Backoff: DefaultBackoff,
	})
}

// NewCoschedulingWith returns the Coscheduling model with the given
// options, taken as they are (zero RejectPercentage rejects on any
// shortfall).
func NewCoschedulingWith(opts CoschedulingOptions) Scheduler {
	if opts.PermitTimeout <= 0 {
		opts.PermitTimeout = 60
	}
	c := &cosched{opts: opts}
	c.q = kubeQueue{less: c.podLess, backoff: opts.Backoff}
	return c
}

type cosched struct {
	opts  CoschedulingOptions
	env   *Env
	view  *nodeView
	q     kubeQueue
	cache shapeCache

	groups    []*csGroup // by group ID; nil before arrival
	deadlines deadlineHeap
	// rekeyed: a group's timestamp changed, so the active list must be
	// re-sorted before the next pass.
	rekeyed bool
	// late holds, during a pass, pods that became active mid-pass or whose
	// group's timestamp changed: the pass pops the smaller of its top and
	// the next pod of the sorted active list.
	late lateHeap
	// refPass, if set, replaces pass (tests: a slow reference).
	refPass func(now float64) error
}

// csGroup is one PodGroup's state in the model.
type csGroup struct {
	g        *Group
	pods     []*qPod
	node     []int // assumed node per pod, -1 if not assumed
	min      int   // minMember
	assumed  int
	failTime float64 // last scheduling failure, -1 if none
	// waitSince is when the first of the current waiting pods entered
	// Permit; -1 when none waits.
	waitSince    float64
	backoffUntil float64
}

func (c *cosched) groupTS(cg *csGroup) float64 {
	if cg.failTime >= 0 && !c.opts.CreationOrder {
		return cg.failTime
	}
	return cg.g.Submit
}

func (c *cosched) lessGroup(a, b *csGroup) bool {
	if pa, pb := a.g.Spec.Priority, b.g.Spec.Priority; pa != pb {
		return pa > pb
	}
	if ta, tb := c.groupTS(a), c.groupTS(b); ta != tb {
		return ta < tb
	}
	if na, nb := a.g.Spec.Name, b.g.Spec.Name; na != nb {
		return na < nb
	}
	return a.g.ID < b.g.ID
}

func (c *cosched) podLess(a, b *qPod) bool {
	if a.g != b.g {
		return c.lessGroup(c.groups[a.g.ID], c.groups[b.g.ID])
	}
	return a.pod < b.pod
}

func (c *cosched) Name() string { return "coscheduling" }
func (c *cosched) Model() bool  { return true }
func (c *cosched) Config() string {
	s := "model of scheduler-plugins Coscheduling: Permit wait " + trimFloat(c.opts.PermitTimeout) + "s, reject at timeout"
	if c.opts.GroupBackoff > 0 {
		s += ", group back-off " + trimFloat(c.opts.GroupBackoff) + "s"
	}
	if c.opts.CreationOrder {
		s += ", groups in creation order (before PR #949)"
	}
	return s + backoffNote(c.opts.Backoff) + gpuCountNote(c.env)
}

// Start resets all state, so a model can be run more than once.
func (c *cosched) Start(env *Env) error {
	*c = cosched{opts: c.opts, refPass: c.refPass}
	c.q = kubeQueue{less: c.podLess, backoff: c.opts.Backoff}
	c.late.less = c.podLess
	c.env = env
	c.view = newNodeView(env)
	c.groups = make([]*csGroup, len(env.Groups()))
	return nil
}

func (c *cosched) Submit(g *Group) error {
	if c.env == nil {
		return errors.New("not started")
	}
	cg := &csGroup{g: g, min: len(g.PodNode), failTime: -1, waitSince: -1, backoffUntil: math.Inf(-1)}
	c.groups[g.ID] = cg
	for i := range g.Spec.Pods {
		p := newQPod(g, i, g.Submit)
		cg.pods = append(cg.pods, p)
		cg.node = append(cg.node, -1)
		c.q.add(p)
	}
	return nil
}

// Release: the group's pods were deleted, a cluster event.
// PodReleased: a bound pod was deleted; its node has room again.
func (c *cosched) PodReleased(g *Group, pod int) error {
	c.view.releasePod(g, pod)
	c.cache.reset()
	c.q.event(c.env.Now())
	return nil
}

// Release: the pods were already given back one by one.
func (c *cosched) Release(*Group) error { return nil }

func (c *cosched) Schedule() error {
	if c.env == nil {
		return errors.New("not started")
	}
	now := c.env.Now()
	// Permit timeouts first: the timers fire before the queue pops. Groups
	// timing out together are handled in index order.
	var expired []*csGroup
	for {
		cg, ok := c.nextDeadline()
		if !ok || cg.waitSince+c.opts.PermitTimeout > now {
			break
		}
		heap.Pop(&c.deadlines)
		if !slices.Contains(expired, cg) { // a wait restarted at one instant
			expired = append(expired, cg)
		}
	}
	slices.SortFunc(expired, func(a, b *csGroup) int { return a.g.ID - b.g.ID })
	for _, cg := range expired {
		c.rejectWaiting(cg, now)
		c.setFailTime(cg, now)
	}
	if len(expired) > 0 {
		c.q.event(now)
	}
	if c.refPass != nil {
		return c.refPass(now)
	}
	return c.pass(now)
}

// setFailTime records a scheduling failure: the group's timestamp, hence
// its pods' place in the queue, changes.
func (c *cosched) setFailTime(cg *csGroup, now float64) {
	cg.failTime = now
	if c.opts.CreationOrder {
		return
	}
	c.rekeyed = true
	if c.q.sink == nil {
		return // not in a pass: the active list is re-sorted at the next one
	}
	touched := false
	for _, p := range cg.pods {
		switch {
		case p.state != stActive:
		case p.lateIdx >= 0:
			touched = true
		case p.listed:
			// Its slot in the sorted list is stale now: pop it from the
			// heap instead.
			p.listed = false
			p.lateIdx = len(c.late.pods)
			c.late.pods = append(c.late.pods, p)
			touched = true
		}
		// Otherwise it was tried at this instant and waits for the next
		// pass, which re-sorts.
	}
	if touched {
		// Several keys changed at once: heap.Fix one by one would assume
		// the others valid, so rebuild.
		heap.Init(&c.late)
	}
}

// pass pops pods in queue order, as kube-scheduler's activeQ would, until
// none is left that has not been tried at this instant.
func (c *cosched) pass(now float64) error {
	c.q.promote(now)
	if c.rekeyed {
		slices.SortFunc(c.q.active, c.q.cmp)
		c.rekeyed = false
	}
	c.q.merge()
	c.q.sink = func(p *qPod) { heap.Push(&c.late, p) }
	defer func() { c.q.sink = nil }()

	act := c.q.active
	c.q.active = nil
	var kept []*qPod // tried at this instant already; next call
	for i := 0; ; {
		for i < len(act) && (act[i].state != stActive || !act[i].listed) {
			i++ // a stale slot
		}
		var e *qPod
		switch {
		case i < len(act) && (len(c.late.pods) == 0 || c.podLess(act[i], c.late.pods[0])):
			e = act[i]
			e.listed = false
			i++
		case len(c.late.pods) > 0:
			e = heap.Pop(&c.late).(*qPod)
		default:
			c.q.active = kept
			return nil
		}
		if e.lastTried >= now {
			kept = append(kept, e) // stays active, unlisted until merged
			continue
		}
		e.state = stOut
		if err := c.try(e, c.groups[e.g.ID], now); err != nil {
			return err
		}
	}
}

// try runs one scheduling cycle for one pod.
func (c *cosched) try(e *qPod, cg *csGroup, now float64) error {
	e.lastTried = now
	e.attempts++
	// PreFilter.
	if cg.backoffUntil > now {
		c.q.wait(e, math.Max(now+c.q.backoff.after(e.attempts), cg.backoffUntil), now)
		return nil
	}
	// Filter and Score.
	node := -1
	if !c.cache.failsKnown(e.spec) {
		node = c.view.best(e.spec)
	}
	if node < 0 {
		c.cache.add(e.spec)
		c.postFilter(e, cg, now)
		return nil
	}
	// Reserve: assume the pod on the node.
	c.view.take(node, e.spec)
	cg.node[e.pod] = node
	cg.assumed++
	// Permit.
	if cg.assumed >= cg.min {
		return c.allow(cg)
	}
	if cg.assumed == 1 {
		cg.waitSince = now
		heap.Push(&c.deadlines, deadline{t: now + c.opts.PermitTimeout, cg: cg})
		c.activate(cg, now)
	}
	return nil
}

// allow binds every waiting member: the group starts.
func (c *cosched) allow(cg *csGroup) error {
	for i, node := range cg.node {
		if node < 0 {
			continue
		}
		p := cg.pods[i]
		// Held in the view already: binding changes nothing there.
		if err := c.env.Bind(cg.g, i, node); err != nil {
			return err
		}
		p.bound = true
		cg.node[i] = -1
	}
	cg.assumed, cg.waitSince = 0, -1
	return nil
}

// postFilter is Coscheduling's PostFilter for a pod that fits nowhere.
func (c *cosched) postFilter(e *qPod, cg *csGroup, now float64) {
	assigned := cg.assumed + cg.g.Bound
	if assigned >= cg.min || (cg.min-assigned)*100 <= c.opts.RejectPercentage*cg.min {
		c.q.fail(e, now, true)
		return
	}
	if c.opts.GroupBackoff > 0 {
		cg.backoffUntil = now + c.opts.GroupBackoff
	}
	freed := c.rejectWaiting(cg, now)
	c.q.fail(e, now, !freed)
	c.setFailTime(cg, now)
	if freed {
		c.q.event(now)
	}
}

// rejectWaiting forgets the group's assumed pods (Unreserve) and sends them
// back to the queue in back-off. It reports whether any were waiting.
func (c *cosched) rejectWaiting(cg *csGroup, now float64) bool {
	some := false
	for i, node := range cg.node {
		if node < 0 {
			continue
		}
		p := cg.pods[i]
		c.view.give(node, p.spec)
		cg.node[i] = -1
		c.q.fail(p, now, false)
		some = true
	}
	if some {
		c.cache.reset() // resources grew
	}
	cg.assumed, cg.waitSince = 0, -1
	return some
}

// activate moves the queued siblings of a group's first waiter to the
// active queue, skipping back-off (pods-to-activate).
func (c *cosched) activate(cg *csGroup, now float64) {
	for _, p := range cg.pods {
		if (p.state != stPool && p.state != stBackoff) || p.lastTried >= now {
			continue
		}
		c.q.unqueue(p)
		p.readyAt = math.Min(p.readyAt, now)
		c.q.toActive(p)
	}
}

// nextDeadline is the group with the earliest pending Permit deadline,
// dropping deadlines that no longer apply (the group's waiting pods were
// bound or rejected since).
func (c *cosched) nextDeadline() (*csGroup, bool) {
	for len(c.deadlines) > 0 {
		d := c.deadlines[0]
		if d.cg.assumed > 0 && d.cg.waitSince+c.opts.PermitTimeout == d.t {
			return d.cg, true
		}
		heap.Pop(&c.deadlines)
	}
	return nil, false
}

func (c *cosched) Wakeup() (float64, bool) {
	if c.env == nil {
		return 0, false
	}
	t, ok := c.q.wakeup()
	if cg, dok := c.nextDeadline(); dok {
		if d := cg.waitSince + c.opts.PermitTimeout; d < t {
			t, ok = d, true
		}
	}
	return t, ok
}

// deadline is a group's Permit deadline; stale ones are skipped lazily.
type deadline struct {
	t  float64
	cg *csGroup
}

type deadlineHeap []deadline

func (h deadlineHeap) Len() int { return len(h) }
func (h deadlineHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].cg.g.ID < h[j].cg.g.ID
}
func (h deadlineHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)   { *h = append(*h, x.(deadline)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	*h = old[:len(old)-1]
	return d
}

// lateHeap is a heap of active pods in QueueSort order.
type lateHeap struct {
	pods []*qPod
	less func(a, b *qPod) bool
}

func (h *lateHeap) Len() int           { return len(h.pods) }
func (h *lateHeap) Less(i, j int) bool { return h.less(h.pods[i], h.pods[j]) }
func (h *lateHeap) Swap(i, j int) {
	h.pods[i], h.pods[j] = h.pods[j], h.pods[i]
	h.pods[i].lateIdx, h.pods[j].lateIdx = i, j
}
func (h *lateHeap) Push(x any) {
	p := x.(*qPod)
	p.lateIdx = len(h.pods)
	h.pods = append(h.pods, p)
}
func (h *lateHeap) Pop() any {
	old := h.pods
	p := old[len(old)-1]
	old[len(old)-1] = nil
	h.pods = old[:len(old)-1]
	p.lateIdx = -1
	return p
}
