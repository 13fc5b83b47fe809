package gang

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/queue"
)

// ensureEngine rebuilds the graph when the node set or a node's capacity
// changed, and replays everything that holds resources: allocations at
// their nodes, foreign pods at theirs, and the queued requests in their
// order. It reports whether there is an engine to decide with.
func (c *Core) ensureEngine() bool {
	if !c.rebuildDue() {
		return true
	}
	if len(c.nodes) == 0 {
		return false
	}
	b := c.planGraph().Build()
	if b.err != nil {
		// On failure the old picture is kept (NodeSet validated what it
		// could) and the failure is reported; the next event tries again.
		c.fail(b.op, "", b.err)
		return c.m != nil
	}
	c.install(b)
	return true
}

// install takes a built graph as the engine's and replays on it
// everything that holds resources.
func (c *Core) install(b *BuiltGraph) {
	c.dirty = false
	c.graphGen++
	c.touchAll()
	c.m, c.q, c.vertexOf = b.m, b.q, b.vertexOf
	c.remark()
	for _, node := range slices.Sorted(maps.Keys(c.overloaded)) {
		c.markNode(node, true) // published as overloaded: rendered again
	}
	c.overloaded = map[string]bool{}
	c.foreignJob = map[string]int64{}
	c.unplaced = nil

	// Allocations first: they were placed by this scheduler and checked;
	// foreign pods that no longer fit beside them mark their node.
	var requeue []*alloc
	for _, gr := range c.sortedGroups() {
		kept := gr.allocs[:0]
		for _, a := range gr.allocs {
			if !a.running {
				requeue = append(requeue, a)
				kept = append(kept, a)
				continue
			}
			if c.replay(gr, a) {
				kept = append(kept, a)
			}
		}
		gr.allocs = kept
	}
	for _, node := range c.foreignNodes() {
		c.placeForeign(node)
	}
	for _, node := range slices.Sorted(maps.Keys(c.overloaded)) {
		c.withdrawOverloaded(node)
	}
	slices.SortFunc(requeue, func(a, b *alloc) int { return cmp.Compare(a.id, b.id) })
	for _, a := range requeue {
		if gr := c.byAlloc[a.id]; gr != nil {
			c.requeue(gr, a) // the new queue never held it
		}
	}
	c.arrived()
}

// replay commits a running allocation on a fresh graph at its nodes. Slots
// on nodes that are gone are dropped (their pods went with the node). It
// reports whether the allocation still holds anything.
func (c *Core) replay(g *group, a *alloc) bool {
	var keep []*slot
	for _, s := range a.slots {
		if _, ok := c.nodes[s.node]; ok && !s.done {
			keep = append(keep, s)
		}
	}
	if len(keep) == 0 {
		delete(c.byAlloc, a.id)
		return false
	}
	shapes := make([]Shape, len(keep))
	for i, s := range keep {
		shapes[i] = s.shape
	}
	rem := int64(0)
	if a.dur > 0 {
		rem = max(1, a.start+a.dur-c.now)
	}
	js, groups, err := groupJobspec(shapes, nil, nil, rem, false)
	if err != nil {
		// The pods are there whatever the engine thinks (a negative
		// request adopted from a record): keep new work off their nodes.
		c.fail("replay", g.id.Key, err)
		a.slots = keep
		c.setUnplaced(a.id)
		for _, s := range a.slots {
			c.setOverloaded(s.node, true)
		}
		return true
	}
	a.js, a.start, a.dur = js, c.now, rem
	c.planned(g, a) // replay moves plans
	// The jobspec orders slots by shape; order ours to match.
	var ordered []*slot
	var vertices []int32
	for _, sg := range groups {
		for _, i := range sg.pods {
			ordered = append(ordered, keep[i])
			vertices = append(vertices, c.vertexOf[keep[i].node])
		}
	}
	a.slots = ordered
	d, err := c.q.Place(&queue.Group{ID: a.id, Name: g.id.Key, Submit: c.now, Jobspec: a.js}, vertices, c.now)
	c.fail("replay", g.id.Key, err)
	if err != nil || d.State != queue.Running {
		// The pods are there whatever the engine thinks: keep new work off
		// their nodes.
		c.setUnplaced(a.id)
		for _, s := range a.slots {
			c.setOverloaded(s.node, true)
		}
	}
	return true
}

// setOverloaded marks a node as taking no new work, or clears the mark.
func (c *Core) setOverloaded(node string, on bool) {
	if c.overloaded[node] == on {
		return
	}
	if on {
		c.overloaded[node] = true
	} else {
		delete(c.overloaded, node)
	}
	c.markNode(node, true)
	c.applyStatus(node)
}

// placeForeign (re)commits the summed requests of a node's foreign pods
// as one engine job.
func (c *Core) placeForeign(node string) {
	if id, ok := c.foreignJob[node]; ok {
		c.dequeue("remove-foreign", "", id)
		delete(c.foreignJob, node)
	}
	if len(c.foreign[node]) == 0 {
		delete(c.foreign, node)
		if len(c.foreignHeld(node)) == 0 {
			c.setOverloaded(node, c.holdsUnplaced(node))
			return
		}
	}
	v, ok := c.vertexOf[node]
	if !ok {
		return // not in the graph yet; the next rebuild places them
	}
	js, groups, err := groupJobspec([]Shape{c.foreignShape(node)}, nil, nil, 0, false)
	if err == nil && len(groups) != 1 {
		err = fmt.Errorf("node %s: the foreign load made %d slot requests, not one", node, len(groups))
	}
	if err != nil {
		// The pods are there whatever the engine counts: keep new work off.
		c.fail("place-foreign", "", fmt.Errorf("node %s: %w", node, err))
		c.setOverloaded(node, true)
		return
	}
	// Allocations past their planned end still hold their nodes: the
	// engine must know before it counts what is free (the loop extends
	// them only when it runs, and it runs only when something waits).
	c.extendOverruns()
	// One slot holds the node's whole foreign load but counts one pod:
	// pod places are not tracked for foreign pods.
	id := c.newID()
	d, err := c.q.Place(&queue.Group{ID: id, Name: "foreign/" + node, Jobspec: js}, []int32{v}, c.now)
	c.fail("place-foreign", "", err)
	if err != nil || d.State != queue.Running {
		c.setOverloaded(node, true)
		return
	}
	c.foreignJob[node] = id
	c.setOverloaded(node, c.holdsUnplaced(node))
}

// withdrawOverloaded withdraws the allocations still withdrawable on a
// node another scheduler just filled (it bound a pod there before this
// scheduler's pods were bound). The groups are placed again elsewhere.
func (c *Core) withdrawOverloaded(node string) {
	if !c.overloaded[node] {
		return
	}
	for _, g := range c.sortedGroups() {
		for _, a := range slices.Clone(g.allocs) {
			if !a.running || !a.withdrawable() {
				continue
			}
			if slices.ContainsFunc(a.slots, func(s *slot) bool { return s.node == node }) {
				c.withdraw(g, a, "another scheduler bound a pod to "+node+" first")
			}
		}
	}
	c.placeForeign(node) // now that the node's own allocations are gone
}

// resubmit queues a request again, keeping its place in line: after a
// rebuild, or when the nodes changed since its constraints were
// evaluated.
func (c *Core) resubmit(g *group, a *alloc) {
	c.dequeue("resubmit", g.id.Key, a.id)
	c.requeue(g, a)
}

// requeue replaces a request the queue no longer holds by a new one for
// the same pods at the same place in line.
func (c *Core) requeue(g *group, a *alloc) {
	c.dropAlloc(g, a)
	c.submitPods(g, c.podsByUID(g, a.pods), a.submit)
}

func (c *Core) podsByUID(g *group, uids []string) []*Pod {
	var out []*Pod
	for _, u := range uids {
		if p := g.members[u]; p != nil {
			out = append(out, p)
		}
	}
	return out
}

// refreshRequests rebuilds queued requests whose constraints were
// evaluated against older nodes, so a waiting group sees the nodes as
// they are: new nodes of its pool, changed labels, lifted taints.
func (c *Core) refreshRequests() {
	c.refreshUnmet()
	c.refreshFlat()
	if c.refreshedGen == c.nodeGen {
		return // nothing changed since every request was last brought up to date
	}
	c.refreshedGen = c.nodeGen
	for _, g := range c.sortedGroups() {
		for _, a := range slices.Clone(g.allocs) {
			if a.running || a.nodeGen == c.nodeGen {
				continue
			}
			if !slices.ContainsFunc(c.podsByUID(g, a.pods), func(p *Pod) bool { return p.Filter != nil }) {
				a.nodeGen = c.nodeGen
				continue
			}
			c.resubmit(g, a)
		}
	}
}

// trySubmit queues a request for the pods the group still needs, once
// enough of them exist.
func (c *Core) trySubmit(g *group) {
	if g.state == rejected || g.state == invalid {
		return
	}
	if g.evictedBy != "" {
		return // preempted: placed whole again once nothing of it runs (preempt.go)
	}
	if g.yieldTo != "" {
		return // some of its pods were evicted for a preemptor, which comes first (preempt_pods.go)
	}
	if g.underway() {
		c.fillVacancies(g)
		c.joinPods(g)
		return
	}
	need := g.need()
	if need <= 0 {
		return
	}
	if c.unslottedCount(g) == 0 {
		return // nothing to ask with, nothing to judge early
	}
	free, missing := pickRoles(g, c.unslotted(g), need)
	if missing > 0 {
		c.checkEarly(g, free, len(free)+missing)
		return
	}
	submit := c.now
	if c.now < g.holdUntil {
		submit = g.heldSubmit
	}
	if g.hasLine {
		submit, g.hasLine = min(submit, g.lineAt), false
	}
	if mv := c.moves[g.id.Key]; mv != nil && !mv.lined {
		// Moved to make room: placed again first (preempt_move.go).
		submit, mv.lined = min(submit, mv.line), true
	}
	c.submitPods(g, free, submit)
}

// submitPods queues one request for the pods at the given place in line.
// A request the graph can never hold rejects its group.
func (c *Core) submitPods(g *group, pods []*Pod, submit int64) {
	if len(pods) == 0 {
		return
	}
	if !g.underway() {
		if why := c.beyondMin(g); why != "" {
			c.refuse(g, pods, why)
			return
		}
	}
	js, slots, err := c.groupRequest(g, pods, 0, Shape{})
	if err != nil {
		c.refuse(g, pods, "cannot be placed: "+err.Error())
		return
	}
	a := &alloc{id: c.newID(), js: js, submit: submit, nodeGen: c.nodeGen, dur: js.Duration, domain: g.planned, domainKey: g.plannedLevel}
	if g.id.TopologyPreferred != "" && g.id.TopologyKey == "" && a.domain == "" && a.domainKey == "" && !g.underway() {
		c.unmet[g.id.Key] = true
	}
	if g.id.TopologyKey != "" && a.domain != "" && !g.underway() {
		c.flat[g.id.Key] = true
	}
	for _, sg := range slots {
		for _, i := range sg.pods {
			a.pods = append(a.pods, pods[i].UID)
			a.slots = append(a.slots, &slot{shape: sg.shape, requires: filterKey(pods[i]), role: pods[i].Role})
		}
	}
	g.allocs = append(g.allocs, a)
	c.byAlloc[a.id] = g
	c.touch(g)
	g.priority = 0
	for _, p := range pods {
		g.priority = max(g.priority, p.Priority)
	}
	if g.id.HasPriority {
		g.priority = g.id.Priority
	}
	// A group held off after a node turned it away keeps its place in line
	// and may not start before the hold ends: it holds the reservation, so
	// the groups behind it cannot take what it waits for meanwhile.
	var notBefore int64
	if c.now < g.holdUntil {
		notBefore = g.holdUntil
	}
	c.markQueue()
	d, err := c.q.Submit(&queue.Group{ID: a.id, Name: g.id.Key, Priority: int64(g.priority), Submit: submit, NotBefore: notBefore, Jobspec: js})
	if err == nil && d.State == queue.Rejected {
		err = fmt.Errorf("%s", d.Reason)
	}
	if err != nil {
		c.dropAlloc(g, a)
		if len(g.avoid) > 0 {
			// Left out of the nodes that turned its pods away, the
			// group could never fit: judge it as it is (avoid.go).
			g.avoid, g.avoidSpent = nil, true
			c.submitPods(g, pods, submit)
			return
		}
		why := err.Error()
		if note := c.deviceNote(slotShapes(a), g.id.TopologyKey); note != "" {
			why += "; " + note
		}
		if onePerNode(js) {
			why += " (its pods may not share a node: each asks for a host port, or repels its like by a required pod anti-affinity on the hostname)"
		}
		c.refuse(g, pods, "cannot be placed on this cluster: "+why)
		return
	}
	if !g.underway() {
		g.state = queued
	}
}

// refuse handles a request that can never be placed: a group not yet
// underway is rejected; pods joining an underway group wait, and the
// group runs on (members.go).
func (c *Core) refuse(g *group, pods []*Pod, why string) {
	if c.judgeWhole() {
		c.touch(g) // asked again on the graph with every node
		return
	}
	if g.underway() {
		c.refuseJoin(g, pods, why)
		return
	}
	c.reject(g, why)
}

// unslottedCount is len(c.unslotted(g)), without sorting: a group whose
// pods are all bound (running, or ending one by one) answers at once.
func (c *Core) unslottedCount(g *group) int {
	return len(c.unslotted(g))
}

// hasUnbound reports whether a pod of the group is neither bound nor being
// deleted: one unslotted may return.
func (g *group) hasUnbound() bool {
	for _, p := range g.members {
		if p.NodeName == "" && !p.Deleting {
			return true
		}
	}
	return false
}

// unslotted returns the group's unbound pods that hold no slot and are
// not part of a queued request, oldest first; a pod that waits for an
// object (Pod.waits) is not among them.
func (c *Core) unslotted(g *group) []*Pod {
	if !g.hasUnbound() {
		return nil // the common case, a pod of a running group ending: no map, no sort
	}
	taken := map[string]bool{}
	for _, a := range g.allocs {
		for _, u := range a.pods {
			taken[u] = true
		}
		for _, s := range a.slots {
			if s.pod != "" {
				taken[s.pod] = true
			}
		}
	}
	var out []*Pod
	for _, p := range g.sortedMembers() {
		if !taken[p.UID] && p.NodeName == "" && !p.Deleting && !p.waits() {
			out = append(out, p)
		}
	}
	return out
}

// checkEarly rejects a group that cannot fit even before all its pods
// exist: the pods seen so far, plus one pod like the smallest of them
// (the least of each request, on any node) for each pod still missing,
// are already more than the cluster can ever hold (a PodGroup of 50 on 8
// nodes). Pods of one group usually share a template, so this catches
// impossible groups early; when it errs (the missing pods are smaller),
// the group is judged again as its pods arrive, and placed once they all
// exist and fit. It runs once per graph and number of pods seen.
func (c *Core) checkEarly(g *group, free []*Pod, need int) {
	if len(free) == 0 || (g.checked == c.graphGen && g.checkedPods == len(free)) || c.arrivals > 0 {
		return // (nodes waiting outside the graph: judged once they joined)
	}
	g.checked, g.checkedPods = c.graphGen, len(free)
	// Minimum resources are the group's whole, known before its pods.
	if why := c.beyondMin(g); why != "" {
		c.reject(g, why)
		return
	}
	// A group asking more pods than the nodes can hold at all is judged
	// without building a request: its size is whatever an object claims,
	// and a stand-in per missing pod would cost memory in proportion.
	if room := c.podRoom(); int64(g.id.Size) > room {
		c.reject(g, fmt.Sprintf("cannot be placed on this cluster: it needs %d pods, and the nodes can hold %d pods in all", g.id.Size, room))
		g.early = true
		return
	}
	smallest := free[0].Requests
	for _, p := range free[1:] {
		smallest.MilliCPU = min(smallest.MilliCPU, p.Requests.MilliCPU)
		smallest.MemoryBytes = min(smallest.MemoryBytes, p.Requests.MemoryBytes)
		smallest.GPU = min(smallest.GPU, p.Requests.GPU)
	}
	js, _, err := c.groupRequest(g, free, need-len(free), ShapeOf(smallest))
	if err != nil {
		c.reject(g, "cannot be placed: "+err.Error())
		g.early = true
		return
	}
	res, err := c.m.Match(match.Satisfiability, js, 0, c.now)
	c.fail("check-early", g.id.Key, err)
	if err == nil && res.Status != match.Satisfiable {
		c.reject(g, fmt.Sprintf("cannot be placed on this cluster (judged from %d of its %d pods, each missing pod counted as the smallest seen): %s: %s", len(free), g.id.Size, res.Status, res.Reason))
		g.early = true
	}
}

// Tick runs a queue loop when something may have changed: a group waits,
// the nodes changed, or a hold ended. The caller runs it when resources
// are freed and about once a second, so reservations come due and
// overrunning allocations are extended.
func (c *Core) Tick(now int64) {
	c.advance(now)
	if !c.rebuildDue() && c.q.Waiting() == 0 && !c.holdEnded() && !c.waitingGroups() && len(c.gathering) == 0 && len(c.joinDue) == 0 {
		return
	}
	engine := c.ensureEngine()
	c.tickGathering()
	if !engine {
		return
	}
	for _, g := range c.touchedGroups() {
		c.trySubmit(g)
	}
	c.schedule()
	if len(c.joinDue) > 0 {
		// Nothing else would ask for them: their pods were told to wait
		// when the group was reserved or still gathering, and a loop runs
		// only while something waits in the queue.
		for _, g := range c.groupsOf(c.joinDue) {
			c.trySubmit(g)
		}
		c.schedule()
	}
	c.rejudge()
}

// waitingGroups reports whether a group has pods enough to ask but no
// request (its request was dropped, say by a pod that went away).
func (c *Core) waitingGroups() bool {
	for key := range c.touched { // untouched groups were asked already
		g := c.groups[key]
		if g == nil || g.state == rejected || g.state == invalid || g.need() <= 0 {
			// Asking it would do nothing (touched.go): forget it.
			delete(c.touched, key)
			continue
		}
		if c.unslottedCount(g) >= g.need() {
			return true
		}
	}
	return false
}

// holdEnded reports whether a held group's hold is over, and forgets
// groups whose hold is over (the loop submits them now).
func (c *Core) holdEnded() bool {
	ended := false
	for _, key := range slices.Sorted(maps.Keys(c.held)) {
		if g := c.groups[key]; g == nil || c.now >= g.holdUntil {
			delete(c.held, key)
			ended = true
		}
	}
	return ended
}

// schedule runs one queue loop and applies its decisions.
func (c *Core) schedule() {
	c.refreshRequests()
	c.extendOverruns()
	ds, err := c.q.Schedule(c.now)
	c.markQueue()
	if c.cfg.Observe != nil {
		c.cfg.Observe(LoopStats{Decisions: len(ds)})
	}
	for _, d := range ds {
		g := c.byAlloc[d.Group.ID]
		if g == nil {
			continue
		}
		a := g.allocByID(d.Group.ID)
		if a == nil {
			continue
		}
		c.markGroup(g)
		if d.State == queue.Reserved || d.State == queue.Pending || d.State == queue.Blocked {
			key := waitKey{state: d.State, at: d.At, reason: d.Reason}
			if g.waited.key == key && g.waited.reason == g.reason && g.waited.event == g.lastEvent && g.waited.cond == g.lastCondition {
				// The same answer as last loop, and nothing said since:
				// saying it again would change nothing.
				if d.State != queue.Reserved {
					c.setReservedAt(g, -1)
				} else {
					c.setReservedAt(g, d.At)
				}
				continue
			}
			c.waiting(g, a, d)
			g.waited = waitNote{key: key, reason: g.reason, event: g.lastEvent, cond: g.lastCondition}
			continue
		}
		switch d.State {
		case queue.Running:
			c.started(g, a, d.At)
		case queue.Rejected:
			c.dropAlloc(g, a)
			c.refuse(g, c.podsByUID(g, a.pods), "cannot be placed on this cluster: "+d.Reason)
		}
	}
	// A failed loop left the queue consistent and the next one tries
	// again, but a loop that keeps failing is a bug to see.
	c.fail("schedule", "", err)
	c.preempt()
}

// waiting records a decision that leaves the group waiting: reserved at
// a time, or not.
func (c *Core) waiting(g *group, a *alloc, d queue.Decision) {
	if g.underway() {
		// A pod joining a running group waits: the group is not waiting,
		// and its condition says whether it is whole. The pod's own
		// cycle reports the reason.
		g.reason = "has a pod waiting to join: " + shortReason(d.Reason)
		if d.State == queue.Reserved {
			c.setReservedAt(g, d.At)
			g.reason = fmt.Sprintf("has a pod waiting to join, reserved to start at %s (%s)", c.cfg.FormatTime(d.At), shortReason(d.Reason))
		} else {
			c.setReservedAt(g, -1)
		}
		return
	}
	if d.State == queue.Reserved {
		c.setReservedAt(g, d.At)
		why := shortReason(d.Reason)
		if note := c.domainWait(g, a, true); note != "" {
			why = note
		}
		g.reason = fmt.Sprintf("waiting for resources; reserved to start at %s (%s)", c.cfg.FormatTime(d.At), why)
		c.condition(g, Waiting, g.reason)
		c.explain(g, false, "FluenceGroupReserved", fmt.Sprintf("pod group %s (%d pods) %s", g.id.Key, g.id.Size, g.reason))
		return
	}
	c.setReservedAt(g, -1)
	g.reason = "waiting for resources: " + shortReason(d.Reason)
	if note := c.domainWait(g, a, false); note != "" {
		g.reason += " (" + note + ")"
	}
	if note := c.deviceNote(slotShapes(a), g.id.TopologyKey); note != "" {
		g.reason += "; " + note
	}
	c.condition(g, Waiting, g.reason)
	c.explain(g, false, "FluenceGroupWaiting", fmt.Sprintf("pod group %s (%d pods) is %s", g.id.Key, g.id.Size, g.reason))
}

func shortReason(r string) string {
	if r == "" {
		return "the cluster is busy"
	}
	return r
}

// started records where the engine put an allocation's pods and wakes
// them.
func (c *Core) started(g *group, a *alloc, at int64) {
	info, ok := c.m.Info(a.id)
	if !ok || len(info.Slots) != len(a.slots) {
		// The engine started a job the core cannot read as this
		// allocation: take it out of the engine and ask again, at the
		// same place in line, rather than leave it holding nodes for pods
		// that were never told.
		err := fmt.Errorf("the engine started job %d without its placement", a.id)
		if ok {
			err = fmt.Errorf("the engine started job %d with %d slots, the allocation has %d", a.id, len(info.Slots), len(a.slots))
		}
		c.fail("started", g.id.Key, err)
		c.resubmit(g, a)
		return
	}
	joining := g.underway()
	g.everPlaced, g.joinRefused, g.preemptNote = true, "", ""
	c.touch(g)
	a.running, a.start, a.began = true, at, at
	a.placing = !joining
	a.dur = info.Duration
	c.planned(g, a)
	a.recorded = fmt.Sprintf("%s@%s-%d", g.id.Key, c.cfg.RunID, a.id)
	for i, sp := range info.Slots {
		a.slots[i].node = sp.Node
		a.slots[i].pod = a.pods[i]
		if p := g.members[a.pods[i]]; p != nil {
			a.slots[i].name = p.String()
		}
	}
	if a.domainKey != "" {
		a.domain = c.domainOfAlloc(a)
	}
	c.claimsPlaced(a)
	a.pods = nil
	c.setReservedAt(g, -1)
	g.reason, g.state = "", gathering
	if g.liveSlots()+len(g.finished) >= int(g.id.Size) {
		g.state = placed
	}
	for _, s := range a.slots {
		if p := g.members[s.pod]; p != nil {
			c.fx.activatePod(p.ref())
		}
	}
	if c.unslottedCount(g) > 0 {
		c.joinDue[g.id.Key] = true
	}
	if joining {
		return // the group was placed before; its whole condition tells
	}
	c.condition(g, Scheduled, fmt.Sprintf("%d pods placed", len(a.slots)))
	c.placedIn(g, a)
	if len(a.slots) == 1 {
		return // the scheduler's own Scheduled event says it all
	}
	var where []string
	for _, n := range info.Nodes {
		where = append(where, n.Name)
	}
	c.explain(g, false, "FluenceGroupPlaced", fmt.Sprintf("pod group %s: %d pods placed on %s%s", g.id.Key, len(a.slots), joinNames(where), c.domainNote(g, a)))
}

// extendOverruns lengthens allocations about to pass their planned end:
// their pods still run and still hold what they use. A Kubernetes pod is
// not killed at its declared duration as a Flux job would be.
func (c *Core) extendOverruns() {
	for _, w := range c.overruns() {
		a := w.a
		// Small steps: a job just past its end usually ends soon, and
		// every step pushes the reservations behind it.
		nd := (c.now - a.start) + max(a.dur/10, c.seconds(2))
		if c.unplaced[a.id] {
			continue // the engine holds nothing of it to extend
		}
		c.markQueue()
		if err := c.q.Extend(a.id, nd); err == nil {
			a.dur = nd
		} else {
			c.fail("extend", w.g.id.Key, err)
		}
		c.planned(w.g, a) // unchanged if the extension failed: tried again next loop
	}
}

// beyondMin says why the group's minimum resources (GroupID.MinResources)
// are more than the nodes' allocatable summed, all the cluster could ever
// offer; "" when they are not. Down nodes count: they may come back, as
// a group that fits only with them waits rather than being rejected.
// Only the whole is judged, as the coscheduling plugin judges
// minResources: whether the room is free now, and how it is spread over
// nodes, is for the group's pods' own requests.
func (c *Core) beyondMin(g *group) string {
	want := g.id.MinResources
	if want == (Resources{}) {
		return ""
	}
	var have Resources
	for _, n := range c.nodes {
		have.MilliCPU = addSat(have.MilliCPU, n.Allocatable.MilliCPU)
		have.MemoryBytes = addSat(have.MemoryBytes, n.Allocatable.MemoryBytes)
		have.GPU = addSat(have.GPU, n.Allocatable.GPU)
	}
	have.Pods = c.podRoom()
	var short []string
	for _, r := range []struct {
		name       string
		want, have int64
		format     func(int64) string
	}{
		{"cpu", want.MilliCPU, have.MilliCPU, func(v int64) string { return fmt.Sprintf("%dm", v) }},
		{"memory", want.MemoryBytes, have.MemoryBytes, formatBytes},
		{"GPUs", want.GPU, have.GPU, func(v int64) string { return fmt.Sprint(v) }},
		{"pods", want.Pods, have.Pods, func(v int64) string { return fmt.Sprint(v) }},
	} {
		if r.want > r.have {
			short = append(short, fmt.Sprintf("%s %s, the nodes have %s allocatable in all", r.name, r.format(r.want), r.format(r.have)))
		}
	}
	if len(short) == 0 {
		return ""
	}
	what := "its minimum resources ask"
	if g.id.Source == SourcePodGroup {
		what = fmt.Sprintf("PodGroup %s/%s asks in spec.minResources", g.id.Namespace, g.id.Name)
	}
	return fmt.Sprintf("cannot be placed on this cluster: %s for more than all the nodes offer: %s", what, strings.Join(short, "; "))
}

// formatBytes writes a memory amount as Kubernetes would: in Gi or Mi
// when it is a whole number of them, else in bytes.
func formatBytes(v int64) string {
	switch {
	case v != 0 && v%(1<<30) == 0:
		return fmt.Sprintf("%dGi", v>>30)
	case v != 0 && v%(1<<20) == 0:
		return fmt.Sprintf("%dMi", v>>20)
	}
	return fmt.Sprint(v)
}

// podRoom is how many pods the nodes can hold in all.
func (c *Core) podRoom() int64 {
	var n int64
	for _, node := range c.nodes {
		p := node.Allocatable.Pods
		if p <= 0 {
			p = DefaultMaxPods
		}
		if n > math.MaxInt64-p {
			return math.MaxInt64 // more than any group can ask
		}
		n += p
	}
	return n
}
