package gang

import (
	"fmt"
	"strings"
)

// inspect prints the core's snapshot: the queue in order, every group,
// every node and the graph's shape.
func (s *script) inspect() {
	snap := s.core.Snapshot(s.now)
	qc := snap.QueueConfig
	fmt.Fprintf(&s.out, "  now %d; match %s; queue %s depth %d\n", snap.Now, snap.MatchPolicy, qc.Policy, qc.QueueDepth)
	for i, q := range snap.Queue {
		fmt.Fprintf(&s.out, "  queue %d %s %s pods=%d prio=%d submit=%d at=%d", i+1, q.Group, q.State, q.Pods, q.Priority, q.Submit, q.At)
		if q.NotBefore > 0 {
			fmt.Fprintf(&s.out, " notBefore=%d", q.NotBefore)
		}
		if q.Reason != "" {
			fmt.Fprintf(&s.out, " (%s)", q.Reason)
		}
		s.out.WriteString("\n")
	}
	for _, g := range snap.Groups {
		fmt.Fprintf(&s.out, "  group %s %s size=%d pods=%d placed=%d bound=%d since=%d started=%d end=%d reserved=%d",
			g.ID.Key, g.Phase, g.ID.Size, g.Pods, g.Placed, g.Bound, g.Since, g.Started, g.PlannedEnd, g.ReservedAt)
		if g.Ask.Pods > 0 {
			fmt.Fprintf(&s.out, " ask=%s largest=%s eligible=%d free=%s largestFree=%s", res(g.Ask), res(g.LargestPod), g.Eligible, res(g.Free), res(g.LargestFree))
		}
		if len(g.Domains) > 0 {
			fmt.Fprintf(&s.out, " domains=%s", strings.Join(g.Domains, ","))
		}
		s.out.WriteString("\n")
		var slots []string
		for _, sl := range g.Slots {
			slots = append(slots, sl.Node+":"+sl.Pod+":"+sl.State)
		}
		if len(slots) > 0 {
			fmt.Fprintf(&s.out, "    slots %s\n", strings.Join(slots, " "))
		}
	}
	for _, n := range snap.Nodes {
		fmt.Fprintf(&s.out, "  node %s zone=%s down=%v overloaded=%v allocatable=%s allocated=%s foreign=%s", n.Name, n.Zone, n.Down, n.Overloaded, res(n.Allocatable), res(n.Allocated), res(n.Foreign))
		for _, g := range n.Groups {
			fmt.Fprintf(&s.out, " %s:%d", g.Group, g.Pods)
		}
		s.out.WriteString("\n")
	}
	gs := snap.Graph
	fmt.Fprintf(&s.out, "  graph built=%v stale=%v arriving=%d rebuilds=%d vertices=%d", gs.Built, gs.Stale, gs.Arriving, gs.Rebuilds, gs.Vertices)
	for _, tc := range gs.Types {
		fmt.Fprintf(&s.out, " %s:%d/%d", tc.Type, tc.Vertices, tc.Size)
	}
	s.out.WriteString("\n")
	if s.cfg.TopologyLevels != nil || s.cfg.RackLabel != "" {
		for _, l := range gs.Levels {
			fmt.Fprintf(&s.out, "  level %s key=%s domains=%d unlabelled=%d\n", l.Type, l.Key, l.Domains, l.Unlabelled)
		}
	}
	if gs.Root != nil {
		printVertex(&s.out, gs.Root, "    ")
	}
}

func printVertex(out *strings.Builder, v *GraphVertex, indent string) {
	fmt.Fprintf(out, "%s%s %s size=%d%s", indent, v.Type, v.Name, v.Size, v.Unit)
	if v.Count > 1 {
		fmt.Fprintf(out, " x%d", v.Count)
	}
	if v.Down {
		out.WriteString(" down")
	}
	out.WriteString("\n")
	for _, c := range v.Children {
		printVertex(out, c, indent+"  ")
	}
}

func res(r Resources) string {
	return fmt.Sprintf("{cpu:%dm mem:%s gpu:%d pods:%d}", r.MilliCPU, Memory(r.MemoryBytes), r.GPU, r.Pods)
}

// printExplanation prints an explanation: its verdict and numbers, then its
// sentences.
func printExplanation(out *strings.Builder, e Explanation) {
	fmt.Fprintf(out, "  explain %s: %s position=%d/%d expectedStart=%d", e.Group.ID.Key, e.Verdict, e.Position, e.Queued, e.ExpectedStart)
	if len(e.Ahead) > 0 {
		fmt.Fprintf(out, " ahead=%s", strings.Join(e.Ahead, ","))
	}
	if len(e.Freeing) > 0 {
		fmt.Fprintf(out, " freeing=%s", strings.Join(e.Freeing, ","))
	}
	out.WriteString("\n")
	fmt.Fprintf(out, "    %s\n", e.Summary)
	for _, d := range e.Details {
		fmt.Fprintf(out, "    %s\n", d)
	}
	for _, sf := range e.Short {
		fmt.Fprintf(out, "    short %s need=%d have=%d perPod=%d perNode=%d\n", sf.Resource, sf.Need, sf.Have, sf.PerPod, sf.PerNode)
	}
}
