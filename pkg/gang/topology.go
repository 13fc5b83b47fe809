package gang

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/match"
)

// A group may be kept within one domain: the nodes that share one value
// of a node label (a rack, a block, a zone). Nodes without the label are
// in no domain of it.
//
// When the label is one of the graph's topology levels, the domains are
// vertices of the graph and the request asks for the group within one of
// them (rack[1] -> slots): the matcher searches every rack for one that
// holds the whole group, the tightest first (match.Options.TightDomains:
// the best fit, so the emptier racks stay whole for the groups that need
// them), and a reservation waits for whichever rack frees first. The
// domain the group got is read from its nodes when it starts.
//
// A label that is no level is a flat level of its values: the request is
// confined to one domain by a node property constraint, key=value, chosen
// when the request is built (and built again whenever the nodes change):
// among the domains where the group fits now the one with the least room
// left; else the first, in value order, where it could ever fit, to wait
// for. Each domain tried costs a match over the cluster, which the levels
// avoid.
//
// Required (a Kubernetes PodGroup's schedulingConstraints.topology[0].key,
// or the topology-required annotation): if no domain could ever hold the
// group it is rejected, with the largest domain named.
//
// Preferred (the topology-preferred annotation): the tightest domain of
// that level where the group fits now; else of each level outside it
// (the configured topology levels, outermost first), tightest first; else
// anywhere. The placement's event says which domain it got.
//
// A pod joining a running group goes to the group's domain (members.go).

// Domain orders (Config.DomainOrder).
const (
	DomainTightest = "tightest"
	DomainFirst    = "first"
)

// probeJob is the job id of a dry match; the core's own ids are positive.
const probeJob = -1

// buildFunc makes the group's request with an extra constraint, within
// one vertex of a level's type when level is set.
type buildFunc func(constraint *jobspec.Constraint, level string) (*jobspec.Jobspec, []slotGroup, error)

// levelType returns the graph's vertex type of a topology key, if the key
// is one of its levels.
func (c *Core) levelType(key string) (string, bool) {
	for _, l := range c.levels() {
		if l.key == key {
			return l.typ, true
		}
	}
	return "", false
}

// inLevel builds the group's request within one domain of a topology
// level, any the matcher finds. Nodes without the level's label are one
// vertex of the level too (its unknown domain); the request's constraint
// that every node carry the label keeps the group out of it. A group no
// domain could ever hold is refused here, with the largest domain named,
// rather than by the queue with the matcher's count of racks.
func (c *Core) inLevel(g *group, key, typ string, build buildFunc) (*jobspec.Jobspec, []slotGroup, error) {
	js, slots, err := build(jobspec.Properties(key), typ)
	if err != nil {
		return nil, nil, err
	}
	if c.m != nil {
		if r, err := c.m.Match(match.Satisfiability, js, probeJob, c.now); err != nil || r.Status != match.Satisfiable {
			return nil, nil, c.noDomain(key, c.domains(key))
		}
	}
	g.plannedLevel = key
	return js, slots, nil
}

// domainAt is the domain, key=value, of the nodes named; "" when they
// are not all in one.
func (c *Core) domainAt(key string, nodes []string) string {
	if len(nodes) == 0 {
		return ""
	}
	var v string
	for i, name := range nodes {
		n := c.nodes[name]
		if n == nil {
			return ""
		}
		w, ok := n.Labels[key]
		if !ok || (i > 0 && w != v) {
			return ""
		}
		v = w
	}
	return key + "=" + v
}

// domainOfAlloc is the domain an allocation is in: the one it was
// confined to, or, when the matcher chose it, the one its nodes (those
// of its reservation, while it waits) are in.
func (c *Core) domainOfAlloc(a *alloc) string {
	if a.domain != "" || a.domainKey == "" || c.m == nil {
		return a.domain
	}
	info, ok := c.m.Info(a.id)
	if !ok {
		return ""
	}
	nodes := make([]string, len(info.Slots))
	for i, sp := range info.Slots {
		nodes[i] = sp.Node
	}
	return c.domainAt(a.domainKey, nodes)
}

// confine builds the group's request confined to one domain of its
// topology key; build makes the request with an extra constraint.
func (c *Core) confine(g *group, key string, build buildFunc) (*jobspec.Jobspec, []slotGroup, error) {
	doms := c.domains(key)
	if len(doms) == 0 {
		return nil, nil, fmt.Errorf("its topology key %q is a label no node has", key)
	}
	if c.m == nil {
		return c.within(g, key, doms[0].value, build)
	}
	if d, js, slots, err := c.bestFit(key, doms, build); err != nil || js != nil {
		if js != nil {
			g.planned = key + "=" + d
		}
		return js, slots, err
	}
	for _, d := range doms {
		js, slots, err := build(jobspec.Properties(key+"="+d.value), "")
		if err != nil {
			return nil, nil, err
		}
		if r, err := c.m.Match(match.Satisfiability, js, probeJob, c.now); err == nil && r.Status == match.Satisfiable {
			g.planned = key + "=" + d.value
			return js, slots, nil
		}
	}
	return nil, nil, c.noDomain(key, doms)
}

// noDomain says that no domain of the key can hold the group, naming the
// largest.
func (c *Core) noDomain(key string, doms []domain) error {
	if len(doms) == 0 {
		return fmt.Errorf("its topology key %q is a label no node has", key)
	}
	big := slices.MaxFunc(doms, func(a, b domain) int {
		if a.nodes != b.nodes {
			return a.nodes - b.nodes
		}
		return int(a.cap.MilliCPU - b.cap.MilliCPU)
	})
	return fmt.Errorf("no single domain of topology key %s can hold the whole group: the largest, %s=%s, has %d nodes (%s allocatable)",
		key, key, big.value, big.nodes, capacityNote(big.cap))
}

// within builds the request confined to the domain key=value.
func (c *Core) within(g *group, key, value string, build buildFunc) (*jobspec.Jobspec, []slotGroup, error) {
	g.planned = key + "=" + value
	return build(jobspec.Properties(key+"="+value), "")
}

// bestFit returns, among the domains where the request fits now, the one
// with the least room left after it, and the request confined to it; no
// request when it fits in none.
func (c *Core) bestFit(key string, doms []domain, build buildFunc) (string, *jobspec.Jobspec, []slotGroup, error) {
	var free map[string]Resources
	var best string
	var bestJS *jobspec.Jobspec
	var bestSlots []slotGroup
	var bestRoom Resources
	for _, d := range doms {
		js, slots, err := build(jobspec.Properties(key+"="+d.value), "")
		if err != nil {
			return "", nil, nil, err
		}
		if r, err := c.m.Fits(js, probeJob, c.now); err != nil || r.Status != match.Allocated {
			continue
		}
		if free == nil {
			free = c.freeByDomain(key)
		}
		room := free[d.value]
		if bestJS == nil || less(room, bestRoom) {
			best, bestJS, bestSlots, bestRoom = d.value, js, slots, room
		}
	}
	return best, bestJS, bestSlots, nil
}

// less orders rooms by CPU, then memory, then GPUs.
func less(a, b Resources) bool {
	if a.MilliCPU != b.MilliCPU {
		return a.MilliCPU < b.MilliCPU
	}
	if a.MemoryBytes != b.MemoryBytes {
		return a.MemoryBytes < b.MemoryBytes
	}
	return a.GPU < b.GPU
}

// prefer builds the group's request in the tightest domain that holds it
// now, from the preferred level outwards, else unconfined.
func (c *Core) prefer(g *group, key string, build buildFunc) (*jobspec.Jobspec, []slotGroup, error) {
	if c.m != nil {
		for _, level := range c.outwards(key) {
			if typ, ok := c.levelType(level); ok {
				js, slots, err := build(jobspec.Properties(level), typ)
				if err != nil {
					return nil, nil, err
				}
				if r, err := c.m.Fits(js, probeJob, c.now); err == nil && r.Status == match.Allocated {
					g.plannedLevel = level
					return js, slots, nil
				}
				continue
			}
			d, js, slots, err := c.bestFit(level, c.domains(level), build)
			if err != nil {
				return nil, nil, err
			}
			if js != nil {
				g.planned = level + "=" + d
				return js, slots, nil
			}
		}
	}
	g.planned = ""
	return build(nil, "")
}

// outwards lists the levels to try for a preferred key: the key, then the
// configured levels outside it, innermost first. A key that is not a
// configured level is tried alone.
func (c *Core) outwards(key string) []string {
	i := slices.Index(c.cfg.TopologyLevels, key)
	if i < 0 {
		return []string{key}
	}
	out := make([]string, 0, i+1)
	for j := i; j >= 0; j-- {
		out = append(out, c.cfg.TopologyLevels[j])
	}
	return out
}

// freeByDomain sums, per value of a node label, what the nodes carrying it
// have free now: allocatable less what allocations and foreign pods hold.
func (c *Core) freeByDomain(key string) map[string]Resources {
	held := map[string]Resources{}
	for _, g := range c.groups {
		for s := range g.heldSlots() {
			r := held[s.node]
			r.MilliCPU += s.shape.MilliCPU
			r.MemoryBytes += s.shape.MemoryMiB << 20
			r.GPU += s.shape.GPU
			held[s.node] = r
		}
	}
	for node, pods := range c.foreign {
		r := held[node]
		for _, p := range pods {
			r.MilliCPU += p.MilliCPU
			r.MemoryBytes += p.MemoryBytes
			r.GPU += p.GPU
		}
		held[node] = r
	}
	out := map[string]Resources{}
	for _, n := range c.nodes {
		v, ok := n.Labels[key]
		if !ok {
			continue
		}
		f, h := out[v], held[n.Name]
		f.MilliCPU += n.Allocatable.MilliCPU - h.MilliCPU
		f.MemoryBytes += n.Allocatable.MemoryBytes - h.MemoryBytes
		f.GPU += n.Allocatable.GPU - h.GPU
		out[v] = f
	}
	return out
}

// domainNote says, for a placement's event, which domain the group got
// and, for a preference, whether it got the level it preferred.
func (c *Core) domainNote(g *group, a *alloc) string {
	pref := g.id.TopologyPreferred
	switch {
	case a.domain != "" && (pref == "" || g.id.TopologyKey != "" || strings.HasPrefix(a.domain, pref+"=")):
		return " within " + a.domain
	case a.domain != "":
		return fmt.Sprintf(" within %s (no domain of its preferred %s held it)", a.domain, pref)
	case pref != "" && g.id.TopologyKey == "":
		return fmt.Sprintf(" (no domain of its preferred %s, or of a level outside it, held it)", pref)
	}
	return ""
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

// domainWait says, for a group kept within one domain that waits, where
// its reservation is and how near the roomiest domain comes to holding
// it now: "within example.com/rack=r2; it needs 6 CPUs within one
// example.com/rack, the roomiest now, r3, has 4 CPUs free". "" for a
// group not kept within one.
func (c *Core) domainWait(g *group, a *alloc, reserved bool) string {
	key := a.domainKey
	if key == "" {
		key, _, _ = strings.Cut(a.domain, "=")
	}
	if key == "" || g.id.TopologyKey == "" {
		return ""
	}
	var need Resources
	for _, s := range a.slots {
		need.MilliCPU += s.shape.MilliCPU
		need.MemoryBytes += s.shape.MemoryMiB << 20
		need.GPU += s.shape.GPU
	}
	var note string
	if d := c.domainOfAlloc(a); reserved && d != "" {
		note = "within " + d + "; "
	}
	note += fmt.Sprintf("it needs %s within one %s", amounts(need, need), key)
	free := c.freeByDomain(key)
	values := slices.Sorted(maps.Keys(free))
	if len(values) == 0 {
		return note
	}
	best := values[0]
	for _, v := range values[1:] {
		if less(free[best], free[v]) {
			best = v
		}
	}
	return note + fmt.Sprintf(", the roomiest now, %s, has %s free", best, amounts(free[best], need))
}

// amounts renders the CPUs, memory and GPUs of r that need asks for.
func amounts(r, need Resources) string {
	parts := []string{fmt.Sprintf("%g CPUs", float64(r.MilliCPU)/1000)}
	if need.MemoryBytes > 0 {
		parts = append(parts, Memory(max(r.MemoryBytes, 0))+" memory")
	}
	if need.GPU > 0 {
		parts = append(parts, fmt.Sprintf("%d GPUs", r.GPU))
	}
	return strings.Join(parts, ", ")
}

// placedIn reports the level a group that asked for a domain got.
func (c *Core) placedIn(g *group, a *alloc) {
	asked := "required"
	switch {
	case g.id.TopologyKey != "":
	case g.id.TopologyPreferred != "":
		asked = "preferred"
	default:
		return
	}
	level, _, _ := strings.Cut(a.domain, "=")
	if _, ok := c.levelType(level); level != "" && !ok {
		// Any label may be asked for: counting each by its key would let
		// the pods' annotations grow the metric without bound.
		level = "other"
	}
	c.fx.out.Placements = append(c.fx.out.Placements, Placement{Group: g.id.Key, Asked: asked, Level: level})
}

// refreshUnmet builds again the request of a waiting group whose
// preference no domain met when its request was built, once one of its
// domains would hold it now: it keeps its place in line, and starts in
// that domain rather than anywhere. Without this a group that found the
// cluster full would, once room freed, be placed wherever it freed.
func (c *Core) refreshUnmet() {
	if c.m == nil {
		return
	}
	for _, key := range slices.Sorted(maps.Keys(c.unmet)) {
		g := c.groups[key]
		a := (*alloc)(nil)
		if g != nil && g.state == queued {
			a = c.waitingAlloc(g)
		}
		if a == nil || a.domain != "" || a.domainKey != "" {
			delete(c.unmet, key)
			continue
		}
		pods := c.podsByUID(g, a.pods)
		if len(pods) != len(a.pods) {
			continue // a pod went away: the request is withdrawn anyway
		}
		if _, _, err := c.groupRequest(g, pods, 0, Shape{}); err != nil || (g.planned == "" && g.plannedLevel == "") {
			continue
		}
		delete(c.unmet, key)
		c.resubmit(g, a)
	}
}

// flatRetry is how often, in seconds, a group waiting within one domain
// of a label that is no topology level looks for another domain that
// holds it now: each look costs a match per domain.
const flatRetry = 10

// refreshFlat moves a group waiting within one domain of a label that is
// no topology level (its domain chosen when its request was built) to
// another domain, when its own cannot hold it now and another can. A
// level's domains need none of this: the matcher chooses among them at
// every try.
func (c *Core) refreshFlat() {
	if c.m == nil {
		return
	}
	for _, key := range slices.Sorted(maps.Keys(c.flat)) {
		g := c.groups[key]
		a := (*alloc)(nil)
		if g != nil && g.state == queued && !g.underway() {
			a = c.waitingAlloc(g)
		}
		if a == nil || a.domain == "" || a.domainKey != "" {
			delete(c.flat, key)
			continue
		}
		if c.now < g.flatNext {
			continue
		}
		g.flatNext = c.now + c.seconds(flatRetry)
		if r, err := c.m.Fits(a.js, probeJob, c.now); err == nil && r.Status == match.Allocated {
			continue // its domain holds it now: the queue starts it there
		}
		pods := c.podsByUID(g, a.pods)
		if len(pods) != len(a.pods) {
			continue
		}
		if _, _, err := c.groupRequest(g, pods, 0, Shape{}); err != nil || g.planned == a.domain {
			continue
		}
		c.resubmit(g, a)
	}
}
