package gang

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// maxMarks is how many filters beyond those in use when it was built may
// mark the current graph before it is rebuilt with only the marks in use: each mark is a property on
// every device it admits, and a property map grown by hundreds of marks
// slows every mark after it.
const maxMarks = 64

// deviceAsk is what one pod's requests ask, each request resolved to one
// of its choices: so many devices admitted by a filter, per need. Asks
// are interned by key (Core.ask), so shapes holding them compare equal
// when they ask the same.
type deviceAsk struct {
	key   string
	needs []deviceNeed
}

type deviceNeed struct {
	count  int64
	filter DeviceFilter
	// prop is the vertex property marking the devices filter admits;
	// "" for ExactDevices, which need no marks.
	prop string
	// requires is what a device vertex the need takes must satisfy:
	// the mark, or for ExactDevices one of the devices' own IDs.
	requires *jobspec.Constraint
	// what names the request and its choice, for explanations.
	what string
}

// total is how many devices the ask takes.
func (a *deviceAsk) total() int64 {
	if a == nil {
		return 0
	}
	var n int64
	for _, d := range a.needs {
		n += d.count
	}
	return n
}

// with is the jobspec resources of the ask: one device request per
// need, requiring its mark.
func (a *deviceAsk) with() []*jobspec.ResourceBuilder {
	if a == nil {
		return nil
	}
	w := make([]*jobspec.ResourceBuilder, 0, len(a.needs))
	for _, n := range a.needs {
		w = append(w, jobspec.R(TypeDevice, n.count).Requires(n.requires))
	}
	return w
}

// deviceMarks marks, on the current graph's device vertices, the devices
// each filter admits: a property per filter key, which a slot's device
// requests then require. A filter's property never changes; its marks
// are applied once per graph, when a request first uses it on that graph
// or, for what running allocations hold, when the graph is installed
// (remark).
type deviceMarks struct {
	graph *resource.Graph
	// prop is each filter's property by key; filter each property's
	// filter; admitted how many devices of the graph a property marked.
	prop     map[string]string
	filter   map[string]DeviceFilter
	admitted map[string]int64
	next     int64
	asks     map[string]*deviceAsk
	// held is how many marks the allocations held when the graph was
	// installed (remark).
	held int
}

// ask interns the ask of a pod's requests with choice i of each (the
// last choice where a request has fewer), marking what it admits on the
// current graph. nil when the pod asks for no device.
func (c *Core) ask(p *Pod, choice int) *deviceAsk {
	if len(p.Devices) == 0 {
		return nil
	}
	var key strings.Builder
	needs := make([]deviceNeed, 0, len(p.Devices))
	for _, r := range p.Devices {
		if len(r.Choices) == 0 {
			continue
		}
		ch := r.Choices[min(choice, len(r.Choices)-1)]
		if ch.Count <= 0 || ch.Filter == nil {
			continue
		}
		what := r.Name
		if len(r.Choices) > 1 {
			what += "/" + ch.Name
		}
		needs = append(needs, deviceNeed{count: ch.Count, filter: ch.Filter, what: what})
		fmt.Fprintf(&key, "%d*%s;", ch.Count, ch.Filter.Key())
	}
	if len(needs) == 0 {
		return nil
	}
	k := key.String()
	if c.dev.asks == nil {
		c.dev.asks = map[string]*deviceAsk{}
	}
	a := c.dev.asks[k]
	if a == nil {
		for i := range needs {
			needs[i].prop, needs[i].requires = c.requiresOf(needs[i].filter)
		}
		a = &deviceAsk{key: k, needs: needs}
		c.dev.asks[k] = a
	}
	c.markAsk(a)
	return a
}

// choices is the most choices any of the pod's requests offers.
func choices(p *Pod) int {
	n := 1
	for _, r := range p.Devices {
		n = max(n, len(r.Choices))
	}
	return n
}

// shapeOf is a pod's shape with its devices, choice i of each request.
func (c *Core) shapeOf(p *Pod, choice int) Shape {
	s := ShapeOf(p.Requests)
	s.Devices = c.ask(p, choice)
	return s
}

// requiresOf is what a device f admits must satisfy: one of the named
// devices' IDs for ExactDevices (a pod's allocated claims: one filter per
// pod, each naming a few devices, which marking the whole graph for
// would cost a pass over every device per pod bound), else f's mark.
func (c *Core) requiresOf(f DeviceFilter) (string, *jobspec.Constraint) {
	if e, ok := f.(ExactDevices); ok {
		ids := make([]*jobspec.Constraint, len(e))
		for i, id := range e {
			ids[i] = jobspec.Properties(DeviceIDProperty + "=" + id)
		}
		return "", jobspec.Or(ids...)
	}
	prop := c.propOf(f)
	return prop, jobspec.Properties(prop)
}

// propOf returns the property of f's marks, new when f is.
func (c *Core) propOf(f DeviceFilter) string {
	if c.dev.prop == nil {
		c.dev.prop, c.dev.filter = map[string]string{}, map[string]DeviceFilter{}
	}
	k := f.Key()
	prop, ok := c.dev.prop[k]
	if !ok {
		c.dev.next++
		prop = fmt.Sprintf("%s%d", devicePrefix, c.dev.next)
		c.dev.prop[k], c.dev.filter[prop] = prop, f
	}
	return prop
}

// markAsk marks on the current graph the devices each need of the ask
// admits.
func (c *Core) markAsk(a *deviceAsk) {
	if a == nil || c.m == nil {
		return
	}
	g := c.m.Graph()
	if c.dev.graph != g {
		c.dev.graph, c.dev.admitted = g, map[string]int64{}
	}
	for _, n := range a.needs {
		if n.prop == "" {
			continue
		}
		if _, done := c.dev.admitted[n.prop]; !done {
			c.dev.admitted[n.prop] = c.markDevices(g, n.prop, n.filter)
			if len(c.dev.admitted) > c.dev.held+maxMarks {
				// Marks are never cleared on a graph: a new one, built
				// before the next decision, carries only those in use.
				c.dirty = true
			}
		}
	}
}

// markDevices sets prop on the device vertices f admits, and counts them.
// Marks are set, never cleared, while the graph lives: the filters that
// mark are those of the claim templates in use, which are few.
func (c *Core) markDevices(g *resource.Graph, prop string, f DeviceFilter) int64 {
	t, ok := g.LookupType(TypeDevice)
	if !ok {
		return 0
	}
	var n int64
	for name, nv := range c.vertexOf { // any order: each vertex is marked or not
		node := c.nodes[name]
		if node == nil || len(node.Devices) == 0 {
			continue
		}
		for _, v := range g.Children(nv) {
			vx := g.Vertex(v)
			if vx.Type != t || vx.ID < 0 || vx.ID >= int64(len(node.Devices)) || !f.Admits(&node.Devices[vx.ID]) {
				continue
			}
			if vx.Properties == nil {
				vx.Properties = map[string]string{}
			}
			vx.Properties[prop] = ""
			n++
		}
	}
	return n
}

// remark starts the marks afresh on a new graph: it marks what the
// allocations hold, and forgets the asks and filters nothing holds any
// more (a pod's ask is made again from the pod when it is asked for).
func (c *Core) remark() {
	held := map[*deviceAsk]bool{}
	for _, g := range c.groups {
		for _, a := range g.allocs {
			for _, s := range a.slots {
				if s.shape.Devices != nil {
					held[s.shape.Devices] = true
				}
			}
		}
	}
	for k, a := range c.dev.asks {
		if !held[a] {
			delete(c.dev.asks, k)
		}
	}
	used := map[string]bool{}
	for a := range held {
		for _, n := range a.needs {
			used[n.prop] = true
		}
	}
	for k, prop := range c.dev.prop {
		if !used[prop] {
			delete(c.dev.prop, k)
			delete(c.dev.filter, prop)
		}
	}
	c.dev.graph, c.dev.admitted = c.m.Graph(), map[string]int64{}
	for _, a := range sortedAsks(held) {
		c.markAsk(a)
	}
	c.dev.held = len(c.dev.admitted)
}

func sortedAsks(set map[*deviceAsk]bool) []*deviceAsk {
	as := make([]*deviceAsk, 0, len(set))
	for a := range set {
		as = append(as, a)
	}
	slices.SortFunc(as, func(a, b *deviceAsk) int { return strings.Compare(a.key, b.key) })
	return as
}

// deviceOf is the device a device vertex stands for: its ID-th device of
// its node. nil when the node's devices changed since the graph was
// built (the graph is rebuilt before the next decision).
func (c *Core) deviceOf(g *resource.Graph, v int32) *Device {
	vx := g.Vertex(v)
	nv := g.NodeOf(v)
	if nv == resource.None {
		return nil
	}
	n := c.nodes[g.Vertex(nv).Name]
	if n == nil || vx.ID < 0 || vx.ID >= int64(len(n.Devices)) {
		return nil
	}
	return &n.Devices[vx.ID]
}

// fitsShape reports whether the pod asks what a slot of the shape holds,
// with any choice of its requests.
func (c *Core) fitsShape(p *Pod, s Shape) bool {
	for i := range choices(p) {
		if c.shapeOf(p, i) == s {
			return true
		}
	}
	return false
}
