package gang

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// Explanation says why a group is where it is and what comes next, in
// words and in the numbers the words quote.
type Explanation struct {
	Group GroupStatus
	// Verdict is one word: placed, reserved, waiting, blocked, held,
	// gathering, rejected or invalid.
	Verdict string
	// Summary is one sentence; Details are the sentences that back it.
	Summary string
	Details []string
	// Short lists what the group's waiting pods ask more of than there is:
	// free now on the nodes they may use (a waiting group), or on the whole
	// cluster (a rejected one).
	Short []Shortfall
	// ExpectedStart is the start the engine reserved; -1 when it has none.
	ExpectedStart int64
	// Position is the group's request's place in the queue, from 1; 0
	// when it has none. Queued counts the requests in the queue.
	Position, Queued int
	// Ahead lists the groups whose requests come before it, in order.
	Ahead []string
	// Freeing lists the running groups planned to end by ExpectedStart,
	// by planned end.
	Freeing []string
}

// Shortfall is one resource a group asks more of than there is.
type Shortfall struct {
	// Resource is cpu (in millicores), memory (bytes), gpu or pods.
	Resource string
	// Need is what the pods ask in all and Have what there is; PerPod is
	// the most one pod asks and PerNode the most one node has.
	Need, Have, PerPod, PerNode int64
}

// Verdicts.
const (
	VerdictPlaced    = "placed"
	VerdictReserved  = "reserved"
	VerdictWaiting   = "waiting"
	VerdictBlocked   = "blocked"
	VerdictHeld      = "held"
	VerdictGathering = "gathering"
	VerdictRejected  = "rejected"
	VerdictInvalid   = "invalid"
)

// Explain explains the group with the key; false when there is none.
func (s *Snapshot) Explain(key string) (Explanation, bool) {
	g, ok := s.Group(key)
	if !ok {
		return Explanation{}, false
	}
	e := Explanation{Group: g, ExpectedStart: -1, Queued: len(s.Queue)}
	var entry *QueueEntry
	for i := range s.Queue {
		if s.Queue[i].Group == key {
			entry, e.Position = &s.Queue[i], i+1
			break
		}
		e.Ahead = append(e.Ahead, s.Queue[i].Group)
	}
	if entry == nil {
		e.Ahead = nil
	}
	switch {
	case g.Phase == invalid.String():
		e.Verdict = VerdictInvalid
		e.Summary = fmt.Sprintf("%s is invalid: %s.", key, g.Reason)
		e.Details = append(e.Details, "It is judged again when the pod that disagrees changes or goes away.")
	case g.Phase == rejected.String():
		s.explainRejected(&e)
	case entry != nil && entry.NotBefore > s.Now:
		e.Verdict = VerdictHeld
		e.Summary = fmt.Sprintf("%s is held until %s: a node turned its last placement away.", key, s.when(entry.NotBefore))
		e.Details = append(e.Details, fmt.Sprintf("It keeps its place in line (%d of %d) and its pods are placed again when the hold ends.", e.Position, e.Queued))
		for _, r := range g.Refused {
			e.Details = append(e.Details, fmt.Sprintf("Pod %s is placed elsewhere than %s, which turned it away.", r.Pod, joinNames(r.Nodes)))
		}
	case entry != nil && entry.State == queue.Reserved.String():
		s.explainReserved(&e, entry)
	case entry != nil && entry.State == queue.Blocked.String():
		e.Verdict = VerdictBlocked
		e.Summary = fmt.Sprintf("%s waits: no start time works with the resources as they are (nodes down, or held by pods without a planned end).", key)
		e.Details = append(e.Details, "It is tried again when resources change: a pod ends, a node comes back or is added.")
		s.explainShort(&e)
		e.Details = append(e.Details, engineSaid(entry.Reason))
	case entry != nil:
		s.explainWaiting(&e, entry)
	case g.Phase == placed.String():
		s.explainPlaced(&e)
	default:
		e.Verdict = VerdictGathering
		if g.WaitsFor != "" {
			e.Summary = fmt.Sprintf("%s waits for its pod %s (it was first seen %s).", key, g.WaitsFor, s.ago(g.Since))
			e.Details = append(e.Details, "The pod names an object the scheduler has not seen yet. A group is placed whole: the engine takes it up once every pod can be placed as it is.")
			break
		}
		if g.Pods >= int(g.ID.Size) && !rolesMissing(g.Roles) {
			e.Summary = fmt.Sprintf("%s has its %d pods; the engine takes it up at its next loop (about once a second, or when resources are freed).", key, g.ID.Size)
			break
		}
		e.Summary = fmt.Sprintf("%s waits for its pods: %d of %d exist (it was first seen %s).", key, g.Pods, g.ID.Size, s.ago(g.Since))
		if g.Pods >= int(g.ID.Size) {
			e.Summary = fmt.Sprintf("%s waits for its pods: %d of %d exist, but some role has fewer than its count (it was first seen %s).", key, g.Pods, g.ID.Size, s.ago(g.Since))
		}
		switch {
		case g.Gated == 1:
			e.Details = append(e.Details, "1 more exists but waits for its scheduling gates (spec.schedulingGates); it counts once they are lifted.")
		case g.Gated > 1:
			e.Details = append(e.Details, fmt.Sprintf("%d more exist but wait for their scheduling gates (spec.schedulingGates); they count once the gates are lifted.", g.Gated))
		}
		if g.Placed > 0 {
			e.Details = append(e.Details, fmt.Sprintf("%d of its pods hold a place; it asks for the others once they exist.", g.Placed))
		}
		if g.Held > 0 {
			e.Details = append(e.Details, fmt.Sprintf("Held out of the scheduling queue until then: %d of its pods. They take no scheduling cycle, so they have no PodScheduled condition and no FailedScheduling event; once the group has waited %ds, a FluenceGroupWaiting event on its first pod says what it waits for.", g.Held, s.gatherNotice))
		}
		e.Details = append(e.Details, "A group is placed whole: the engine takes it up once all its pods exist.")
	}
	if d := rolesDetail(g.Roles); d != "" {
		e.Details = append(e.Details, d)
	}
	if len(g.Domains) > 0 {
		e.Details = append(e.Details, topologyDetail(g))
	}
	e.Details = append(e.Details, s.preemptionDetails(g, entry)...)
	return e, true
}

// preemptionDetails say whether a waiting group preempts, why not, or
// that it is being preempted.
func (s *Snapshot) preemptionDetails(g GroupStatus, entry *QueueEntry) []string {
	var out []string
	if g.EvictedBy != "" {
		out = append(out, fmt.Sprintf("It is being preempted by %s: its pods are evicted, and the group is placed whole again once none of them runs.", g.EvictedBy))
	}
	if g.YieldsTo != "" {
		out = append(out, fmt.Sprintf("Some of its pods are evicted for %s (its disruptionMode is single): it runs on without them, and pods replacing them wait until %s has started or given up its hold.", g.YieldsTo, g.YieldsTo))
	}
	switch {
	case len(g.Preempting) > 0:
		out = append(out, fmt.Sprintf("It preempts %s to start: their nodes are held for it until %s; should they still run then, it is planned again.",
			strings.Join(g.Preempting, ", "), s.when(g.PreemptUntil)))
		if g.PreemptChoice != "" {
			out = append(out, "It chose the cheapest room: "+g.PreemptChoice+".")
		}
	case entry == nil || s.Preemption == nil:
	case g.PreemptNote != "":
		out = append(out, fmt.Sprintf("It does not preempt: %s.", g.PreemptNote))
	default:
		when := "when it has no reservation"
		if s.Preemption.After > 0 {
			when = fmt.Sprintf("when its reserved start is more than %d s away, or it has none", s.Preemption.After)
		}
		out = append(out, fmt.Sprintf("It may preempt running groups of lower priority than its %d, whole, %s.", g.Priority, when))
	}
	return out
}

// topologyDetail says which topology domain a group is kept in.
func topologyDetail(g GroupStatus) string {
	asked := "its required " + g.ID.TopologyKey
	if g.ID.TopologyKey == "" {
		asked = "its preferred " + g.ID.TopologyPreferred
	}
	return fmt.Sprintf("It is kept within %s (%s: a domain is the nodes sharing one value of that label).", strings.Join(g.Domains, " and "), asked)
}

func (s *Snapshot) explainRejected(e *Explanation) {
	g := e.Group
	e.Verdict = VerdictRejected
	e.Summary = fmt.Sprintf("%s can never be placed as it is: %s.", g.ID.Key, g.Reason)
	var capacity, largest Resources
	for _, n := range s.Nodes {
		capacity = capacity.plus(n.Allocatable)
		largest = largest.most(n.Allocatable)
	}
	need := g.Ask
	if missing := int64(g.ID.Size) - int64(g.Pods); missing > 0 && g.Ask.Pods > 0 {
		// The engine judged it before all its pods existed, counting each
		// missing one as the smallest seen; so do the numbers.
		smallest := g.SmallestPod
		need = need.plus(Resources{MilliCPU: missing * smallest.MilliCPU, MemoryBytes: missing * smallest.MemoryBytes, GPU: missing * smallest.GPU, Pods: missing})
		e.Details = append(e.Details, fmt.Sprintf("%d of its %d pods exist; each missing one is counted as the smallest seen.", g.Pods, g.ID.Size))
	}
	for _, r := range resourceNames {
		sf := Shortfall{Resource: r, Need: need.get(r), Have: capacity.get(r), PerPod: g.LargestPod.get(r), PerNode: largest.get(r)}
		if sf.Need > sf.Have || sf.PerPod > sf.PerNode {
			e.Short = append(e.Short, sf)
			e.Details = append(e.Details, fmt.Sprintf("%s: its pods ask %s in all, at most %s each; the cluster's %d nodes have %s, at most %s on one.",
				r, quantity(r, sf.Need), quantity(r, sf.PerPod), len(s.Nodes), quantity(r, sf.Have), quantity(r, sf.PerNode)))
		}
	}
	e.Details = append(e.Details, "It is judged again when a node is added or changes, or when one of its pods changes.")
}

func (s *Snapshot) explainReserved(e *Explanation, entry *QueueEntry) {
	key := e.Group.ID.Key
	e.Verdict, e.ExpectedStart = VerdictReserved, entry.At
	e.Summary = fmt.Sprintf("%s waits for resources and holds a reservation: the engine plans its start at %s.", key, s.when(entry.At))
	s.explainShort(e)
	for _, g := range s.byPlannedEnd() {
		if g.PlannedEnd > s.Now && g.PlannedEnd <= entry.At {
			e.Freeing = append(e.Freeing, g.ID.Key)
		}
	}
	if len(e.Freeing) > 0 {
		e.Details = append(e.Details, fmt.Sprintf("That is when %s end%s as planned; a group that runs longer moves the start later, one that ends earlier brings it forward.",
			listSome(e.Freeing, 5), plural(len(e.Freeing), "", "s")))
	}
	e.Details = append(e.Details, fmt.Sprintf("It is %s of %d waiting requests; groups behind it start early only where they do not delay it.", ordinal(e.Position), e.Queued))
}

func (s *Snapshot) explainWaiting(e *Explanation, entry *QueueEntry) {
	key := e.Group.ID.Key
	cfg := s.QueueConfig
	e.Verdict = VerdictWaiting
	e.Summary = fmt.Sprintf("%s waits for resources at position %d of %d in the queue; it has no planned start yet.", key, e.Position, e.Queued)
	short := s.explainShort(e)
	var reserved []string
	for _, q := range s.Queue[:e.Position-1] {
		if q.At >= 0 {
			reserved = append(reserved, fmt.Sprintf("%s (start %s)", q.Group, s.format(q.At)))
		}
	}
	if !short && len(reserved) > 0 {
		e.Details = append(e.Details, fmt.Sprintf("Enough may be free now, but it is promised to %s: starting this group would delay %s.", strings.Join(reserved, ", "), plural(len(reserved), "them", "it")))
	}
	switch cfg.Policy {
	case queue.FCFS:
		e.Details = append(e.Details, "Under fcfs no request holds a reservation and none starts before those ahead of it.")
	case queue.Easy:
		e.Details = append(e.Details, "Under easy only the first waiting request holds a reservation; the others start early only where they delay it.")
	case queue.Hybrid:
		e.Details = append(e.Details, fmt.Sprintf("Under hybrid the first %d waiting requests hold reservations; the others start early only where they delay none.", cfg.ReservationDepth))
	case queue.Conservative:
		e.Details = append(e.Details, fmt.Sprintf("Under conservative every request within the queue depth (%d) holds a reservation once one can be found.", cfg.QueueDepth))
	}
	if e.Position > cfg.QueueDepth {
		e.Details = append(e.Details, fmt.Sprintf("It is beyond the queue depth (%d): the engine considers it once requests ahead of it start.", cfg.QueueDepth))
	}
	if len(e.Ahead) > 0 {
		e.Details = append(e.Details, "Ahead of it: "+listSome(e.Ahead, 5)+".")
	}
	e.Details = append(e.Details, engineSaid(entry.Reason))
}

func (s *Snapshot) explainPlaced(e *Explanation) {
	g := e.Group
	e.Verdict = VerdictPlaced
	var nodes []string
	for _, sl := range g.Slots {
		if sl.State != "done" && !slices.Contains(nodes, sl.Node) {
			nodes = append(nodes, sl.Node)
		}
	}
	e.Summary = fmt.Sprintf("%s is placed: %d pods on %s, started %s after waiting %s.", g.ID.Key, g.Placed, listSome(nodes, 8), s.ago(g.Started), s.span(g.Started-g.Since))
	e.Details = append(e.Details, fmt.Sprintf("%d of its %d pods are bound.", g.Bound, g.Placed))
	if g.PlannedEnd >= 0 {
		e.Details = append(e.Details, fmt.Sprintf("It is planned to end at %s, from its declared duration or the default; the engine extends the plan while its pods still run.", s.when(g.PlannedEnd)))
	} else {
		e.Details = append(e.Details, "It has no planned end.")
	}
}

// explainShort adds what the group's waiting pods ask more of than is free
// now on the nodes they may use, and reports whether anything is short.
func (s *Snapshot) explainShort(e *Explanation) bool {
	g := e.Group
	if g.Ask.Pods == 0 {
		return false
	}
	if g.Eligible == 0 {
		e.Details = append(e.Details, fmt.Sprintf("None of the nodes its %d waiting pods may use takes new work now (down, cordoned, or overloaded).", g.Ask.Pods))
		return true
	}
	short := false
	for _, r := range resourceNames {
		sf := Shortfall{Resource: r, Need: g.Ask.get(r), Have: g.Free.get(r), PerPod: g.LargestPod.get(r), PerNode: g.LargestFree.get(r)}
		if sf.Need > sf.Have || sf.PerPod > sf.PerNode {
			short = true
			e.Short = append(e.Short, sf)
			e.Details = append(e.Details, fmt.Sprintf("%s: its %d waiting pods ask %s in all, at most %s each; %s is free now on the %d nodes they may use, at most %s on one.",
				r, g.Ask.Pods, quantity(r, sf.Need), quantity(r, sf.PerPod), quantity(r, sf.Have), g.Eligible, quantity(r, sf.PerNode)))
		}
	}
	return short
}

func (s *Snapshot) byPlannedEnd() []GroupStatus {
	var out []GroupStatus
	for _, g := range s.Groups {
		if g.Started >= 0 && g.PlannedEnd >= 0 {
			out = append(out, g)
		}
	}
	// Stable: groups ending together stay in key order.
	slices.SortStableFunc(out, func(a, b GroupStatus) int { return cmp.Compare(a.PlannedEnd, b.PlannedEnd) })
	return out
}

func engineSaid(reason string) string {
	if reason == "" {
		return "The engine has not answered for it yet."
	}
	return "The engine's last answer: " + reason + "."
}

// resourceNames are the resources shortfalls are counted in, in order.
var resourceNames = []string{"cpu", "memory", "gpu", "pods"}

func (r Resources) get(name string) int64 {
	switch name {
	case "cpu":
		return r.MilliCPU
	case "memory":
		return r.MemoryBytes
	case "gpu":
		return r.GPU
	}
	return r.Pods
}

// quantity renders an amount of a resource as Kubernetes writes it.
func quantity(resource string, v int64) string {
	switch resource {
	case "cpu":
		return fmt.Sprintf("%dm", v)
	case "memory":
		return Memory(v)
	}
	return fmt.Sprint(v)
}

// Memory renders bytes in the largest binary unit that holds them whole
// (Gi, Mi, Ki), else in bytes.
func Memory(b int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"Gi", 30}, {"Mi", 20}, {"Ki", 10}} {
		if b != 0 && b%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", b>>u.shift, u.suffix)
		}
	}
	return fmt.Sprint(b)
}

// when renders a time and how far it is from the snapshot's.
func (s *Snapshot) when(t int64) string {
	switch {
	case t > s.Now:
		return fmt.Sprintf("%s (in %s)", s.format(t), s.span(t-s.Now))
	case t < s.Now:
		return fmt.Sprintf("%s (%s ago)", s.format(t), s.span(s.Now-t))
	}
	return s.format(t) + " (now)"
}

// ago renders how long before the snapshot a time was.
func (s *Snapshot) ago(t int64) string {
	if t >= s.Now {
		return "just now"
	}
	return s.span(s.Now-t) + " ago"
}

// span renders a number of ticks as a duration rounded to the second.
func (s *Snapshot) span(ticks int64) string {
	d := time.Duration(ticks) * time.Second / time.Duration(max(s.TicksPerSecond, 1))
	return Span(d)
}

// Span renders a duration rounded to the second, without zero units
// ("1h", "9m58s", "45s").
func Span(d time.Duration) string {
	d = d.Round(time.Second)
	if d == 0 {
		return "0s"
	}
	out := d.String()
	if strings.HasSuffix(out, "m0s") {
		out = strings.TrimSuffix(out, "0s")
	}
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return out
}

func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

func plural(n int, many, one string) string {
	if n == 1 {
		return one
	}
	return many
}

func ordinal(n int) string {
	switch n {
	case 1:
		return "first"
	case 2:
		return "second"
	case 3:
		return "third"
	}
	return fmt.Sprintf("number %d", n)
}
