package gang

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/match"
)

func filterKey(p *Pod) string {
	if p == nil || p.Filter == nil {
		return ""
	}
	return p.Filter.Key()
}

func joinNames(names []string) string { return strings.Join(names, ",") }

// groupRequest builds the jobspec of some of a group's pods, plus standIns
// slots of the stand-in shape on any node for pods not seen yet:
// one slot per pod, the longest declared duration (or the default), and
// where each pod may go, evaluated against the nodes as they are now.
// When every pod admits the same nodes that is the job's constraint (its
// explanation then counts the nodes excluded); otherwise each pod's slot
// carries its own, so a launcher and its workers may use different pools.
//
// A pod's device requests with several choices (firstAvailable) are met
// by one choice for the whole group, the i-th of every such request: the
// first that fits now, else the first the cluster could ever hold (the
// group waits for it), else the first (whose rejection says why).
func (c *Core) groupRequest(g *group, pods []*Pod, standIns int, standIn Shape) (*jobspec.Jobspec, []slotGroup, error) {
	n := 1
	for _, p := range pods {
		n = max(n, choices(p))
	}
	if n == 1 || c.m == nil {
		return c.groupRequestWith(g, pods, standIns, standIn, 0)
	}
	ever := -1
	for i := range n {
		js, slots, err := c.groupRequestWith(g, pods, standIns, standIn, i)
		if err != nil {
			continue
		}
		if r, err := c.m.Fits(js, probeJob, c.now); err == nil && r.Status == match.Allocated {
			return js, slots, nil
		}
		if ever < 0 {
			if r, err := c.m.Match(match.Satisfiability, js, probeJob, c.now); err == nil && r.Status != match.Unsatisfiable {
				ever = i
			}
		}
	}
	// Built again: building records the group's planned domain.
	return c.groupRequestWith(g, pods, standIns, standIn, max(ever, 0))
}

// groupRequestWith is groupRequest with choice i of every device request.
func (c *Core) groupRequestWith(g *group, pods []*Pod, standIns int, standIn Shape, choice int) (*jobspec.Jobspec, []slotGroup, error) {
	var dur int64
	apart := true
	// Stand-ins are counted, not listed (groupJobspecWith).
	shapes := make([]Shape, 0, len(pods))
	requires := make([]*jobspec.Constraint, 0, len(pods))
	for _, p := range pods {
		if p.Invalid != "" {
			return nil, nil, &PodError{Pod: p.String(), Reason: p.Invalid}
		}
		dur = max(dur, p.Duration)
		apart = apart && p.Apart
		shapes = append(shapes, c.shapeOf(p, choice))
		var con *jobspec.Constraint
		var admits []string // nil: every node
		if p.Filter != nil {
			a := c.admission(p)
			if a.none != "" {
				return nil, nil, &PodError{Pod: p.String(), Reason: "no node satisfies its requirements: " + a.none}
			}
			con, admits = a.hosts, a.names
		}
		requires = append(requires, c.besideApart(g, p, c.avoiding(g, p, con, admits)))
	}
	if dur == 0 {
		dur = c.cfg.DefaultDuration
	}
	dur = c.seconds(dur)
	var shared *jobspec.Constraint
	// A stand-in may go anywhere, so no constraint is shared with one.
	if first := requires[0]; standIns == 0 && first != nil && !slices.ContainsFunc(requires, func(r *jobspec.Constraint) bool { return r != first }) {
		shared, requires = first, nil
	} else if !slices.ContainsFunc(requires, func(r *jobspec.Constraint) bool { return r != nil }) {
		requires = nil
	}
	build := func(domain *jobspec.Constraint, level string) (*jobspec.Jobspec, []slotGroup, error) {
		con := shared
		switch {
		case domain != nil && shared != nil:
			con = jobspec.And(shared, domain)
		case domain != nil:
			con = domain
		}
		return groupJobspecWith(shapes, requires, int64(standIns), standIn, con, level, dur, apart)
	}
	g.planned, g.plannedLevel = "", ""
	if key := g.id.TopologyKey; key != "" {
		if v, ok := c.domainOf(g, key); ok {
			// A pod joining a running group goes where the group runs.
			return c.within(g, key, v, build)
		}
		var js *jobspec.Jobspec
		var slots []slotGroup
		var err error
		if typ, ok := c.levelType(key); ok {
			js, slots, err = c.inLevel(g, key, typ, build)
		} else {
			js, slots, err = c.confine(g, key, build)
		}
		if note := c.deviceNote(shapes, key); err != nil && note != "" {
			// A domain's size in nodes and CPUs says little when
			// devices are what it lacks.
			err = fmt.Errorf("%w; %s", err, note)
		}
		return js, slots, err
	}
	if key := g.id.TopologyPreferred; key != "" {
		return c.prefer(g, key, build)
	}
	return build(nil, "")
}

// admission is a filter's answer for the nodes of one generation: the
// nodes it admits, by name in node order, and their hostlist (nil when it
// admits them all), or why it admits none.
type admission struct {
	names []string
	hosts *jobspec.Constraint
	none  string
}

// admission evaluates the pod's filter against the nodes as they are now.
// Answers are shared by pods with the same requirements until the nodes
// change: pods that only avoid tainted nodes are judged once, not once
// per pod.
func (c *Core) admission(p *Pod) admission {
	if c.admitGen != c.nodeGen || c.admitCache == nil {
		c.admitCache, c.admitGen = map[string]admission{}, c.nodeGen
	}
	k := p.Filter.Key()
	a, ok := c.admitCache[k]
	if !ok {
		nodes := c.sortedNodes()
		for _, n := range nodes {
			if p.Filter.Admits(n) {
				a.names = append(a.names, n.Name)
			}
		}
		switch {
		case len(a.names) == 0:
			a.none = p.Filter.Why(nodes)
		case len(a.names) < len(nodes):
			a.hosts = jobspec.Hosts(a.names...)
		}
		c.admitCache[k] = a
	}
	return a
}

// PodError says why a pod cannot be placed as it is.
type PodError struct {
	Pod    string
	Reason string
}

func (e *PodError) Error() string { return "pod " + e.Pod + ": " + e.Reason }
