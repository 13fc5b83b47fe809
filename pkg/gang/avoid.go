package gang

import (
	"slices"

	"github.com/fluence-sched/fluence/pkg/jobspec"
)

// A node may turn away a pod the engine placed there: kube-scheduler's own
// filters check what the engine does not model (a host port another pod
// holds, volumes, pod affinity and anti-affinity, a pod the framework
// still counts). Placing the group again by the same rules would choose
// the same node, and the group would never start. So the core remembers,
// per pod, the nodes that turned it away, and the group's next placements
// leave them out for that pod. Each refusal teaches one pod and one node:
// a group converges in as many placements as there are refusals, each
// after the hold TurnedAway sets. The memory is dropped when an
// allocation of the group is let through (what the nodes refused then no
// longer matters), when the pod goes, when it would leave the pod no node
// at all, and when the group could never be placed with it (then the
// group is judged without it, never rejected for it). Once dropped so,
// refusals narrow nothing down any more and the hold between placements
// doubles (TurnedAway).

// placementHeld forgets the refusals once an allocation of the group is
// let through: what the nodes refused then no longer matters, and the
// next refusal starts the holds afresh.
func (g *group) placementHeld() {
	g.avoid, g.avoidSpent, g.holdStep = nil, false, 0
}

// avoidNode records that node turned the pod away, and reports whether
// that was news: a refusal already known (the pod was sent there again
// after its memory was dropped) teaches nothing.
func (c *Core) avoidNode(g *group, uid, node string) bool {
	av := g.avoid[uid]
	i, found := slices.BinarySearch(av, node)
	if found {
		return false
	}
	if g.avoid == nil {
		g.avoid = map[string][]string{}
	}
	g.avoid[uid] = slices.Insert(av, i, node)
	return true
}

// avoiding narrows where a pod may go (con, the hostlist of the nodes its
// filter admits, admits; nil for any node) by the nodes that turned it
// away. When that leaves no node, the pod's memory is dropped and con
// stands.
func (c *Core) avoiding(g *group, p *Pod, con *jobspec.Constraint, admits []string) *jobspec.Constraint {
	av := g.avoid[p.UID]
	if len(av) == 0 {
		return con
	}
	if admits == nil {
		for _, n := range c.sortedNodes() {
			admits = append(admits, n.Name)
		}
	}
	var names []string
	for _, n := range admits {
		if _, refused := slices.BinarySearch(av, n); !refused {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		delete(g.avoid, p.UID)
		g.avoidSpent = true
		return con
	}
	return jobspec.Hosts(names...)
}
