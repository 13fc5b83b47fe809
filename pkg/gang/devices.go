package gang

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// TypeDevice is the vertex type of a device a node offers through
// Dynamic Resource Allocation: one vertex per device, under its node.
const TypeDevice = "device"

// devicePrefix begins the vertex properties that mark which devices a
// request admits (deviceMarks). A Kubernetes label key has at most one
// slash, and a DRA attribute name none after its domain, so no node
// label or device attribute can take its place.
const devicePrefix = "fluence//admits-"

// Device is one device a node offers: a GPU, a NIC, a partition of a GPU.
// The translating layer names it and reads its attributes; which devices
// a pod may take is decided by the pod's DeviceFilters, which see these.
type Device struct {
	// ID is driver/pool/device, unique in the cluster: DRA names an
	// allocated device so.
	ID string
	// Attributes are the device's attributes and capacities as strings,
	// keyed by their qualified names. They are the device vertex's
	// properties (kubectl fluence graph shows them).
	Attributes map[string]string
}

// DeviceRequest is one request of a pod's resource claims: so many
// devices a filter admits, or, when it lists several choices
// (firstAvailable), those of the first choice that can be met.
type DeviceRequest struct {
	// Name is claim/request, for messages.
	Name    string
	Choices []DeviceChoice
}

// DeviceChoice is one way to meet a request.
type DeviceChoice struct {
	// Name is the request's, or the subrequest's, name.
	Name string
	// Count is how many devices, each on the pod's node.
	Count int64
	// Filter says which devices qualify.
	Filter DeviceFilter
}

// DeviceFilter says which devices a request may take: its device class
// and selectors, evaluated by the translating layer's own rules.
type DeviceFilter interface {
	Admits(d *Device) bool
	// Key is equal for filters that admit the same devices.
	Key() string
	// Describe says which devices in words ("gpu.example.com devices
	// with memory >= 80Gi"), for explanations.
	Describe() string
}

// ExactDevices admits the devices it names, by ID, and no others: what
// a pod whose claims are allocated holds. Sorted.
type ExactDevices []string

// NewExactDevices returns the filter of the named devices.
func NewExactDevices(ids ...string) ExactDevices {
	e := slices.Clone(ids)
	slices.Sort(e)
	return slices.Compact(e)
}

func (e ExactDevices) Admits(d *Device) bool {
	_, ok := slices.BinarySearch(e, d.ID)
	return ok
}

func (e ExactDevices) Key() string { return "exact:" + strings.Join(e, ",") }

func (e ExactDevices) Describe() string {
	if len(e) == 1 {
		return "device " + e[0]
	}
	return fmt.Sprintf("the %d devices %s", len(e), strings.Join(e, ", "))
}

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
	// prop is the vertex property marking the devices filter admits.
	prop string
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
		w = append(w, jobspec.R(TypeDevice, n.count).Requires(jobspec.Properties(n.prop)))
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
			needs[i].prop = c.propOf(needs[i].filter)
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
		if _, done := c.dev.admitted[n.prop]; !done {
			c.dev.admitted[n.prop] = c.markDevices(g, n.prop, n.filter)
		}
	}
}

// markDevices sets prop on the device vertices f admits, and counts them.
func (c *Core) markDevices(g *resource.Graph, prop string, f DeviceFilter) int64 {
	t, ok := g.LookupType(TypeDevice)
	if !ok {
		return 0
	}
	var n int64
	for _, v := range g.ByType(t) {
		if d := c.deviceOf(g, v); d != nil && f.Admits(d) {
			vx := g.Vertex(v)
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
	c.dev.graph = nil
	for _, a := range sortedAsks(held) {
		c.markAsk(a)
	}
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

// sameDevices reports whether two lists offer the same devices, in the
// same order, with the same attributes: anything else is a new graph.
func sameDevices(a, b []Device) bool {
	return slices.EqualFunc(a, b, func(x, y Device) bool {
		return x.ID == y.ID && maps.Equal(x.Attributes, y.Attributes)
	})
}

// heldDevices are the devices a bound pod's allocated claims hold: the
// IDs its exact requests name, sorted.
func heldDevices(p *Pod) []string {
	var ids []string
	for _, r := range p.Devices {
		for _, ch := range r.Choices {
			if e, ok := ch.Filter.(ExactDevices); ok {
				ids = append(ids, e...)
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// foreignShape is the summed load of a node's foreign pods, with the
// devices their claims hold on it (devices of other nodes, or gone from
// it, are not the node's to count).
func (c *Core) foreignShape(node string) Shape {
	s := ShapeOf(foreignLoad(c.foreign[node]))
	n := c.nodes[node]
	if n == nil || len(c.foreignDevices[node]) == 0 {
		return s
	}
	var ids []string
	for _, uid := range slices.Sorted(maps.Keys(c.foreignDevices[node])) {
		ids = append(ids, c.foreignDevices[node][uid]...)
	}
	e := NewExactDevices(ids...)
	var here []string
	for _, d := range n.Devices {
		if e.Admits(&d) {
			here = append(here, d.ID)
		}
	}
	if len(here) == 0 {
		return s
	}
	s.Devices = c.ask(&Pod{Devices: []DeviceRequest{{Name: "foreign pods' claims", Choices: []DeviceChoice{{Count: int64(len(here)), Filter: NewExactDevices(here...)}}}}}, 0)
	return s
}

// heldAsPlaced takes the devices a bound pod's claims were allocated as
// its slot's. kube-scheduler's DRA plugin chooses the devices itself, on
// the node fluence chose; where it chose others than the engine's job
// took, the job holds devices that are free and misses ones that are
// not, so the graph is rebuilt and the allocation replayed on the
// devices the pod holds.
func (c *Core) heldAsPlaced(a *alloc, s *slot, p *Pod) {
	held := heldDevices(p)
	if len(held) == 0 {
		return
	}
	sh := c.shapeOf(p, 0)
	if sh == s.shape {
		return
	}
	s.shape = sh
	if c.dirty || c.m == nil || !c.holdsDevices(a.id, s.node, held) {
		c.dirty = true
	}
}

// holdsDevices reports whether the engine's job holds every one of the
// devices (by ID) on the node.
func (c *Core) holdsDevices(job int64, node string, ids []string) bool {
	n, nv := c.nodes[node], c.vertexOf[node]
	if n == nil || c.m == nil {
		return false
	}
	g := c.m.Graph()
	want := NewExactDevices(ids...)
	found := 0
	for _, v := range g.Children(nv) {
		d := c.deviceOf(g, v)
		if d == nil || g.Vertex(v).Basename != TypeDevice || !want.Admits(d) {
			continue
		}
		if !c.m.Holds(job, v) {
			return false
		}
		found++
	}
	return found == len(want)
}
