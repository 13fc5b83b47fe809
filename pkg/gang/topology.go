package gang

import (
	"fmt"
	"slices"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/match"
)

// A group with a topology key (a Kubernetes PodGroup's
// schedulingConstraints.topology[0].key) must be placed within one domain:
// nodes that share one value of that node label. Nodes without the label
// are in no domain. The request is confined to one domain by a node
// property constraint, key=value, chosen when the request is built (and
// built again whenever the nodes change): the first domain, in value
// order, where the group fits now; else the first where it could ever
// fit, to wait for; else the group is rejected, with the largest domain
// named.

// probeJob is the job id of a dry match; the core's own ids are positive.
const probeJob = -1

// confine builds the group's request confined to one domain of its
// topology key; build makes the request with an extra constraint.
func (c *Core) confine(key string, build func(*jobspec.Constraint) (*jobspec.Jobspec, []slotGroup, error)) (*jobspec.Jobspec, []slotGroup, error) {
	doms := c.domains(key)
	if len(doms) == 0 {
		return nil, nil, fmt.Errorf("its topology key %q is a label no node has", key)
	}
	var waitJS *jobspec.Jobspec
	var waitSlots []slotGroup
	for _, d := range doms {
		js, slots, err := build(jobspec.Properties(key + "=" + d.value))
		if err != nil {
			return nil, nil, err
		}
		if c.m == nil {
			return js, slots, nil
		}
		if r, err := c.m.Fits(js, probeJob, c.now); err == nil && r.Status == match.Allocated {
			return js, slots, nil
		}
		if waitJS != nil {
			continue
		}
		if r, err := c.m.Match(match.Satisfiability, js, probeJob, c.now); err == nil && r.Status == match.Satisfiable {
			waitJS, waitSlots = js, slots
		}
	}
	if waitJS != nil {
		return waitJS, waitSlots, nil
	}
	big := slices.MaxFunc(doms, func(a, b domain) int {
		if a.nodes != b.nodes {
			return a.nodes - b.nodes
		}
		return int(a.cap.MilliCPU - b.cap.MilliCPU)
	})
	return nil, nil, fmt.Errorf("no single domain of topology key %s can hold the whole group: the largest, %s=%s, has %d nodes (%s allocatable)",
		key, key, big.value, big.nodes, capacityNote(big.cap))
}

// domain is one value of a topology key and the nodes that carry it.
type domain struct {
	value string
	nodes int
	cap   Resources
}

// domains returns the domains of a node label, in value order.
func (c *Core) domains(key string) []domain {
	byValue := map[string]*domain{}
	for _, n := range c.nodes {
		v, ok := n.Labels[key]
		if !ok {
			continue
		}
		d := byValue[v]
		if d == nil {
			d = &domain{value: v}
			byValue[v] = d
		}
		d.nodes++
		d.cap.MilliCPU += n.Allocatable.MilliCPU
		d.cap.MemoryBytes += n.Allocatable.MemoryBytes
		d.cap.GPU += n.Allocatable.GPU
	}
	out := make([]domain, 0, len(byValue))
	for _, d := range byValue {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b domain) int {
		switch {
		case a.value < b.value:
			return -1
		case a.value > b.value:
			return 1
		}
		return 0
	})
	return out
}

func capacityNote(r Resources) string {
	s := fmt.Sprintf("%g CPUs, %dMi memory", float64(r.MilliCPU)/1000, r.MemoryBytes>>20)
	if r.GPU > 0 {
		s += fmt.Sprintf(", %d GPUs", r.GPU)
	}
	return s
}
