package plugin

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/k8sadapter"
	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/queue"
)

// ensureEngine rebuilds the graph when the nodes changed. The graph's
// structure is fixed once built, so a node change means a new graph and a
// replay of everything that holds resources: allocations at their nodes,
// foreign pods at theirs, and the queued requests in their order.
func (c *cluster) ensureEngine(fx *effects) {
	if !c.dirty && c.m != nil {
		return
	}
	c.dirty = false
	c.rebuilds++
	nodes := make([]*corev1.Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		nodes = append(nodes, n)
	}
	g, err := k8sadapter.BuildGraph(nodes, c.opts)
	if err == nil && g == nil {
		err = fmt.Errorf("no graph")
	}
	if err != nil {
		// Nodes come from the API server; a node the adapter refuses is
		// a bug or a corrupt object. Keep the old picture and say so.
		c.log.Error(err, "fluence: cannot build the resource graph from the nodes; keeping the previous one")
		return
	}
	m, err := match.New(g, match.Options{Policy: c.cfg.MatchPolicy})
	if err != nil {
		c.log.Error(err, "fluence: matcher")
		return
	}
	q, err := queue.New(m, c.cfg.Queue)
	if err != nil {
		c.log.Error(err, "fluence: queue")
		return
	}
	c.m, c.q = m, q
	c.overloaded = map[string]bool{}
	c.foreignJob = map[string]int64{}
	now := c.now()

	// Allocations first: they were placed by this scheduler and checked;
	// foreign pods that no longer fit beside them mark their node.
	var requeue []*alloc
	for _, gr := range c.sortedGroups() {
		// A node change can make a rejected group possible.
		if gr.state == rejected {
			gr.state, gr.reason = gathering, ""
		}
		kept := gr.allocs[:0]
		for _, a := range gr.allocs {
			if !a.running {
				requeue = append(requeue, a)
				kept = append(kept, a)
				continue
			}
			if c.replay(gr, a, now, fx) {
				kept = append(kept, a)
			}
		}
		gr.allocs = kept
	}
	for _, node := range slices.Sorted(maps.Keys(c.foreign)) {
		c.placeForeign(node)
	}
	// Replays and foreign load that no longer fit mark nodes overloaded.
	for _, node := range slices.Sorted(maps.Keys(c.overloaded)) {
		c.withdrawOverloaded(node, fx)
	}
	slices.SortFunc(requeue, func(a, b *alloc) int { return cmp.Compare(a.id, b.id) })
	for _, a := range requeue {
		gr := c.byAlloc[a.id]
		c.submitAlloc(gr, a, fx)
	}
}

// replay commits a running allocation on a fresh graph at its nodes. Slots
// on nodes that are gone are dropped (their pods went with the node). It
// reports whether the allocation still holds anything.
func (c *cluster) replay(gr *group, a *alloc, now int64, fx *effects) bool {
	var keep []*slot
	for _, s := range a.slots {
		if _, ok := c.nodes[s.node]; !ok || s.done {
			continue
		}
		keep = append(keep, s)
	}
	if len(keep) == 0 {
		delete(c.byAlloc, a.id)
		return false
	}
	a.slots = keep
	shapes := make([]jobspec.PodShape, len(keep))
	for i, s := range keep {
		shapes[i] = s.shape
	}
	rs, order, err := jobspec.PodGroup(shapes)
	if err == nil {
		rem := int64(0)
		if a.dur > 0 {
			rem = max(1, a.start+a.dur-now)
		}
		a.js, err = jobspec.New(rs...).Duration(rem).Build()
		a.start, a.dur = now, rem
	}
	if err != nil {
		c.log.Error(err, "fluence: cannot replay allocation", "group", gr.id.Key)
		return true
	}
	// PodGroup orders slots by shape; reorder ours to match.
	var ordered []*slot
	var vertices []int32
	for _, ss := range order {
		for _, i := range ss.Pods {
			ordered = append(ordered, keep[i])
			vertices = append(vertices, c.nodeVertex(keep[i].node))
		}
	}
	a.slots = ordered
	d, err := c.q.Place(&queue.Group{ID: a.id, Name: gr.id.Key, Submit: now, Jobspec: a.js}, vertices, now)
	if err != nil || d.State != queue.Running {
		why := ""
		if err != nil {
			why = err.Error()
		} else {
			why = d.Reason
		}
		// The pods are there whatever the engine thinks: keep them out of
		// the engine's way by marking their nodes overloaded.
		for _, s := range a.slots {
			c.setOverloaded(s.node, true)
		}
		c.log.Info("fluence: a recorded allocation does not fit the current graph; its nodes take no new work", "group", gr.id.Key, "reason", why)
	}
	return true
}

func (c *cluster) nodeVertex(name string) int32 {
	g := c.m.Graph()
	for _, v := range g.ByName(name) {
		if g.NodeOf(v) == v {
			return v
		}
	}
	return -1
}

// setOverloaded marks a node as taking no new work (or clears the mark);
// a node that is down on its own (cordoned, NotReady) stays down.
func (c *cluster) setOverloaded(node string, on bool) {
	if c.overloaded[node] == on {
		return
	}
	v := c.nodeVertex(node)
	if v < 0 {
		return
	}
	if on {
		c.overloaded[node] = true
		_ = c.m.MarkDown(v)
		return
	}
	delete(c.overloaded, node)
	if n := c.nodes[node]; n != nil && !k8sadapter.NodeDown(n) {
		_ = c.m.MarkUp(v)
	}
}

// placeForeign (re)commits the summed requests of the node's foreign pods
// as one engine job.
func (c *cluster) placeForeign(node string) {
	if c.m == nil {
		return
	}
	if id, ok := c.foreignJob[node]; ok {
		_ = c.q.Remove(id)
		delete(c.foreignJob, node)
	}
	pods := c.foreign[node]
	if len(pods) == 0 {
		delete(c.foreign, node)
		c.setOverloaded(node, false)
		return
	}
	v := c.nodeVertex(node)
	if v < 0 {
		return // the node is not known yet; the next rebuild places them
	}
	var sum k8sadapter.Requests
	for _, r := range pods {
		sum.MilliCPU += r.MilliCPU
		sum.MemoryBytes += r.MemoryBytes
		sum.GPU += r.GPU
	}
	rs, _, err := jobspec.PodGroup([]jobspec.PodShape{k8sadapter.PodShape(sum)})
	var js *jobspec.Jobspec
	if err == nil {
		js, err = jobspec.New(rs...).Build()
	}
	if err != nil {
		c.log.Error(err, "fluence: foreign pods", "node", node)
		return
	}
	id := c.newID()
	d, err := c.q.Place(&queue.Group{ID: id, Name: "foreign/" + node, Jobspec: js}, []int32{v}, c.now())
	if err != nil || d.State != queue.Running {
		c.setOverloaded(node, true)
		return
	}
	c.foreignJob[node] = id
	c.setOverloaded(node, false)
}

// submitAlloc queues an allocation request. A request the graph can never
// hold rejects its group.
func (c *cluster) submitAlloc(gr *group, a *alloc, fx *effects) {
	// A group held off after a node turned it away keeps its place in line
	// and may not start before the hold ends: it holds the reservation, so
	// the groups behind it cannot take the nodes it waits for meanwhile.
	a.submit = c.now()
	var notBefore int64
	if c.now() < gr.holdUntil {
		a.submit, notBefore = gr.heldSubmit, gr.holdUntil
	}
	d, err := c.q.Submit(&queue.Group{ID: a.id, Name: gr.id.Key, Priority: int64(gr.priority), Submit: a.submit, NotBefore: notBefore, Jobspec: a.js})
	if err == nil && d.State == queue.Rejected {
		err = fmt.Errorf("%s", d.Reason)
	}
	if err != nil {
		c.dropAlloc(gr, a)
		c.reject(gr, "cannot be placed on this cluster: "+err.Error(), fx)
	}
}

// reject marks a group impossible and tells its pods why.
func (c *cluster) reject(gr *group, why string, fx *effects) {
	gr.state, gr.reason = rejected, why
	if gr.id.Source == GroupSourcePodGroup {
		fx.podGroups = append(fx.podGroups, podGroupCondition{namespace: gr.id.Namespace, name: gr.id.Name,
			reason: "Unsatisfiable", message: why})
	}
	c.explain(gr, corev1.EventTypeWarning, "FluenceGroupRejected", fmt.Sprintf("pod group %s (%d pods): %s", gr.id.Key, gr.id.Size, why), fx)
}

// explain records an event unless it repeats the last one of the group:
// warnings go to every pod of the group, progress (waiting, reserved,
// placed) to its first pod only, to keep the event stream readable.
func (c *cluster) explain(gr *group, typ, reason, note string, fx *effects) {
	if gr.lastEvent == reason+note {
		return
	}
	gr.lastEvent = reason + note
	for i, p := range sortedPods(gr.members) {
		if i > 0 && typ != corev1.EventTypeWarning {
			break
		}
		fx.events = append(fx.events, event{pod: p, typ: typ, reason: reason, note: note})
	}
}

func (c *cluster) dropAlloc(gr *group, a *alloc) {
	gr.allocs = slices.DeleteFunc(gr.allocs, func(x *alloc) bool { return x == a })
	delete(c.byAlloc, a.id)
}

// unslotted returns the group's member pods that hold no slot and are not
// part of a queued request, oldest first.
func (c *cluster) unslotted(gr *group) []*corev1.Pod {
	taken := map[types.UID]bool{}
	for _, a := range gr.allocs {
		for _, u := range a.pods {
			taken[u] = true
		}
		for _, s := range a.slots {
			if s.pod != "" {
				taken[s.pod] = true
			}
		}
	}
	var out []*corev1.Pod
	for _, p := range sortedPods(gr.members) {
		if !taken[p.UID] && p.Spec.NodeName == "" {
			out = append(out, p)
		}
	}
	return out
}

// sortedPods orders pods by creation time, then name.
func sortedPods(m map[types.UID]*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int {
		if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// need is how many more pods the group must place to be whole.
func (gr *group) need() int {
	return int(gr.id.Size) - gr.liveSlots() - gr.queuedPods()
}

func (gr *group) queuedPods() int {
	n := 0
	for _, a := range gr.allocs {
		if !a.running {
			n += len(a.pods)
		}
	}
	return n
}

// trySubmit queues a request for the pods the group still needs, once
// enough of them exist.
func (c *cluster) trySubmit(gr *group, fx *effects) {
	if gr.state == rejected || gr.state == invalid {
		return
	}
	need := gr.need()
	if need <= 0 {
		return
	}
	free := c.unslotted(gr)
	if len(free) < need {
		c.checkEarly(gr, free, need, fx)
		return
	}
	pods := free[:need]
	js, order, err := c.groupRequest(gr, pods, 0)
	if err != nil {
		c.reject(gr, err.Error(), fx)
		return
	}
	a := &alloc{id: c.newID(), js: js}
	for _, ss := range order {
		for _, i := range ss.Pods {
			a.pods = append(a.pods, pods[i].UID)
			a.slots = append(a.slots, &slot{shape: k8sadapter.PodShape(c.opts.PodRequests(pods[i]))})
		}
	}
	a.dur = js.Duration
	gr.allocs = append(gr.allocs, a)
	c.byAlloc[a.id] = gr
	gr.priority = 0
	for _, p := range pods {
		gr.priority = max(gr.priority, corev1helpers.PodPriority(p))
	}
	c.submitAlloc(gr, a, fx)
}

// checkEarly rejects a group that cannot fit even before all its pods
// exist: the pods seen so far, plus the smallest pod possible (one core,
// nothing else, any node) for each one still missing, are already more
// than the cluster can ever hold (a PodGroup of 50 on 8 nodes). The
// estimate is a lower bound, so a group that could fit is never rejected
// by it. It runs once per group and graph.
func (c *cluster) checkEarly(gr *group, free []*corev1.Pod, need int, fx *effects) {
	if len(free) == 0 || gr.checked == c.rebuilds {
		return
	}
	gr.checked = c.rebuilds
	js, _, err := c.groupRequest(gr, free, need-len(free))
	if err != nil {
		c.reject(gr, err.Error(), fx)
		return
	}
	res, err := c.m.Match(match.Satisfiability, js, 0, c.now())
	if err == nil && res.Status != match.Satisfiable {
		c.reject(gr, fmt.Sprintf("cannot be placed on this cluster (judged from %d of its %d pods, the rest counted as one core each): %s: %s", len(free), gr.id.Size, res.Status, res.Reason), fx)
	}
}

// groupRequest builds the jobspec of some of a group's pods, plus standIns
// slots of one core on any node for pods not seen yet: one slot per pod,
// their duration, and where each pod may go (its node selector, required
// affinity, requires annotation and taint tolerations). When every pod
// asks for the same nodes that is the job's constraint; otherwise each
// pod's slot carries its own, so a launcher and its workers may ask for
// different node pools.
func (c *cluster) groupRequest(gr *group, pods []*corev1.Pod, standIns int) (*jobspec.Jobspec, []k8sadapter.ShapeSlots, error) {
	nodes := c.nodeList()
	var dur int64
	requires := make([]*jobspec.Constraint, len(pods), len(pods)+standIns)
	for i, p := range pods {
		d, err := k8sadapter.DurationOf(p)
		if err != nil {
			return nil, nil, err
		}
		dur = max(dur, d)
		var parts []*jobspec.Constraint
		con, err := k8sadapter.NodeConstraint(p, nodes)
		if err != nil {
			return nil, nil, err
		}
		if con != nil {
			parts = append(parts, con)
		}
		if con, err := c.tolerationConstraint(p, nodes); err != nil {
			return nil, nil, err
		} else if con != nil {
			parts = append(parts, con)
		}
		switch len(parts) {
		case 0:
		case 1:
			requires[i] = parts[0]
		default:
			requires[i] = jobspec.And(parts...)
		}
	}
	all := pods
	if standIns > 0 {
		minimal := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: gr.id.Namespace, Name: "(not yet created)"}}
		minimal.Spec.Containers = []corev1.Container{{Name: "stand-in"}}
		all = slices.Clone(pods)
		for range standIns {
			all = append(all, minimal)
			requires = append(requires, nil)
		}
	}
	if dur == 0 {
		dur = c.cfg.DefaultDuration
	}
	// One constraint shared by every pod stays the job's: its explanation
	// then counts the nodes it excludes.
	if shared := requires[0]; shared != nil && !slices.ContainsFunc(requires, func(r *jobspec.Constraint) bool { return r == nil || !r.Equal(shared) }) {
		return k8sadapter.GroupJobspec(all, dur, shared, nil, c.opts)
	}
	if !slices.ContainsFunc(requires, func(r *jobspec.Constraint) bool { return r != nil }) {
		requires = nil
	}
	return k8sadapter.GroupJobspec(all, dur, nil, requires, c.opts)
}

// tolerationConstraint excludes the nodes with a NoSchedule or NoExecute
// taint the pod does not tolerate (the TaintToleration filter would turn
// the pod away there). nil when no node is excluded.
func (c *cluster) tolerationConstraint(p *corev1.Pod, nodes []*corev1.Node) (*jobspec.Constraint, error) {
	var bad, why []string
	for _, n := range nodes {
		t, found := corev1helpers.FindMatchingUntoleratedTaint(c.log, n.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
		if found {
			bad = append(bad, n.Name)
			if len(why) < 3 {
				why = append(why, n.Name+" has "+t.ToString())
			}
		}
	}
	if len(bad) == 0 {
		return nil, nil
	}
	if len(bad) == len(nodes) {
		return nil, fmt.Errorf("pod %s tolerates the taints of none of the %d nodes (%s)", describePod(p), len(nodes), strings.Join(why, "; "))
	}
	return jobspec.Not(jobspec.Hosts(bad...)), nil
}

// schedule runs one queue loop and applies its decisions.
func (c *cluster) schedule(fx *effects) {
	c.ensureEngine(fx)
	if c.m == nil {
		return
	}
	now := c.now()
	c.extendOverruns(now)
	start := time.Now()
	ds, err := c.q.Schedule(now)
	loopDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		c.log.Error(err, "fluence: queue loop")
		return
	}
	for _, d := range ds {
		gr := c.byAlloc[d.Group.ID]
		if gr == nil {
			continue
		}
		a := gr.allocByID(d.Group.ID)
		if a == nil {
			continue
		}
		switch d.State {
		case queue.Running:
			c.started(gr, a, d.At, fx)
		case queue.Reserved:
			gr.reservedAt = d.At
			gr.reason = fmt.Sprintf("waiting for resources; reserved to start at %s (%s)", c.wallTime(d.At).Format(time.RFC3339), shortReason(d.Reason))
			c.explain(gr, corev1.EventTypeNormal, "FluenceGroupReserved", fmt.Sprintf("pod group %s (%d pods) %s", gr.id.Key, gr.id.Size, gr.reason), fx)
		case queue.Pending, queue.Blocked:
			gr.reservedAt = -1
			gr.reason = "waiting for resources: " + shortReason(d.Reason)
			c.explain(gr, corev1.EventTypeNormal, "FluenceGroupWaiting", fmt.Sprintf("pod group %s (%d pods) is %s", gr.id.Key, gr.id.Size, gr.reason), fx)
		case queue.Rejected:
			c.dropAlloc(gr, a)
			c.reject(gr, "cannot be placed on this cluster: "+d.Reason, fx)
		}
	}
}

// wallTime converts engine seconds to a wall-clock time.
func (c *cluster) wallTime(t int64) time.Time { return c.epoch.Add(time.Duration(t) * time.Second) }

func shortReason(r string) string {
	if r == "" {
		return "the cluster is busy"
	}
	return r
}

func (gr *group) allocByID(id int64) *alloc {
	for _, a := range gr.allocs {
		if a.id == id {
			return a
		}
	}
	return nil
}

// started records where the engine put an allocation's pods and wakes
// them.
func (c *cluster) started(gr *group, a *alloc, at int64, fx *effects) {
	info, ok := c.m.Info(a.id)
	if !ok || len(info.Slots) != len(a.slots) {
		c.log.Error(nil, "fluence: allocation without its slots", "group", gr.id.Key, "job", a.id)
		return
	}
	a.running, a.start = true, at
	gr.holdStep = 0
	a.dur = info.Duration
	a.recorded = fmt.Sprintf("%s@%d-%d", gr.id.Key, c.epoch.UnixNano(), a.id)
	for i, sp := range info.Slots {
		a.slots[i].node = sp.Node
		a.slots[i].pod = a.pods[i]
	}
	a.pods = nil
	gr.reservedAt, gr.reason = -1, ""
	for _, s := range a.slots {
		if p := gr.members[s.pod]; p != nil {
			fx.activatePod(p)
		}
	}
	if gr.id.Source == GroupSourcePodGroup {
		fx.podGroups = append(fx.podGroups, podGroupCondition{namespace: gr.id.Namespace, name: gr.id.Name,
			schedulable: true, reason: "Placed", message: fmt.Sprintf("%d pods placed", len(a.slots))})
	}
	if len(a.slots) == 1 {
		return // the scheduler's own Scheduled event says it all
	}
	var where []string
	for _, n := range info.Nodes {
		where = append(where, n.Name)
	}
	c.explain(gr, corev1.EventTypeNormal, "FluenceGroupPlaced", fmt.Sprintf("pod group %s: %d pods placed on %s", gr.id.Key, len(a.slots), strings.Join(where, ",")), fx)
}

// extendOverruns lengthens allocations about to pass their planned end:
// their pods still run and still hold what they use. A Kubernetes pod is
// not killed at its declared duration as a Flux job would be.
func (c *cluster) extendOverruns(now int64) {
	if now == c.lastExtend {
		return
	}
	c.lastExtend = now
	for _, gr := range c.sortedGroups() {
		for _, a := range gr.allocs {
			if !a.running || a.dur <= 0 || a.start+a.dur > now+1 {
				continue
			}
			// Small steps: a job just past its end usually ends soon, and
			// every step pushes the reservations behind it.
			nd := (now - a.start) + max(a.dur/10, 2)
			if err := c.q.Extend(a.id, nd); err != nil {
				c.log.Error(err, "fluence: extending an overrunning allocation", "group", gr.id.Key)
				continue
			}
			a.dur = nd
		}
	}
}

// nodeList returns the nodes in name order, cached until they change.
func (c *cluster) nodeList() []*corev1.Node {
	if c.nodesSorted == nil {
		c.nodesSorted = make([]*corev1.Node, 0, len(c.nodes))
		for _, name := range slices.Sorted(maps.Keys(c.nodes)) {
			c.nodesSorted = append(c.nodesSorted, c.nodes[name])
		}
	}
	return c.nodesSorted
}
