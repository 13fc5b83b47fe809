package gang

import (
	"maps"
	"slices"
)

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
	for name := range c.nodes {
		if _, ok := c.foreign[name]; !ok && c.anyHeld(name) {
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
