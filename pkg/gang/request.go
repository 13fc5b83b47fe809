package gang

import (
	"slices"
	"strings"

	"github.com/fluence-sched/fluence/pkg/jobspec"
)

func filterKey(p *Pod) string {
	if p == nil || p.Filter == nil {
		return ""
	}
	return p.Filter.Key()
}

func joinNames(names []string) string { return strings.Join(names, ",") }

// groupRequest builds the jobspec of some of a group's pods, plus standIns
// slots of the smallest pod possible on any node for pods not seen yet:
// one slot per pod, the longest declared duration (or the default), and
// where each pod may go, evaluated against the nodes as they are now.
// When every pod admits the same nodes that is the job's constraint (its
// explanation then counts the nodes excluded); otherwise each pod's slot
// carries its own, so a launcher and its workers may use different pools.
func (c *Core) groupRequest(g *group, pods []*Pod, standIns int) (*jobspec.Jobspec, []slotGroup, error) {
	nodes := c.sortedNodes()
	var dur int64
	shapes := make([]Shape, 0, len(pods)+standIns)
	requires := make([]*jobspec.Constraint, 0, len(pods)+standIns)
	admitted := map[string]*jobspec.Constraint{} // filter key -> hostlist
	for _, p := range pods {
		if p.Invalid != "" {
			return nil, nil, &PodError{Pod: p.String(), Reason: p.Invalid}
		}
		dur = max(dur, p.Duration)
		shapes = append(shapes, ShapeOf(p.Requests))
		if p.Filter == nil {
			requires = append(requires, nil)
			continue
		}
		k := p.Filter.Key()
		con, ok := admitted[k]
		if !ok {
			var names []string
			for _, n := range nodes {
				if p.Filter.Admits(n) {
					names = append(names, n.Name)
				}
			}
			if len(names) == 0 {
				return nil, nil, &PodError{Pod: p.String(), Reason: "no node satisfies its requirements: " + p.Filter.Why(nodes)}
			}
			if len(names) < len(nodes) {
				con = jobspec.Hosts(names...)
			}
			admitted[k] = con
		}
		requires = append(requires, con)
	}
	for range standIns {
		shapes = append(shapes, Shape{MilliCPU: 1})
		requires = append(requires, nil)
	}
	if dur == 0 {
		dur = c.cfg.DefaultDuration
	}
	dur = c.seconds(dur)
	if shared := requires[0]; shared != nil && !slices.ContainsFunc(requires, func(r *jobspec.Constraint) bool { return r != shared }) {
		return groupJobspec(shapes, nil, shared, dur)
	}
	if !slices.ContainsFunc(requires, func(r *jobspec.Constraint) bool { return r != nil }) {
		requires = nil
	}
	return groupJobspec(shapes, requires, nil, dur)
}

// PodError says why a pod cannot be placed as it is.
type PodError struct {
	Pod    string
	Reason string
}

func (e *PodError) Error() string { return "pod " + e.Pod + ": " + e.Reason }
