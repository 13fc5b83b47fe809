package gang

import (
	"maps"
	"slices"
	"strings"
)

// Publishing: inspection and statistics without a scan under the caller's
// lock. Snapshot and Stats walk every group and node (and, for every
// group that waits, every node it may use: groups x nodes); a caller that
// serialises the core with a lock would hold it for that walk at every
// inspection request. Instead the caller calls Publish, under its lock,
// when a reader needs the state (an inspection request, the gauges once a
// second): the core renders again only what changed since the last
// Publish and returns an immutable Published that any number of readers
// may use concurrently, without the lock, while the core goes on. Nothing
// is rendered until asked, so the scheduling path does not pay for it.
//
// What changed is tracked as the loop's request step tracks it
// (touched.go): every group touched since the last Publish is rendered
// again, with the groups the queue loop decided on, those whose hold ended
// and any marked (markGroup) where their state changes without a touch.
// A node is rendered again when it changed itself (markNode: added,
// removed, relabelled, up or down, overloaded, its foreign pods) or when
// the pods a group holds on it changed (found by comparing what each
// re-rendered group holds on each node before and after). What the nodes
// have free for a waiting group's pods depends on every node, so it is
// kept per set of nodes those pods may use (any node, or those some node
// filters admit: groups share a few) and updated by the nodes rendered
// again; the reader fills it into the groups. The queue listing is
// rendered again when the queue loop ran or a queued group changed, from
// the queued groups only; the graph summary when the graph or a node
// changed. Publish therefore costs in proportion to what changed, not to
// groups x nodes, and nothing at all once the core is idle.
//
// Tests check, after every step of every script and of the fuzz corpus,
// that the published snapshot and statistics equal Snapshot and Stats.

// Published is the core's state as of a Publish: immutable, safe for
// concurrent use.
type Published struct {
	now    int64
	head   Snapshot // the settings (snapshotHead)
	groups plist[*groupPub]
	free   map[string]freeOn // by node set (sigKey)
	nodes  plist[*NodeStatus]
	queue  []QueueEntry
	graph  GraphSummary
	stats  Stats
}

func groupPubKey(g *groupPub) string     { return g.st.ID.Key }
func nodeStatusKey(n *NodeStatus) string { return n.Name }

// freeOn is what the nodes of one node set that take new work have free.
type freeOn struct {
	eligible          int
	free, largestFree Resources
}

// Now is the core's time at the Publish: the last event it saw.
func (p *Published) Now() int64 { return p.now }

// Snapshot returns the published state as Core.Snapshot(now) returned it
// at the Publish (Now is the later of now and the core's time then). The
// groups, nodes and queue are copied; what they share with other
// snapshots (the slices inside a group's or node's status, the graph) is
// not to be modified.
func (p *Published) Snapshot(now int64) Snapshot {
	s := p.head
	if s.Preemption != nil {
		cp := *s.Preemption
		s.Preemption = &cp
	}
	s.Levels = slices.Clone(s.Levels)
	s.Now = max(now, p.now)
	if p.groups.n > 0 {
		s.Groups = make([]GroupStatus, p.groups.n)
	}
	p.groups.all(func(i int, g *groupPub) {
		s.Groups[i] = *g.st
		if g.sig != "" {
			f := p.free[g.sig]
			s.Groups[i].Eligible, s.Groups[i].Free, s.Groups[i].LargestFree = f.eligible, f.free, f.largestFree
		}
	})
	s.Nodes = make([]NodeStatus, p.nodes.n)
	p.nodes.all(func(i int, n *NodeStatus) { s.Nodes[i] = *n })
	s.Queue = append(make([]QueueEntry, 0, len(p.queue)), p.queue...)
	s.Graph = p.graph
	return s
}

// GroupStatuses returns the published groups in key order, as rendered:
// shared by every reader and never changed (a group rendered again is a
// new value), so a reader may keep what it derives from one under its
// address. What their waiting pods' nodes have free (Eligible, Free,
// LargestFree) is not in them: Snapshot fills it in.
func (p *Published) GroupStatuses() []*GroupStatus {
	out := make([]*GroupStatus, p.groups.n)
	p.groups.all(func(i int, g *groupPub) { out[i] = g.st })
	return out
}

// HasGroup reports whether a group of the key is published.
func (p *Published) HasGroup(key string) bool {
	_, _, found := p.groups.find(key, groupPubKey)
	return found
}

// Stats returns the published figures, as Core.Stats returned them at
// the Publish.
func (p *Published) Stats() Stats {
	s := p.stats
	s.Groups = maps.Clone(s.Groups)
	return s
}

// publisher is what Publish keeps between calls; nil until the first.
type publisher struct {
	last *Published

	// groups are the listed (not dormant) groups as last rendered.
	groups map[string]*groupPub
	// list is the published groups, by key.
	list plist[*groupPub]
	// dirtyGroups are the keys of groups to render again.
	dirtyGroups map[string]bool
	// held are the keys of groups rendered with a hold: rendered again
	// when the hold ends.
	held map[string]bool
	// queued are the keys of groups with a request in the queue.
	queued     map[string]bool
	queueDirty bool

	// onNode is what each group holds on each node: node -> key.
	onNode map[string]map[string]nodeHold
	nodes  map[string]*nodePub
	// nodeList is the published nodes, by name.
	nodeList   plist[*NodeStatus]
	dirtyNodes map[string]bool
	// foreign is the foreign load on each node, for Stats (a node may
	// hold foreign pods before or after it is known).
	foreign map[string]Resources

	sigs map[string]*sigAgg

	graphDirty bool
	graphOf    graphKey

	stats Stats
}

// groupPub is a group as last rendered, never changed once made: the
// published list holds it. Its status lacks what its waiting pods' nodes
// have free, which is Published.free[sig] ("" when none wait).
type groupPub struct {
	st      *GroupStatus
	sig     string
	filters map[string]NodeFilter
	on      map[string]nodeHold
	stat    groupStat
}

// nodeHold is what a group's live slots hold on a node.
type nodeHold struct {
	pods int
	res  Resources
}

// groupStat is a group's share of Stats.
type groupStat struct {
	phase            string
	reserved         bool
	queued           int
	allocated        Resources
	hasQueuedRequest bool
}

// nodePub is a node as last rendered.
type nodePub struct {
	st          *NodeStatus
	takes       bool // up and not overloaded
	free        Resources
	allocatable Resources // as the node reports it, for Stats
}

// sigAgg is what the nodes of one node set that take new work have free,
// kept up to date as nodes change.
type sigAgg struct {
	anyNode bool
	filters []NodeFilter
	users   int
	// admits: the node set's nodes among those known.
	admits map[string]bool
	f      freeOn
	// atMost counts the nodes whose free equals f.largestFree, per
	// resource; rescan: a node that had the most has less now, so the
	// most is found again.
	atMost [4]int
	rescan bool
	fresh  bool
}

// graphKey is what the graph summary was last rendered from.
type graphKey struct {
	gen          int64
	dirty, built bool
	arrivals     int
}

// markGroup records that a group's inspection status changed where no
// touch says so.
func (c *Core) markGroup(g *group) {
	if c.pub != nil && g != nil {
		c.pub.dirtyGroups[g.id.Key] = true
	}
}

// markKey is markGroup by key ("": none).
func (c *Core) markKey(key string) {
	if c.pub != nil && key != "" {
		c.pub.dirtyGroups[key] = true
	}
}

// markNode records that a node changed in itself; graph: in a way the
// graph summary shows.
func (c *Core) markNode(name string, graph bool) {
	if c.pub != nil {
		c.pub.dirtyNodes[name] = true
		c.pub.graphDirty = c.pub.graphDirty || graph
	}
}

// markQueue records that the queue may list its requests otherwise.
func (c *Core) markQueue() {
	if c.pub != nil {
		c.pub.queueDirty = true
	}
}

// Publish renders what changed since the last Publish and returns the
// core's state as of now (its last event), to be read concurrently with
// further calls. The first call renders everything; until it, the core
// tracks nothing for it.
func (c *Core) Publish() *Published {
	p := c.pub
	if p == nil {
		p = &publisher{
			groups: map[string]*groupPub{}, dirtyGroups: map[string]bool{}, held: map[string]bool{}, queued: map[string]bool{},
			onNode: map[string]map[string]nodeHold{}, nodes: map[string]*nodePub{}, dirtyNodes: map[string]bool{},
			foreign: map[string]Resources{}, sigs: map[string]*sigAgg{},
			queueDirty: true, graphDirty: true,
			stats: Stats{Groups: map[string]int{}},
		}
		for _, n := range groupStateNames {
			p.stats.Groups[n] = 0
		}
		c.pub = p
		for key := range c.groups {
			p.dirtyGroups[key] = true
		}
		for name := range c.nodes {
			p.dirtyNodes[name] = true
		}
		for name := range c.foreign {
			p.dirtyNodes[name] = true
		}
	}
	if p.last != nil && c.now > p.last.now {
		for key := range p.held {
			if g := c.groups[key]; g == nil || g.holdUntil <= c.now {
				p.dirtyGroups[key] = true
			}
		}
	}
	changed := p.last == nil
	if len(p.dirtyGroups) > 0 {
		changed = true
		for _, key := range slices.Sorted(maps.Keys(p.dirtyGroups)) {
			c.publishGroup(p, key)
		}
		clear(p.dirtyGroups)
	}
	if len(p.dirtyNodes) > 0 {
		changed = true
		c.publishNodes(p)
	}
	free, freeChanged := c.publishFree(p)
	changed = changed || freeChanged
	if !changed && p.last != nil && !p.queueDirty && !p.graphDirty && c.graphState() == p.graphOf {
		if c.now == p.last.now {
			return p.last
		}
		next := *p.last
		next.now = c.now
		p.last = &next
		return p.last
	}
	out := &Published{now: c.now, head: c.snapshotHead(), groups: p.list, free: free, nodes: p.nodeList}
	if p.last != nil {
		out.queue, out.graph = p.last.queue, p.last.graph
	}
	if p.queueDirty {
		p.queueDirty = false
		q, ok := c.queueInOrder(p.stats.Queued)
		if !ok {
			var gs []*group
			for _, key := range slices.Sorted(maps.Keys(p.queued)) {
				if g := c.groups[key]; g != nil {
					gs = append(gs, g)
				}
			}
			q = c.queuedOf(gs)
		}
		out.queue = q
	}
	if k := c.graphState(); p.graphDirty || k != p.graphOf {
		p.graphDirty, p.graphOf = false, k
		out.graph = c.graphSummary()
	}
	out.stats = p.stats
	out.stats.GraphRebuilds = c.graphGen
	out.stats.Groups = maps.Clone(p.stats.Groups)
	p.last = out
	return out
}

func (c *Core) graphState() graphKey {
	return graphKey{gen: c.graphGen, dirty: c.dirty, built: c.m != nil, arrivals: c.arrivals}
}

// publishGroup renders a group again: its status, what it holds on each
// node (marking the nodes where that changed) and its share of Stats.
func (c *Core) publishGroup(p *publisher, key string) {
	old := p.groups[key]
	var nw *groupPub
	if g := c.groups[key]; g != nil && !g.dormant() {
		nw = c.renderGroup(g)
	}
	if old != nil {
		p.addStat(old.stat, -1)
		if old.sig != "" {
			p.sigs[old.sig].users--
		}
	}
	if nw != nil {
		p.addStat(nw.stat, 1)
		if nw.sig != "" {
			c.useSig(p, nw.sig, nw.filters)
		}
	}
	var oldOn, newOn map[string]nodeHold
	if old != nil {
		oldOn = old.on
	}
	if nw != nil {
		newOn = nw.on
	}
	for node, h := range oldOn {
		if n, ok := newOn[node]; !ok || n != h {
			p.dirtyNodes[node] = true
			if !ok {
				delete(p.onNode[node], key)
				if len(p.onNode[node]) == 0 {
					delete(p.onNode, node)
				}
			}
		}
	}
	for node, h := range newOn {
		if o, ok := oldOn[node]; !ok || o != h {
			p.dirtyNodes[node] = true
			if p.onNode[node] == nil {
				p.onNode[node] = map[string]nodeHold{}
			}
			p.onNode[node][key] = h
		}
	}
	wasQueued := old != nil && old.stat.hasQueuedRequest
	isQueued := nw != nil && nw.stat.hasQueuedRequest
	if wasQueued || isQueued {
		p.queueDirty = true
	}
	if isQueued {
		p.queued[key] = true
	} else {
		delete(p.queued, key)
	}
	if nw != nil && nw.st.HeldUntil > 0 {
		p.held[key] = true
	} else {
		delete(p.held, key)
	}
	if nw == nil {
		delete(p.groups, key)
		p.list = p.list.remove(key, groupPubKey)
	} else {
		p.groups[key] = nw
		p.list = p.list.set(nw, groupPubKey)
	}
}

// renderGroup renders a listed group.
func (c *Core) renderGroup(g *group) *groupPub {
	st, w := c.groupBase(g)
	gp := &groupPub{st: &st, on: map[string]nodeHold{}}
	if w.waiting {
		gp.sig, gp.filters = sigKey(w), w.filters
	}
	gp.stat = groupStat{phase: g.phase().String(), reserved: g.reservedAt >= 0}
	for _, a := range g.allocs {
		if !a.running {
			gp.stat.queued++
			gp.stat.hasQueuedRequest = true
			continue
		}
		for _, sl := range a.slots {
			if sl.done {
				continue
			}
			r := Resources{MilliCPU: sl.shape.MilliCPU, MemoryBytes: sl.shape.MemoryMiB << 20, GPU: sl.shape.GPU, Pods: 1}
			gp.stat.allocated = gp.stat.allocated.plus(r)
			h := gp.on[sl.node]
			h.pods++
			h.res = h.res.plus(r)
			gp.on[sl.node] = h
		}
	}
	return gp
}

// sigKey names the set of nodes a group's waiting pods may use.
func sigKey(w waitingOn) string {
	if w.anyNode {
		return "*"
	}
	return "=" + strings.Join(slices.Sorted(maps.Keys(w.filters)), "\x00")
}

// useSig counts a group using a node set, and starts keeping the set's
// free room if no group did (filters: the group's, by key).
func (c *Core) useSig(p *publisher, sig string, filters map[string]NodeFilter) {
	if a := p.sigs[sig]; a != nil {
		a.users++
		return
	}
	a := &sigAgg{users: 1, admits: map[string]bool{}, fresh: true, anyNode: sig == "*"}
	if !a.anyNode {
		for _, k := range slices.Sorted(maps.Keys(filters)) {
			a.filters = append(a.filters, filters[k])
		}
	}
	p.sigs[sig] = a
}

func (p *publisher) addStat(s groupStat, sign int) {
	p.stats.Groups[s.phase] += sign
	if s.reserved {
		p.stats.Reserved += sign
	}
	p.stats.Queued += sign * s.queued
	p.stats.Allocated = p.stats.Allocated.add(s.allocated, sign)
}

// add is r plus o times sign, unclamped.
func (r Resources) add(o Resources, sign int) Resources {
	k := int64(sign)
	return Resources{MilliCPU: r.MilliCPU + k*o.MilliCPU, MemoryBytes: r.MemoryBytes + k*o.MemoryBytes, GPU: r.GPU + k*o.GPU, Pods: r.Pods + k*o.Pods}
}

// publishNodes renders the marked nodes again and updates the node sets'
// free room with them.
func (c *Core) publishNodes(p *publisher) {
	levels := c.levels()
	names := slices.Sorted(maps.Keys(p.dirtyNodes))
	clear(p.dirtyNodes)
	for _, name := range names {
		// Foreign load, for Stats, whether or not the node is known.
		f := c.foreignOn(name)
		p.stats.Allocated = p.stats.Allocated.add(p.foreign[name], -1).add(f, 1)
		if f == (Resources{}) {
			delete(p.foreign, name)
		} else {
			p.foreign[name] = f
		}
		old := p.nodes[name]
		var nw *nodePub
		if n := c.nodes[name]; n != nil {
			st := c.nodeBase(n, levels)
			held := p.onNode[name]
			for _, key := range slices.Sorted(maps.Keys(held)) {
				st.Allocated = st.Allocated.plus(held[key].res)
				st.Groups = append(st.Groups, NodeGroup{Group: key, Pods: held[key].pods})
			}
			nw = &nodePub{st: &st, takes: !st.Down && !st.Overloaded, free: st.Allocatable.minus(st.Allocated), allocatable: n.Allocatable}
		}
		if old != nil {
			p.stats.Allocatable = p.stats.Allocatable.add(old.allocatable, -1)
		}
		if nw != nil {
			p.stats.Allocatable = p.stats.Allocatable.add(nw.allocatable, 1)
		}
		for _, a := range p.sigs {
			if !a.fresh {
				a.nodeChanged(name, old, nw, c.nodes[name])
			}
		}
		if nw == nil {
			delete(p.nodes, name)
			p.nodeList = p.nodeList.remove(name, nodeStatusKey)
		} else {
			p.nodes[name] = nw
			p.nodeList = p.nodeList.set(nw.st, nodeStatusKey)
		}
	}
}

// admitted reports whether the node set holds a node.
func (a *sigAgg) admitted(n *Node) bool {
	if a.anyNode {
		return true
	}
	for _, f := range a.filters {
		if f.Admits(n) {
			return true
		}
	}
	return false
}

// nodeChanged updates the free room with a node rendered again (old and
// nw nil when it was or is not known).
func (a *sigAgg) nodeChanged(name string, old, nw *nodePub, n *Node) {
	if old != nil && old.takes && a.admits[name] {
		a.f.eligible--
		a.f.free = a.f.free.add(old.free, -1)
		for i, v := range old.free.fields() {
			if m := a.f.largestFree.fields()[i]; v == m && m > 0 {
				if a.atMost[i]--; a.atMost[i] == 0 {
					a.rescan = true
				}
			}
		}
	}
	delete(a.admits, name)
	if nw == nil {
		return
	}
	if a.admitted(n) {
		a.admits[name] = true
	}
	if nw.takes && a.admits[name] {
		a.f.eligible++
		a.f.free = a.f.free.plus(nw.free)
		a.most(nw.free)
	}
}

// most takes a node's free room into the most one node has free.
func (a *sigAgg) most(free Resources) {
	m := a.f.largestFree.fields()
	for i, v := range free.fields() {
		switch {
		case v > m[i]:
			m[i], a.atMost[i] = v, 1
		case v == m[i]:
			a.atMost[i]++
		}
	}
	a.f.largestFree = Resources{MilliCPU: m[0], MemoryBytes: m[1], GPU: m[2], Pods: m[3]}
}

func (r Resources) fields() [4]int64 { return [4]int64{r.MilliCPU, r.MemoryBytes, r.GPU, r.Pods} }

// publishFree drops the node sets no group uses, computes those new or
// whose most free room must be found again, and returns every set's free
// room, and whether any changed since the last Publish.
func (c *Core) publishFree(p *publisher) (map[string]freeOn, bool) {
	changed := false
	for _, sig := range slices.Sorted(maps.Keys(p.sigs)) {
		a := p.sigs[sig]
		if a.users == 0 {
			delete(p.sigs, sig)
			changed = true
			continue
		}
		if a.fresh {
			a.fresh = false
			for _, name := range slices.Sorted(maps.Keys(p.nodes)) {
				if a.admitted(c.nodes[name]) {
					a.admits[name] = true
				}
			}
			a.rescan = true
		}
		if a.rescan {
			a.rescan = false
			a.f, a.atMost = freeOn{}, [4]int{}
			for name := range a.admits {
				if np := p.nodes[name]; np.takes {
					a.f.eligible++
					a.f.free = a.f.free.plus(np.free)
					a.most(np.free)
				}
			}
		}
	}
	var last map[string]freeOn
	if p.last != nil {
		last = p.last.free
	}
	if len(last) != len(p.sigs) {
		changed = true
	}
	for sig, a := range p.sigs {
		if f, ok := last[sig]; !ok || f != a.f {
			changed = true
		}
	}
	if !changed {
		return last, false
	}
	out := make(map[string]freeOn, len(p.sigs))
	for sig, a := range p.sigs {
		out[sig] = a.f
	}
	return out, true
}
