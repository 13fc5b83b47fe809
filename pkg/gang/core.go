package gang

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/queue"
)

// Config are the core's settings.
type Config struct {
	MatchPolicy string // default lonode
	Queue       queue.Config
	// RackLabel is the node label naming a node's rack; "" for no rack
	// level in the graph. It keeps the graph it always built (zone, then
	// rack); TopologyLevels replaces it, and giving both is an error.
	RackLabel string
	// TopologyLevels are node label keys, outermost first: the graph has
	// a level of domains for each (BuildGraphLevels) between the cluster
	// and the nodes, and no zone level unless its label is listed. Empty:
	// zone and RackLabel as before.
	TopologyLevels []string
	// DomainOrder is the order in which the matcher tries the domains of
	// a level for a group kept within one: DomainTightest (the default),
	// the least free room first; or DomainFirst, in the graph's order
	// (label values), to measure what the best fit gains.
	DomainOrder string
	// Preemption lets waiting groups evict running groups of lower
	// priority (preempt.go); nil: no preemption.
	Preemption *Preemption
	// DefaultDuration is the planned run time, in seconds, of a group
	// whose pods declare none. Default 3600.
	DefaultDuration int64
	// TicksPerSecond is the unit of the times passed in: 1 when they are
	// seconds (the scheduler), 1000 for milliseconds (the simulator).
	// Default 1.
	TicksPerSecond int64
	// RunID distinguishes this run's allocation records from those of an
	// earlier run (the scheduler uses its start time).
	RunID string
	// FormatTime renders a time for messages (a reservation's start); it
	// must be a pure function of its argument. Default: seconds from now.
	FormatTime func(t int64) string
	// Observe, if set, is told how each queue loop went; it must not call
	// back into the core.
	Observe func(LoopStats)
	// BuildOutside: nodes that arrive wait outside the graph until the
	// caller installs a graph it built outside its lock (prebuild.go);
	// false: the core rebuilds by itself when their time comes.
	BuildOutside bool
	// GatherNotice is how long, in seconds, a labelled group may keep its
	// pods out of the scheduling queue (Hold) before its first pod gets a
	// FluenceGroupWaiting event saying what it waits for. Default 10.
	GatherNotice int64
}

// LoopStats describe one queue loop.
type LoopStats struct {
	// Decisions counts the groups the loop considered.
	Decisions int
}

// Core is the gang lifecycle: groups, their allocations and slots, holds,
// overruns, pods other schedulers bound, node changes, replay after a
// restart, and the queue placing groups on the engine. It is deterministic
// and not safe for concurrent use: the caller serialises calls and carries
// out the Effects it takes with Ready.
type Core struct {
	cfg Config

	nodes map[string]*Node
	// dirty: the node set changed in a way only a new graph shows (a node
	// added or removed, its capacity changed): rebuild before deciding.
	dirty bool
	// nodeGen counts node changes that can change a constraint's answer
	// (a node added, removed or relabelled, its taints): queued requests
	// made at an older generation are rebuilt.
	nodeGen int64
	// shapeGen counts the node changes a graph must be rebuilt for (a
	// node removed, resized or moved between domains; a node added
	// without waiting): a graph planned before one is refused at install
	// (prebuild.go).
	shapeGen int64
	// graphGen counts graph rebuilds; builtAt is the time of the last.
	graphGen int64
	builtAt  int64
	// arrivals counts new nodes waiting outside the graph until arriveAt
	// (arrivals.go).
	arrivals int
	arriveAt int64
	m        *match.Matcher
	q        *queue.Manager
	// vertexOf maps node names to their vertices in the current graph.
	vertexOf map[string]int32
	// wakes holds reservations coming due and holds ending; ends the
	// planned ends (less one tick) of running allocations (wake.go).
	wakes, ends wakeHeap
	// refreshedGen is the node generation queued requests were last
	// brought up to date with.
	refreshedGen int64
	nextID       int64

	groups map[string]*group // by GroupID.Key
	// touched: keys of groups something happened to since the loop last
	// asked them for a request (touched.go).
	touched map[string]bool
	// joinDue: keys of groups that started with pods beyond the
	// allocation (an elastic group's; a role's pods beyond its count):
	// those pods ask to join in the loop (Tick), as a scheduling cycle's
	// Place would have them ask. Pods told to wait before their group
	// started have no cycle to come: nothing else would ask for them.
	joinDue map[string]bool
	podKey  map[string]string // UID -> group key
	// gated: labelled pods that wait for their scheduling gates, UID ->
	// group key, and how many each group has (setGated keeps both). They
	// are not members; messages count them.
	gated      map[string]string
	gatedCount map[string]int
	byAlloc    map[int64]*group
	// held: groups a node turned away, waiting out their hold.
	held map[string]bool
	// gathering: labelled groups with pods held out of the scheduling
	// queue until the group has them all (gather.go); heldKey maps each
	// held pod's UID to its group's key; gatherTouched: keys of those
	// groups something happened to since their hold was last judged.
	gathering     map[string]*gatherWait
	heldKey       map[string]string
	gatherTouched map[string]bool

	// foreign pods (bound by others, or without a record) by node; each
	// node's sum is one engine job.
	foreign    map[string]map[string]Resources
	foreignJob map[string]int64
	// foreignNode is the node of each foreign pod, by UID.
	foreignNode map[string]string
	// overloaded nodes hold more than the engine had free: nothing new
	// goes there until it fits again.
	overloaded map[string]bool
	// unplaced: running allocations the engine did not take when they were
	// replayed (they did not fit beside the rest): their pods hold their
	// nodes, marked overloaded, with no engine job to remove.
	unplaced map[int64]bool

	// admitCache holds node filters' answers for nodes of generation
	// admitGen.
	admitCache map[string]admission
	admitGen   int64
	// dev holds the marks of the devices pods' requests admit (devices.go).
	dev deviceMarks
	// claimUser: the pod (UID) using each claim (namespace/name), and
	// claimsOf each pod's claims (devices.go).
	claimUser map[string]string
	claimsOf  map[string][]string

	// finishedKey maps finished members, by UID, to their group's key
	// (members.go); review holds the keys of groups placed once that
	// something happened to since their whole condition was reported.
	finishedKey map[string]string
	review      map[string]bool
	// evicting and preempting are the keys of groups being preempted and
	// of the groups holding their nodes (preempt.go).
	evicting, preempting map[string]bool
	// moves are the groups moved to make room, by key, kept after
	// their pods are gone (preempt_move.go).
	moves map[string]*move
	// unmet are the keys of groups waiting with a preference for a
	// topology domain that no domain met when their request was built
	// (topology.go).
	unmet map[string]bool
	// flat are the keys of groups waiting within one domain of a label
	// that is not a topology level, chosen when their request was built.
	flat map[string]bool

	// pub is what Publish keeps (publish.go); nil until it is called.
	pub *publisher
	// scratch is reused by every preemption search (preempt_scratch.go).
	scratch preemptScratch

	fx  effects
	now int64
}

// New returns an empty core.
func New(cfg Config) (*Core, error) {
	if cfg.MatchPolicy == "" {
		cfg.MatchPolicy = "lonode"
	}
	if _, err := match.LookupPolicy(cfg.MatchPolicy); err != nil {
		return nil, err
	}
	if err := cfg.Queue.Validate(); err != nil {
		return nil, err
	}
	if cfg.RackLabel != "" && len(cfg.TopologyLevels) > 0 {
		return nil, fmt.Errorf("gang: both RackLabel (%s) and TopologyLevels are set; list the rack label in TopologyLevels instead", cfg.RackLabel)
	}
	switch cfg.DomainOrder {
	case "":
		cfg.DomainOrder = DomainTightest
	case DomainTightest, DomainFirst:
	default:
		return nil, fmt.Errorf("gang: unknown domain order %q (known: %s, %s)", cfg.DomainOrder, DomainTightest, DomainFirst)
	}
	cfg.TopologyLevels = slices.Clone(cfg.TopologyLevels)
	if _, err := topologyLevels(cfg.TopologyLevels); err != nil {
		return nil, err
	}
	if cfg.TicksPerSecond <= 0 {
		cfg.TicksPerSecond = 1
	}
	if cfg.GatherNotice <= 0 {
		cfg.GatherNotice = 10
	}
	if cfg.DefaultDuration <= 0 {
		cfg.DefaultDuration = 3600
	}
	if cfg.FormatTime == nil {
		tps := cfg.TicksPerSecond
		cfg.FormatTime = func(t int64) string { return fmt.Sprintf("t=%gs", float64(t)/float64(tps)) }
	}
	return &Core{
		cfg:           cfg,
		nodes:         map[string]*Node{},
		dirty:         true,
		groups:        map[string]*group{},
		touched:       map[string]bool{},
		joinDue:       map[string]bool{},
		podKey:        map[string]string{},
		gated:         map[string]string{},
		gatedCount:    map[string]int{},
		byAlloc:       map[int64]*group{},
		held:          map[string]bool{},
		gathering:     map[string]*gatherWait{},
		heldKey:       map[string]string{},
		gatherTouched: map[string]bool{},
		foreign:       map[string]map[string]Resources{},
		foreignJob:    map[string]int64{},
		overloaded:    map[string]bool{},
		review:        map[string]bool{},
		evicting:      map[string]bool{},
		preempting:    map[string]bool{},
		moves:         map[string]*move{},
		unmet:         map[string]bool{},
		flat:          map[string]bool{},
	}, nil
}

// Ready returns the effects of everything since the last call.
func (c *Core) Ready() Effects {
	c.reportWholes()
	c.releaseGathered()
	return c.fx.take()
}

func (c *Core) seconds(s int64) int64 { return s * c.cfg.TicksPerSecond }

func (c *Core) advance(now int64) {
	if now > c.now {
		c.now = now
	}
}

func (c *Core) newID() int64 {
	c.nextID++
	return c.nextID
}

// sortedGroups returns the groups in key order.
func (c *Core) sortedGroups() []*group {
	out := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *group) int { return cmp.Compare(a.id.Key, b.id.Key) })
	return out
}

// explain records an event unless it repeats the group's last one:
// warnings go to every pod of the group, progress to its first pod only,
// to keep the event stream readable. It reports whether it was not a
// repeat.
func (c *Core) explain(g *group, warning bool, reason, note string) bool {
	if g.lastEvent == reason+note {
		return false
	}
	g.lastEvent = reason + note
	if !warning {
		// The first pod in member order, found without sorting them all:
		// a waiting group of 128 pods is told of every new reservation.
		if p := firstMember(g); p != nil {
			c.fx.out.Events = append(c.fx.out.Events, Event{Pod: p.ref(), Warning: warning, Reason: reason, Note: note})
		}
		return true
	}
	for _, p := range g.sortedMembers() {
		c.fx.out.Events = append(c.fx.out.Events, Event{Pod: p.ref(), Warning: warning, Reason: reason, Note: note})
	}
	return true
}

// firstMember is sortedMembers()[0] (nil for no members).
func firstMember(g *group) *Pod {
	var first *Pod
	for _, p := range g.members {
		if first == nil || p.Created < first.Created || p.Created == first.Created && p.Name < first.Name {
			first = p
		}
	}
	return first
}

// condition records a group's condition when it changed; only groups
// defined by an object (a PodGroup of either kind) have one.
func (c *Core) condition(g *group, st ConditionStatus, msg string) {
	if g.id.Source != SourcePodGroup && g.id.Source != SourceNativePodGroup {
		return
	}
	cond := Condition{Group: g.id, Status: st, Message: msg}
	if g.lastCondition == cond {
		return
	}
	g.lastCondition = cond
	c.fx.out.Conditions = append(c.fx.out.Conditions, cond)
}

// reject marks a group impossible and tells its pods why.
func (c *Core) reject(g *group, why string) {
	c.touch(g)
	g.state, g.reason, g.early = rejected, why, false
	c.condition(g, Unsatisfiable, why)
	// Counted as the event is recorded: a group judged again (the nodes
	// changed) to the same verdict is not rejected anew.
	if c.explain(g, true, "FluenceGroupRejected", fmt.Sprintf("pod group %s (%d pods): %s", g.id.Key, g.id.Size, why)) {
		c.fx.out.Rejected = append(c.fx.out.Rejected, g.id.Key)
	}
}

// Stats are figures for metrics and inspection.
type Stats struct {
	Groups map[string]int // by phase
	// Queued counts requests in the queue; Reserved the groups holding a
	// reservation.
	Queued, Reserved int
	// Allocated is what allocations and foreign pods hold; Allocatable
	// what the nodes offer.
	Allocated, Allocatable Resources
	GraphRebuilds          int64
}

// Stats returns figures for metrics.
func (c *Core) Stats() Stats {
	s := Stats{Groups: map[string]int{}, GraphRebuilds: c.graphGen}
	for _, n := range groupStateNames {
		s.Groups[n] = 0
	}
	for _, g := range c.groups {
		if g.dormant() {
			continue
		}
		s.Groups[g.phase().String()]++
		if g.reservedAt >= 0 {
			s.Reserved++
		}
		for _, a := range g.allocs {
			if !a.running {
				s.Queued++
				continue
			}
			for _, sl := range a.slots {
				if !sl.done {
					s.Allocated.MilliCPU += sl.shape.MilliCPU
					s.Allocated.MemoryBytes += sl.shape.MemoryMiB << 20
					s.Allocated.GPU += sl.shape.GPU
					s.Allocated.Pods++
				}
			}
		}
	}
	for _, pods := range c.foreign {
		for _, r := range pods {
			s.Allocated.MilliCPU += r.MilliCPU
			s.Allocated.MemoryBytes += r.MemoryBytes
			s.Allocated.GPU += r.GPU
			s.Allocated.Pods++
		}
	}
	for _, n := range c.nodes {
		s.Allocatable.MilliCPU += n.Allocatable.MilliCPU
		s.Allocatable.MemoryBytes += n.Allocatable.MemoryBytes
		s.Allocatable.GPU += n.Allocatable.GPU
		s.Allocatable.Pods += n.Allocatable.Pods
	}
	return s
}

// Wakeup returns the next time after the last event at which the core
// must run even if nothing else happens: a reservation comes due, a hold
// ends, or an allocation reaches its planned end (and is extended if its
// pods still run). ok is false when there is none.
func (c *Core) Wakeup() (t int64, ok bool) {
	t, ok = c.earliest(&c.wakes)
	if e, eok := c.earliest(&c.ends); eok && (!ok || e < t) {
		t, ok = e, true
	}
	if c.arrivals > 0 && (!ok || c.arriveAt < t) {
		t, ok = max(c.arriveAt, c.now+1), true
	}
	return t, ok
}
