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

// maxMarks is how many filters beyond those in use when it was built may
// mark the current graph before it is rebuilt with only the marks in use: each mark is a property on
// every device it admits, and a property map grown by hundreds of marks
// slows every mark after it.
const maxMarks = 64

// DeviceIDProperty is the property of a device vertex that holds the
// device's ID (driver/pool/device).
const DeviceIDProperty = "fluence//device"

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
	// Holder is the claim (namespace/name) whose allocation holds the
	// device; "" while it is free. The core counts a held device as its
	// node's foreign load unless the claim is one of a pod that holds a
	// slot there (whose allocation counts it already).
	Holder string
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
// node's devices that claims hold, except those of claims of pods that
// hold a slot in an allocation (what they hold is the allocation's):
// claims of pods other schedulers placed, of pods gone whose claims are
// not released yet, claims shared by several pods.
func (c *Core) foreignShape(node string) Shape {
	s := ShapeOf(foreignLoad(c.foreign[node]))
	n := c.nodes[node]
	if n == nil {
		return s
	}
	held := c.foreignHeld(node)
	if len(held) == 0 {
		return s
	}
	s.Devices = c.ask(&Pod{Devices: []DeviceRequest{{Name: "claims of other pods", Choices: []DeviceChoice{{Count: int64(len(held)), Filter: NewExactDevices(held...)}}}}}, 0)
	return s
}

// foreignHeld are the node's devices that claims hold, but for those
// of claims of pods holding a slot.
func (c *Core) foreignHeld(node string) []string {
	n := c.nodes[node]
	if n == nil {
		return nil
	}
	var held []string
	for _, d := range n.Devices {
		if d.Holder != "" && !c.claimInSlot(d.Holder) {
			held = append(held, d.ID)
		}
	}
	return held
}

// anyHeld reports whether a claim holds any of the node's devices.
func (c *Core) anyHeld(node string) bool {
	n := c.nodes[node]
	return n != nil && slices.ContainsFunc(n.Devices, func(d Device) bool { return d.Holder != "" })
}

// claimsPlaced counts again the load of the nodes where pods whose
// claims hold devices just took slots: those devices are the slots' now,
// no longer foreign.
func (c *Core) claimsPlaced(a *alloc) {
	if c.dirty || c.m == nil || len(c.claimsOf) == 0 {
		return
	}
	var nodes []string
	for _, s := range a.slots {
		for _, k := range c.claimsOf[s.pod] {
			if n := c.nodes[s.node]; n != nil && slices.ContainsFunc(n.Devices, func(d Device) bool { return d.Holder == k }) {
				nodes = append(nodes, s.node)
			}
		}
	}
	slices.Sort(nodes)
	for _, node := range slices.Compact(nodes) {
		c.placeForeign(node)
	}
}

// foreignNodes are the nodes with foreign pods or foreign-held devices,
// sorted.
func (c *Core) foreignNodes() []string {
	ns := slices.Collect(maps.Keys(c.foreign))
	for name, n := range c.nodes {
		if _, ok := c.foreign[name]; !ok && slices.ContainsFunc(n.Devices, func(d Device) bool { return d.Holder != "" }) {
			ns = append(ns, name)
		}
	}
	slices.Sort(ns)
	return ns
}

// claimInSlot reports whether the claim is one of a pod holding a slot.
func (c *Core) claimInSlot(claim string) bool {
	uid, ok := c.claimUser[claim]
	if !ok {
		return false
	}
	g := c.groups[c.podKey[uid]]
	if g == nil {
		return false
	}
	_, s := g.slotOf(uid)
	return s != nil && !s.done
}

// useClaims records which pod uses which claims, for claimInSlot; an
// ended pod uses none. It returns the node of the pod's slot when the pod
// stops using claims that hold devices there: once the pod's event is
// handled, they are the node's foreign load (claimsLeft).
func (c *Core) useClaims(p *Pod) (left string) {
	if old := c.claimsOf[p.UID]; len(old) > 0 && (p.Done || !slices.Equal(old, p.Claims)) {
		if g := c.groups[c.podKey[p.UID]]; g != nil {
			if _, s := g.slotOf(p.UID); s != nil {
				left = s.node
			}
		}
	}
	for _, k := range c.claimsOf[p.UID] {
		if c.claimUser[k] == p.UID {
			delete(c.claimUser, k)
		}
	}
	delete(c.claimsOf, p.UID)
	if p.Done || len(p.Claims) == 0 {
		return left
	}
	if c.claimUser == nil {
		c.claimUser, c.claimsOf = map[string]string{}, map[string][]string{}
	}
	for _, k := range p.Claims {
		c.claimUser[k] = p.UID
	}
	c.claimsOf[p.UID] = slices.Clone(p.Claims)
	return left
}

// claimsLeft counts again what claims hold on the node a pod left its
// claims on.
func (c *Core) claimsLeft(node string) {
	if node == "" || c.dirty || c.m == nil || len(c.foreignHeld(node)) == 0 {
		return
	}
	c.placeForeign(node)
}

// holdersChanged reports whether the devices' holders differ (the
// devices being the same).
func holdersChanged(a, b []Device) bool {
	return !slices.EqualFunc(a, b, func(x, y Device) bool { return x.Holder == y.Holder })
}

// heldAsPlaced takes what a bound pod's allocated claims hold as its
// slot's devices. kube-scheduler's DRA plugin chooses the devices itself,
// on the node fluence chose; where it chose others than the engine's job
// took, or the pod's devices are now counted by a claim several pods
// share, the job holds devices that are free and misses ones that are
// not, so the graph is rebuilt and the allocation replayed on what the
// pod holds. A pod with a claim not allocated yet is left as placed: its
// requests say nothing new.
func (c *Core) heldAsPlaced(a *alloc, s *slot, p *Pod) {
	if !settled(p) {
		return
	}
	sh := c.shapeOf(p, 0)
	if sh == s.shape {
		return
	}
	fewer := sh.Devices.total() < s.shape.Devices.total()
	s.shape = sh
	if fewer || c.dirty || c.m == nil || !c.holdsDevices(a.id, s.node, heldDevices(p)) {
		c.dirty = true
	}
}

// settled reports whether every device request of the pod names exactly
// the devices an allocation gave it (or it has none).
func settled(p *Pod) bool {
	for _, r := range p.Devices {
		if len(r.Choices) != 1 {
			return false
		}
		if _, ok := r.Choices[0].Filter.(ExactDevices); !ok {
			return false
		}
	}
	return true
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

// deviceNote says, for each device request the shapes ask, how many
// nodes have that many devices it admits, and how many of those have
// them free now: the words a group held back by its claims is explained
// in ("each of its 8 pods asks 4 devices of class gpu.example.com with
// ... (claim/gpus): 6 nodes have that many, 2 of them free now"). ""
// when the shapes ask no device.
//
// With a topology key, it also names the domain of that key with the most
// such nodes ("within one fluence.flux-framework.org/rack: the best,
// rack-1, has 2").
func (c *Core) deviceNote(shapes []Shape, key string) string {
	if c.m == nil {
		return ""
	}
	type ask struct {
		n    deviceNeed
		pods int
	}
	var asks []*ask
	for _, s := range shapes {
		if s.Devices == nil {
			continue
		}
		for _, n := range s.Devices.needs {
			if n.prop == "" {
				continue // exactly the devices a pod holds
			}
			i := slices.IndexFunc(asks, func(a *ask) bool { return a.n.prop == n.prop && a.n.count == n.count })
			if i < 0 {
				asks = append(asks, &ask{n: n})
				i = len(asks) - 1
			}
			asks[i].pods++
		}
	}
	if len(asks) == 0 {
		return ""
	}
	g := c.m.Graph()
	t, _ := g.LookupType(TypeDevice)
	var parts []string
	for _, a := range asks {
		c.markAsk(&deviceAsk{needs: []deviceNeed{a.n}})
		have, free := 0, 0
		perDomain := map[string]int{}
		for _, name := range slices.Sorted(maps.Keys(c.vertexOf)) {
			var all, open int64
			for _, v := range g.Children(c.vertexOf[name]) {
				vx := g.Vertex(v)
				if vx.Type != t {
					continue
				}
				if _, ok := vx.Properties[a.n.prop]; !ok {
					continue
				}
				all++
				if c.m.FreeAt(v, c.now) > 0 {
					open++
				}
			}
			if all >= a.n.count {
				have++
				if v := c.nodes[name].Labels[key]; key != "" && v != "" {
					perDomain[v]++
				}
				if open >= a.n.count && !c.nodes[name].Down && !c.overloaded[name] {
					free++
				}
			}
		}
		who := "its pod asks"
		if a.pods > 1 {
			who = fmt.Sprintf("each of %d pods asks", a.pods)
		}
		nodes := fmt.Sprintf("%d nodes have", have)
		if have == 1 {
			nodes = "1 node has"
		}
		part := fmt.Sprintf("%s %d %s (%s): %s that many, %d of them free now", who, a.n.count, a.n.filter.Describe(), a.n.what, nodes, free)
		if key != "" {
			best, most := "", 0
			for _, v := range slices.Sorted(maps.Keys(perDomain)) {
				if perDomain[v] > most {
					best, most = v, perDomain[v]
				}
			}
			if most == 0 {
				part += fmt.Sprintf("; within one %s: no domain has such a node", key)
			} else {
				part += fmt.Sprintf("; within one %s: the best, %s, has %d such nodes", key, best, most)
			}
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// slotShapes are the shapes of an allocation's slots.
func slotShapes(a *alloc) []Shape {
	out := make([]Shape, len(a.slots))
	for i, s := range a.slots {
		out[i] = s.shape
	}
	return out
}
