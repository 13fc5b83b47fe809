package gang

import (
	"cmp"
	"maps"
	"slices"

	"github.com/fluence-sched/fluence/pkg/queue"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// Snapshot is the core's state as an operator reads it: the queue in the
// order the engine considers it, every group with its placement, every node
// with what is held on it, and the shape of the resource graph. It is a
// copy: taking it changes nothing in the core, and the same events give the
// same snapshot.
type Snapshot struct {
	// Now is the time the snapshot describes: the time asked for, or the
	// core's last event if that is later.
	Now            int64
	TicksPerSecond int64
	MatchPolicy    string
	// QueueConfig is the queue's validated configuration (policy and
	// depths).
	QueueConfig queue.Config
	// Preemption is the core's preemption settings; nil when off.
	Preemption *Preemption
	// Levels are the vertex types of the graph's topology levels,
	// outermost first: the levels NodeStatus.Domains are at.
	Levels []string
	// Queue lists the requests in the queue, in the engine's order: the
	// groups it considers (pending or reserved) first, then those blocked
	// until resources change.
	Queue  []QueueEntry
	Groups []GroupStatus // by key
	Nodes  []NodeStatus  // by name
	Graph  GraphSummary

	format func(int64) string
	// gatherNotice is Config.GatherNotice, for explanations.
	gatherNotice int64
}

// QueueEntry is one request in the queue: the pods of a group still to be
// placed.
type QueueEntry struct {
	Group    string // the group's key
	Priority int32
	// Submit is the request's place in line (the time it was first
	// queued; a request rebuilt or held keeps it).
	Submit int64
	Pods   int
	// State is the queue's: pending, reserved or blocked.
	State string
	// At is the reserved start; -1 when the request holds no reservation.
	At int64
	// NotBefore is when a held request may start (a node turned the group
	// away); 0 when it is not held.
	NotBefore int64
	// Reason is why the request could not start at the last loop.
	Reason string
}

// GroupStatus is one group as inspection shows it.
type GroupStatus struct {
	ID     GroupID
	Phase  string // gathering, queued, placed, rejected, invalid
	Reason string
	// Priority is the highest priority among the pods of its request.
	Priority int32
	// Pods counts its pods that exist and have not ended; Placed the
	// slots its pods hold or will take; Bound the pods bound there.
	Pods, Placed, Bound int
	// Since is when the core first saw the group.
	Since int64
	// Gated counts its labelled pods that wait for their scheduling
	// gates; they are not in Pods until the gates are lifted.
	Gated int
	// Held counts its pods that wait out of the scheduling queue for the
	// rest of the group (Hold).
	Held int
	// WaitsFor names its oldest pod that waits for an object it names
	// (Pod.Waiting) and what that is: "ns/p: resource claim ...".
	WaitsFor string
	// Started is when its earliest live allocation began (a rebuilt graph
	// does not move it); -1 when none.
	Started int64
	// PlannedEnd is the latest planned end of its live allocations; -1
	// when none or when one runs without a planned end.
	PlannedEnd int64
	// ReservedAt is the start the engine reserved for it; -1 when none.
	ReservedAt int64
	// HeldUntil is when a group a node turned away may start again; 0 when
	// it is not held.
	HeldUntil int64
	// Refused are the nodes that turned its pods away since it was last
	// let through, by pod: its next placements leave them out.
	Refused []Refusal
	// Slots are its placed pods in allocation order.
	Slots []SlotStatus
	// Ask is what its pods without a slot ask in all (Pods: how many
	// there are); LargestPod and SmallestPod the most and the least any
	// one of them asks, per resource.
	Ask, LargestPod, SmallestPod Resources
	// Eligible counts the nodes at least one of those pods may use that
	// take new work (up, not overloaded); Free is what is free on them
	// now, LargestFree the most free on one of them, per resource. They
	// are computed only while some pod waits.
	Eligible          int
	Free, LargestFree Resources
	// Domains are the topology domains (key=value) its allocations run
	// in or wait for, in order: what a topology constraint got it.
	Domains []string
	// Preempting are the groups it evicts to start, and PreemptUntil the
	// end of its hold on their nodes; EvictedBy, the group evicting it
	// (preempt.go). PreemptNote says why a waiting group did not preempt
	// at its last try ("" when it did not try). YieldsTo is the group
	// some of its pods were evicted for, one by one, while that group's
	// hold lasts (preempt_pods.go).
	Preempting   []string
	PreemptUntil int64
	// PreemptChoice says where its preemption takes room and what it
	// chose over (preempt_search.go); "" when nothing more needs saying.
	PreemptChoice string
	EvictedBy     string
	PreemptNote   string
	YieldsTo      string
	// Roles are a multi-role group's roles, by name (nil for a group of
	// one role).
	Roles []RoleStatus
}

// RoleStatus is one role of a multi-role group: its least count, its
// pods that exist and have not ended, and those holding a slot.
type RoleStatus struct {
	Name         string
	Min          int32
	Pods, Placed int
}

// Refusal is the nodes that turned one pod away.
type Refusal struct {
	Pod   string // namespace/name
	Nodes []string
}

// SlotStatus is one placed pod of a group.
type SlotStatus struct {
	Pod  string // namespace/name; "" when vacant
	Node string
	// State: placed (its pod has not passed Reserve), reserved (it waits
	// at Permit or is binding), bound, done, or vacant (its pod went away
	// after others bound; a pod of the same shape takes it).
	State string
}

// NodeStatus is one node and what is held on it.
type NodeStatus struct {
	Name       string
	Zone, Rack string // "" when the graph has no such level
	// Domains is the node's domain at each topology level of the graph
	// (Snapshot.Levels), outermost first, from its labels as they are
	// now: UnknownDomain where it has none (DefaultTopology in a graph
	// built without levels).
	Domains []string
	Down    bool // cordoned or not Ready
	// Overloaded: pods others bound hold more than the engine had free;
	// nothing new goes there until it fits again.
	Overloaded bool
	// Allocatable counts pod places as the graph does (DefaultMaxPods
	// when the node reports none).
	Allocatable Resources
	// Allocated is everything held now: fluence's allocations and the
	// pods others bound. Foreign is the latter alone (Pods: how many).
	Allocated, Foreign Resources
	// Groups lists fluence's groups with live pods here, by key.
	Groups []NodeGroup
	// Devices counts the node's DRA devices in the graph;
	// DevicesAllocated those a claim's allocation holds, whoever's pod
	// uses it (devices fluence placed a pod on count once its claims are
	// allocated, when it binds).
	Devices, DevicesAllocated int64
}

// NodeGroup is how many pods of a group hold a place on a node.
type NodeGroup struct {
	Group string
	Pods  int
}

// GraphSummary is the shape of the resource graph the engine decides on.
type GraphSummary struct {
	// Built: there is a graph (there are nodes). Stale: the nodes changed
	// since, and the graph is rebuilt before the next decision.
	Built, Stale bool
	// Arriving counts new nodes waiting outside the graph: they join it
	// at the next rebuild, within a second (arrivals.go).
	Arriving int
	Rebuilds int64
	Vertices int
	Types    []TypeCount // by type name
	// Levels are the topology levels between the cluster and the nodes,
	// outermost first, as the nodes are labelled now.
	Levels []GraphLevel
	Root   *GraphVertex
}

// GraphLevel is one topology level of the graph.
type GraphLevel struct {
	Key  string // the node label
	Type string // the vertex type of its domains
	// Domains counts the label's values among the nodes. Unlabelled counts
	// the nodes without it, which are under the level's Unknown domain
	// (<type>-_unknown, or "default" in the graph without topology levels).
	Domains, Unlabelled int
	Unknown             string
}

// TypeCount counts the vertices of one type and their summed size.
type TypeCount struct {
	Type     string
	Vertices int
	Size     int64
}

// GraphVertex is a vertex of the graph with its children. Identical
// leaves of one parent (a node's GPUs) are summarised as one with Count.
type GraphVertex struct {
	Type, Name string
	Size       int64
	Unit       string
	Count      int
	Down       bool
	Children   []*GraphVertex
}

// Snapshot returns the core's state at now.
//
// It scans every group and node (and, for each group that waits, every
// node it may use): the scheduler publishes instead (Publish), and
// inspection reads the published copy.
func (c *Core) Snapshot(now int64) Snapshot {
	s := c.snapshotHead()
	s.Now = max(now, c.now)
	s.Nodes = c.nodeStatuses()
	fr := &freeNodes{admits: map[string][]bool{}}
	for _, n := range s.Nodes {
		if !n.Down && !n.Overloaded {
			fr.nodes = append(fr.nodes, c.nodes[n.Name])
			fr.free = append(fr.free, n.Allocatable.minus(n.Allocated))
		}
	}
	for _, g := range c.sortedGroups() {
		if !g.dormant() {
			s.Groups = append(s.Groups, c.groupStatus(g, fr))
		}
	}
	s.Queue = c.queued()
	s.Graph = c.graphSummary()
	return s
}

// snapshotHead is a snapshot with the core's settings only.
func (c *Core) snapshotHead() Snapshot {
	s := Snapshot{
		TicksPerSecond: c.cfg.TicksPerSecond,
		MatchPolicy:    c.cfg.MatchPolicy,
		QueueConfig:    c.cfg.Queue,
		format:         c.cfg.FormatTime,
		gatherNotice:   c.cfg.GatherNotice,
	}
	if p := c.cfg.Preemption; p != nil {
		cp := *p
		s.Preemption = &cp
	}
	for _, l := range c.levels() {
		s.Levels = append(s.Levels, l.typ)
	}
	return s
}

// queued lists the queued requests in the engine's order.
func (c *Core) queued() []QueueEntry { return c.queuedOf(c.sortedGroups()) }

// queuedOf lists the queued requests of groups (in key order) in the
// engine's order.
func (c *Core) queuedOf(groups []*group) []QueueEntry {
	type req struct {
		g *group
		a *alloc
	}
	var reqs []req
	for _, g := range groups {
		for _, a := range g.allocs {
			if !a.running {
				reqs = append(reqs, req{g, a})
			}
		}
	}
	// The queue's own order where it has the request; any it does not
	// have yet (no engine) follow in the order it would give them.
	rank := map[int64]int{}
	if c.q != nil {
		for i, qg := range append(c.q.Pending(), c.q.Blocked()...) {
			rank[qg.ID] = i
		}
	}
	slices.SortStableFunc(reqs, func(x, y req) int {
		rx, okx := rank[x.a.id]
		ry, oky := rank[y.a.id]
		switch {
		case okx && oky:
			return cmp.Compare(rx, ry)
		case okx != oky:
			if okx {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(y.g.priority, x.g.priority); c != 0 {
			return c
		}
		if c := cmp.Compare(x.a.submit, y.a.submit); c != 0 {
			return c
		}
		return cmp.Compare(x.a.id, y.a.id)
	})
	out := make([]QueueEntry, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, c.queueEntry(r.g, r.a))
	}
	return out
}

// queueEntry describes a queued request of a group.
func (c *Core) queueEntry(g *group, a *alloc) QueueEntry {
	w := QueueEntry{Group: g.id.Key, Priority: g.priority, Submit: a.submit, Pods: len(a.pods), State: queue.Pending.String(), At: -1, Reason: g.reason}
	if c.q != nil {
		if st, why, ok := c.q.StateOf(a.id); ok {
			w.State = st.String()
			if why != "" {
				w.Reason = why
			}
			if st == queue.Reserved {
				if info, ok := c.m.Info(a.id); ok {
					w.At = info.At
				}
			}
		}
	}
	if g.holdUntil > c.now {
		w.NotBefore = g.holdUntil
	}
	return w
}

// queueInOrder lists the queued requests in the queue's own order, when
// the queue holds every one of them (there are want); ok is false when it
// does not (queuedOf places the others).
func (c *Core) queueInOrder(want int) (out []QueueEntry, ok bool) {
	if c.q == nil {
		return nil, want == 0
	}
	out = make([]QueueEntry, 0, want)
	for _, list := range [][]*queue.Group{c.q.Pending(), c.q.Blocked()} {
		for _, qg := range list {
			g := c.byAlloc[qg.ID]
			if g == nil {
				continue
			}
			if a := g.allocByID(qg.ID); a != nil && !a.running {
				if len(out) == want {
					return nil, false
				}
				out = append(out, c.queueEntry(g, a))
			}
		}
	}
	return out, len(out) == want
}

// freeNodes are the nodes that take new work, by name, with what each has
// free, and which of them each node filter admits (asked once per filter
// key and snapshot: the groups that wait usually share a few).
type freeNodes struct {
	nodes  []*Node
	free   []Resources
	admits map[string][]bool
}

func (f *freeNodes) admitted(flt NodeFilter) []bool {
	k := flt.Key()
	if a, ok := f.admits[k]; ok {
		return a
	}
	a := make([]bool, len(f.nodes))
	for i, n := range f.nodes {
		a[i] = flt.Admits(n)
	}
	f.admits[k] = a
	return a
}

// groupStatus describes one group; fr is what the nodes that take new
// work have free.
func (c *Core) groupStatus(g *group, fr *freeNodes) GroupStatus {
	st, w := c.groupBase(g)
	if w.waiting {
		var admits [][]bool
		for _, k := range slices.Sorted(maps.Keys(w.filters)) {
			admits = append(admits, fr.admitted(w.filters[k]))
		}
		for i := range fr.nodes {
			if !w.anyNode && !slices.ContainsFunc(admits, func(a []bool) bool { return a[i] }) {
				continue
			}
			st.Eligible++
			st.Free = st.Free.plus(fr.free[i])
			st.LargestFree = st.LargestFree.most(fr.free[i])
		}
	}
	return st
}

// waitingOn are the nodes a group's waiting pods may use: any node, or
// those one of the filters admits (by filter key). waiting: some pod
// waits.
type waitingOn struct {
	waiting, anyNode bool
	filters          map[string]NodeFilter
}

// groupBase describes one group but for what the nodes have free for its
// waiting pods (Eligible, Free, LargestFree), which depends on every
// node: it returns the nodes those pods may use instead.
func (c *Core) groupBase(g *group) (GroupStatus, waitingOn) {
	st := GroupStatus{
		ID: g.id, Phase: g.phase().String(), Reason: g.reason, Priority: g.priority,
		Pods: len(g.members), Since: g.since, Started: -1, PlannedEnd: -1, ReservedAt: g.reservedAt,
		Gated: c.gatedCount[g.id.Key],
	}
	if w := c.gathering[g.id.Key]; w != nil {
		st.Held = len(w.pods)
	}
	if p := g.waitingMember(); p != nil {
		st.WaitsFor = p.String() + ": " + p.Waiting
	}
	if g.holdUntil > c.now {
		st.HeldUntil = g.holdUntil
	}
	for _, uid := range slices.Sorted(maps.Keys(g.avoid)) {
		name := uid
		if p := g.members[uid]; p != nil {
			name = p.String()
		}
		st.Refused = append(st.Refused, Refusal{Pod: name, Nodes: slices.Clone(g.avoid[uid])})
	}
	st.EvictedBy, st.PreemptNote, st.YieldsTo = g.evictedBy, g.preemptNote, g.yieldTo
	if h := g.preempt; h != nil {
		st.Preempting, st.PreemptUntil, st.PreemptChoice = slices.Clone(h.victims), h.until, h.choice
	}
	st.Roles = roleStatus(g)
	unlimited := false
	for _, a := range g.allocs {
		if d := c.domainOfAlloc(a); d != "" && !slices.Contains(st.Domains, d) {
			st.Domains = append(st.Domains, d)
		}
		if !a.running {
			continue
		}
		live := false
		for _, sl := range a.slots {
			ss := SlotStatus{Pod: sl.name, Node: sl.node, State: slotState(sl)}
			if sl.pod == "" && !sl.done {
				ss.Pod = ""
			}
			st.Slots = append(st.Slots, ss)
			if !sl.done {
				live = true
				st.Placed++
				if sl.bound {
					st.Bound++
				}
			}
		}
		if !live {
			continue
		}
		// When it began, not when it was last replayed onto a rebuilt
		// graph: a user asks when the group started.
		// One that began before this run (adopted after a restart) shows
		// this run's start: times before it are not told.
		if began := max(a.began, 0); st.Started < 0 || began < st.Started {
			st.Started = began
		}
		if a.dur <= 0 {
			unlimited = true
		} else {
			st.PlannedEnd = max(st.PlannedEnd, a.start+a.dur)
		}
	}
	if unlimited {
		st.PlannedEnd = -1
	}
	slotted := map[string]bool{}
	for _, a := range g.allocs {
		for _, sl := range a.slots {
			if a.running && sl.pod != "" {
				slotted[sl.pod] = true
			}
		}
	}
	var waiting []*Pod
	// The nodes the waiting pods may use: pods with the same filter key
	// admit the same nodes, so each key is asked once per node.
	filters := map[string]NodeFilter{}
	anyNode := false
	for _, p := range g.sortedMembers() {
		if slotted[p.UID] || p.NodeName != "" || p.Deleting {
			continue
		}
		waiting = append(waiting, p)
		if p.Filter == nil {
			anyNode = true
		} else {
			filters[p.Filter.Key()] = p.Filter
		}
	}
	for i, p := range waiting {
		r := onePod(p.Requests)
		st.Ask = st.Ask.plus(r)
		st.LargestPod = st.LargestPod.most(r)
		if i == 0 {
			st.SmallestPod = r
		}
		st.SmallestPod = st.SmallestPod.least(r)
	}
	return st, waitingOn{waiting: len(waiting) > 0, anyNode: anyNode, filters: filters}
}

func slotState(s *slot) string {
	switch {
	case s.done:
		return "done"
	case s.pod == "":
		return "vacant"
	case s.bound:
		return "bound"
	case s.reserved:
		return "reserved"
	}
	return "placed"
}

// nodeStatuses describes every node with what is held on it.
func (c *Core) nodeStatuses() []NodeStatus {
	held := map[string]*NodeStatus{}
	out := make([]NodeStatus, 0, len(c.nodes))
	levels := c.levels()
	for _, n := range c.sortedNodes() {
		out = append(out, c.nodeBase(n, levels))
	}
	for i := range out {
		held[out[i].Name] = &out[i]
	}
	for _, g := range c.sortedGroups() {
		perNode := map[string]int{}
		for _, a := range g.allocs {
			if !a.running {
				continue
			}
			for _, sl := range a.slots {
				ns := held[sl.node]
				if sl.done || ns == nil {
					continue
				}
				ns.Allocated = ns.Allocated.plus(Resources{MilliCPU: sl.shape.MilliCPU, MemoryBytes: sl.shape.MemoryMiB << 20, GPU: sl.shape.GPU, Pods: 1})
				perNode[sl.node]++
			}
		}
		for _, node := range slices.Sorted(maps.Keys(perNode)) {
			held[node].Groups = append(held[node].Groups, NodeGroup{Group: g.id.Key, Pods: perNode[node]})
		}
	}
	return out
}

// nodeBase describes a node with the foreign pods on it but none of
// fluence's (Allocated is Foreign).
func (c *Core) nodeBase(n *Node, levels []level) NodeStatus {
	alloc := n.Allocatable
	alloc.Pods = podPlaces(alloc)
	ns := NodeStatus{Name: n.Name, Down: n.Down, Overloaded: c.overloaded[n.Name], Allocatable: alloc}
	ns.Zone = labelOr(n.Labels, ZoneLabel)
	if c.cfg.RackLabel != "" {
		ns.Rack = labelOr(n.Labels, c.cfg.RackLabel)
	}
	for _, l := range levels {
		v := l.value(n)
		if v == "" {
			v = UnknownDomain
		}
		ns.Domains = append(ns.Domains, v)
	}
	ns.Foreign = c.foreignOn(n.Name)
	ns.Allocated = ns.Foreign
	ns.Devices = int64(len(n.Devices))
	for _, d := range n.Devices {
		if d.Holder != "" {
			ns.DevicesAllocated++
		}
	}
	return ns
}

// foreignOn sums the foreign pods on a node (Pods: how many).
func (c *Core) foreignOn(node string) Resources {
	var r Resources
	for _, uid := range slices.Sorted(maps.Keys(c.foreign[node])) {
		r = r.plus(onePod(c.foreign[node][uid]))
	}
	return r
}

// graphSummary describes the engine's current graph.
func (c *Core) graphSummary() GraphSummary {
	gs := GraphSummary{Rebuilds: c.graphGen, Stale: c.dirty, Arriving: c.arrivals, Levels: c.graphLevels()}
	if c.m == nil {
		gs.Stale = len(c.nodes) > 0
		return gs
	}
	g := c.m.Graph()
	gs.Built, gs.Vertices = true, g.Len()
	counts := map[string]*TypeCount{}
	for v := int32(0); v < int32(g.Len()); v++ {
		vx := g.Vertex(v)
		name := g.TypeName(vx.Type)
		if counts[name] == nil {
			counts[name] = &TypeCount{Type: name}
		}
		counts[name].Vertices++
		counts[name].Size += vx.Size
	}
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		gs.Types = append(gs.Types, *counts[name])
	}
	gs.Root = describeVertex(g, g.Root())
	return gs
}

// graphLevels counts the domains and unlabelled nodes of each level.
func (c *Core) graphLevels() []GraphLevel {
	var out []GraphLevel
	for _, l := range c.levels() {
		gl := GraphLevel{Key: l.key, Type: l.typ, Unknown: l.vertexName(l.missing)}
		values := map[string]bool{}
		for _, n := range c.nodes {
			if v := n.Labels[l.key]; v != "" {
				values[v] = true
			} else {
				gl.Unlabelled++
			}
		}
		gl.Domains = len(values)
		out = append(out, gl)
	}
	return out
}

func describeVertex(g *resource.Graph, v int32) *GraphVertex {
	vx := g.Vertex(v)
	out := &GraphVertex{Type: g.TypeName(vx.Type), Name: vx.DisplayName(), Size: vx.Size, Unit: vx.Unit, Count: 1, Down: vx.Status == resource.Down}
	for _, ch := range g.Children(v) {
		d := describeVertex(g, ch)
		// Identical leaves (a node's GPUs) are one line with a count.
		if n := len(out.Children); n > 0 && len(d.Children) == 0 {
			last := out.Children[n-1]
			if len(last.Children) == 0 && last.Type == d.Type && last.Size == d.Size && last.Unit == d.Unit && last.Down == d.Down && d.Type == TypeGPU {
				last.Count++
				continue
			}
		}
		out.Children = append(out.Children, d)
	}
	if out.Type == TypeGPU {
		out.Name = TypeGPU
	}
	return out
}

func (r Resources) plus(o Resources) Resources {
	return Resources{MilliCPU: r.MilliCPU + o.MilliCPU, MemoryBytes: r.MemoryBytes + o.MemoryBytes, GPU: r.GPU + o.GPU, Pods: r.Pods + o.Pods}
}

// minus is what is left of r after o, never below zero.
func (r Resources) minus(o Resources) Resources {
	return Resources{MilliCPU: max(0, r.MilliCPU-o.MilliCPU), MemoryBytes: max(0, r.MemoryBytes-o.MemoryBytes), GPU: max(0, r.GPU-o.GPU), Pods: max(0, r.Pods-o.Pods)}
}

// most is the larger of r and o for each resource.
func (r Resources) most(o Resources) Resources {
	return Resources{MilliCPU: max(r.MilliCPU, o.MilliCPU), MemoryBytes: max(r.MemoryBytes, o.MemoryBytes), GPU: max(r.GPU, o.GPU), Pods: max(r.Pods, o.Pods)}
}

// least is the smaller of r and o for each resource.
func (r Resources) least(o Resources) Resources {
	return Resources{MilliCPU: min(r.MilliCPU, o.MilliCPU), MemoryBytes: min(r.MemoryBytes, o.MemoryBytes), GPU: min(r.GPU, o.GPU), Pods: min(r.Pods, o.Pods)}
}

// onePod is a pod's requests as what it holds: every pod takes one of its
// node's pod places.
func onePod(r Resources) Resources {
	r.Pods = 1
	return r
}

// Lookup finds a group by namespace and name: the group whose key is
// namespace/name, else every group of the namespace with that name (a
// Job's group is keyed namespace/job:name). Keys come back sorted.
func (s *Snapshot) Lookup(namespace, name string) []string {
	want := namespace + "/" + name
	var byName []string
	for _, g := range s.Groups {
		if g.ID.Key == want {
			return []string{want}
		}
		if g.ID.Namespace == namespace && g.ID.Name == name {
			byName = append(byName, g.ID.Key)
		}
	}
	return byName
}

// Known reports whether the snapshot has a group of the key.
func (s *Snapshot) Known(key string) bool {
	_, ok := s.Group(key)
	return ok
}

// Group returns the group with the key.
func (s *Snapshot) Group(key string) (GroupStatus, bool) {
	i, ok := slices.BinarySearchFunc(s.Groups, key, func(g GroupStatus, k string) int { return cmp.Compare(g.ID.Key, k) })
	if !ok {
		return GroupStatus{}, false
	}
	return s.Groups[i], true
}
