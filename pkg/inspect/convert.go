package inspect

import (
	"slices"
	"time"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/queue"
)

// Clock turns the core's times (ticks since the scheduler started) into
// wall-clock times.
type Clock struct {
	Start          time.Time
	TicksPerSecond int64
}

// At returns the wall-clock time of a core time, in UTC.
func (c Clock) At(t int64) time.Time {
	return c.Start.Add(time.Duration(t) * time.Second / time.Duration(max(c.TicksPerSecond, 1))).UTC()
}

func (c Clock) ptr(t int64) *time.Time {
	if t < 0 {
		return nil
	}
	at := c.At(t)
	return &at
}

func (c Clock) seconds(ticks int64) float64 {
	return float64(ticks) / float64(max(c.TicksPerSecond, 1))
}

// View is one profile's snapshot, ready to be answered from.
type View struct {
	Profile  string
	Snapshot *gang.Snapshot
	Clock    Clock
}

func (v View) source() Source { return Source{Profile: v.Profile, Time: v.Clock.At(v.Snapshot.Now)} }

// Groups lists the groups of a namespace, or of all when namespace is "".
func (v View) Groups(namespace string) GroupList {
	out := GroupList{TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: KindGroupList}, Source: v.source(), Items: []Group{}}
	for _, g := range v.Snapshot.Groups {
		if namespace == "" || g.ID.Namespace == namespace {
			out.Items = append(out.Items, v.group(g))
		}
	}
	return out
}

func (v View) group(g gang.GroupStatus) Group {
	c := v.Clock
	out := Group{
		Key: g.ID.Key, Namespace: g.ID.Namespace, Name: g.ID.Name, Source: g.ID.Source, Size: g.ID.Size,
		State: g.Phase, Reason: g.Reason, Priority: g.Priority, Pods: g.Pods, Placed: g.Placed, Bound: g.Bound, Gated: g.Gated, Held: g.Held, WaitsFor: g.WaitsFor,
		FirstSeen: c.At(g.Since), Started: c.ptr(g.Started), PlannedEnd: c.ptr(g.PlannedEnd), ReservedStart: c.ptr(g.ReservedAt),
	}
	if g.HeldUntil > 0 {
		out.HeldUntil = c.ptr(g.HeldUntil)
	}
	until := v.Snapshot.Now
	if g.Started >= 0 {
		until = g.Started
	}
	out.WaitSeconds = c.seconds(max(0, until-g.Since))
	for _, s := range g.Slots {
		out.Placement = append(out.Placement, Slot{Pod: s.Pod, Node: s.Node, State: s.State})
		if s.State != "done" && !slices.Contains(out.Nodes, s.Node) {
			out.Nodes = append(out.Nodes, s.Node)
		}
	}
	slices.Sort(out.Nodes)
	out.Domains = slices.Clone(g.Domains)
	for _, r := range g.Roles {
		out.Roles = append(out.Roles, Role{Name: r.Name, Min: r.Min, Pods: r.Pods, Placed: r.Placed})
	}
	if g.Ask.Pods > 0 {
		r := resources(g.Ask)
		out.Waiting = &r
	}
	return out
}

// Explain explains the group with the key; false when there is none.
func (v View) Explain(key string) (Explanation, bool) {
	e, ok := v.Snapshot.Explain(key)
	if !ok {
		return Explanation{}, false
	}
	out := Explanation{
		TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: KindExplanation}, Source: v.source(),
		Group: v.group(e.Group), Verdict: e.Verdict, Summary: e.Summary, Details: e.Details,
		ExpectedStart: v.Clock.ptr(e.ExpectedStart), Position: e.Position, Queued: e.Queued, Ahead: e.Ahead, Freeing: e.Freeing,
	}
	for _, s := range e.Short {
		out.Short = append(out.Short, Shortfall{Resource: s.Resource, Need: s.Need, Have: s.Have, PerPod: s.PerPod, PerNode: s.PerNode})
	}
	return out, true
}

// Queue lists the waiting requests of a namespace's groups, or of all when
// namespace is "", each with its place in the whole queue.
func (v View) Queue(namespace string) Queue {
	s := v.Snapshot
	out := Queue{
		TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: KindQueue}, Source: v.source(),
		Policy: string(s.QueueConfig.Policy), MatchPolicy: s.MatchPolicy, QueueDepth: s.QueueConfig.QueueDepth,
		Reservations: reservations(s.QueueConfig), Entries: []QueueEntry{},
	}
	for i, q := range s.Queue {
		g, _ := s.Group(q.Group)
		if namespace != "" && g.ID.Namespace != namespace {
			continue
		}
		e := QueueEntry{Position: i + 1, Group: q.Group, Namespace: g.ID.Namespace, Name: g.ID.Name, Priority: q.Priority, Pods: q.Pods,
			State: q.State, Queued: v.Clock.At(q.Submit), ReservedStart: v.Clock.ptr(q.At), Reason: q.Reason}
		if q.NotBefore > 0 {
			e.HeldUntil = v.Clock.ptr(q.NotBefore)
		}
		out.Entries = append(out.Entries, e)
	}
	return out
}

// reservations is how many waiting requests may hold a reservation.
func reservations(c queue.Config) int {
	switch c.Policy {
	case queue.Easy:
		return 1
	case queue.Hybrid:
		return c.ReservationDepth
	case queue.Conservative:
		return c.QueueDepth
	}
	return 0
}

// Nodes lists the nodes.
func (v View) Nodes() NodeList {
	out := NodeList{TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: KindNodeList}, Source: v.source(), Items: []Node{}, Levels: v.Snapshot.Levels}
	for _, n := range v.Snapshot.Nodes {
		node := Node{Name: n.Name, Zone: n.Zone, Rack: n.Rack, Domains: n.Domains, Down: n.Down, Overloaded: n.Overloaded,
			Allocatable: resources(n.Allocatable), Allocated: resources(n.Allocated), Foreign: resources(n.Foreign),
			Devices: n.Devices, DevicesAllocated: n.DevicesAllocated}
		for _, g := range n.Groups {
			node.Groups = append(node.Groups, NodeGroup{Group: g.Group, Pods: g.Pods})
		}
		out.Items = append(out.Items, node)
	}
	return out
}

// Graph describes the resource graph.
func (v View) Graph() Graph {
	gs := v.Snapshot.Graph
	out := Graph{TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: KindGraph}, Source: v.source(),
		Built: gs.Built, Stale: gs.Stale, Arriving: gs.Arriving, Rebuilds: gs.Rebuilds, Vertices: gs.Vertices}
	for _, t := range gs.Types {
		out.Types = append(out.Types, VertexCount{Type: t.Type, Vertices: t.Vertices, Size: t.Size})
	}
	for _, l := range gs.Levels {
		out.Levels = append(out.Levels, GraphLevel{Key: l.Key, Type: l.Type, Domains: l.Domains, Unlabelled: l.Unlabelled, UnknownDomain: l.Unknown})
	}
	if gs.Root != nil {
		out.Root = vertex(gs.Root)
	}
	return out
}

func vertex(g *gang.GraphVertex) *Vertex {
	v := &Vertex{Type: g.Type, Name: g.Name, Size: g.Size, Unit: g.Unit, Down: g.Down}
	if g.Count > 1 {
		v.Count = g.Count
	}
	for _, c := range g.Children {
		v.Children = append(v.Children, vertex(c))
	}
	return v
}

func resources(r gang.Resources) Resources {
	return Resources{CPUMillis: r.MilliCPU, MemoryBytes: r.MemoryBytes, GPU: r.GPU, Pods: r.Pods}
}
