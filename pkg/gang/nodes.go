package gang

import (
	"maps"
	"slices"

	"github.com/fluence-sched/fluence/pkg/resource"
)

// NodeSet records an added or changed node. A change the graph can take in
// place (up or down, labels, taints) is applied at once; a new node, new
// capacity or a new domain at one of the graph's topology levels (the
// node moves to another branch) rebuilds the graph before the next
// decision.
func (c *Core) NodeSet(n Node, now int64) {
	c.advance(now)
	n.Labels = maps.Clone(n.Labels)
	n.Taints = slices.Clone(n.Taints)
	n.Devices = slices.Clone(n.Devices)
	old := c.nodes[n.Name]
	c.nodes[n.Name] = &n
	if old == nil && c.arrival() {
		c.markNode(n.Name, true)
		return
	}
	if old == nil || old.Allocatable != n.Allocatable || c.m == nil || c.moved(old, &n) || !sameDevices(old.Devices, n.Devices) {
		c.markNode(n.Name, true)
		c.dirty = true
		c.shapeGen++
		c.nodeGen++
		c.nodesChanged()
		return
	}
	if holdersChanged(old.Devices, n.Devices) {
		// A claim allocated or released on the node: what others hold
		// there is counted again, and an allocation the node can no
		// longer hold beside it is withdrawn while it may be.
		c.markNode(n.Name, false)
		if !c.dirty {
			c.placeForeign(n.Name)
			c.withdrawOverloaded(n.Name)
			c.markQueue()
			c.q.Freed()
		}
	}
	relabelled := !maps.Equal(old.Labels, n.Labels) || !slices.Equal(old.Taints, n.Taints)
	if !relabelled && old.Down == n.Down {
		return // a heartbeat: nothing the core sees
	}
	c.markNode(n.Name, true)
	if relabelled {
		c.nodeGen++
		if v, ok := c.vertexOf[n.Name]; ok {
			c.m.Graph().Vertex(v).Properties = maps.Clone(n.Labels)
		}
	}
	if old.Down != n.Down {
		c.applyStatus(n.Name)
	}
	c.nodesChanged()
}

// moved reports whether a node changed domain at a topology level.
func (c *Core) moved(old, n *Node) bool {
	for _, l := range c.levels() {
		if l.value(old) != l.value(n) {
			return true
		}
	}
	return false
}

// NodeRemoved forgets a node; the graph is rebuilt without it.
func (c *Core) NodeRemoved(name string, now int64) {
	c.advance(now)
	if _, ok := c.nodes[name]; !ok {
		return
	}
	delete(c.nodes, name)
	c.markNode(name, true)
	c.dirty = true
	c.shapeGen++
	c.nodeGen++
	c.nodesChanged()
}

// nodesChanged lets rejected groups be judged again: a node change can
// make them possible. Their pods are woken to ask.
func (c *Core) nodesChanged() {
	c.touchAll()
	// Any order: each group's reset is its own, and activations are
	// sorted when the effects are taken.
	for _, g := range c.groups {
		if g.state == rejected {
			c.judgeAgain(g)
		}
	}
}

// judgeAgain lets a rejected group be judged again; its pods are woken to
// ask.
func (c *Core) judgeAgain(g *group) {
	g.state, g.reason, g.checked = gathering, "", 0
	c.wakeUnbound(g)
}

// wakeUnbound has the framework try the group's unbound pods again.
func (c *Core) wakeUnbound(g *group) {
	c.touch(g)
	for _, p := range g.sortedMembers() {
		if p.NodeName == "" {
			c.fx.activatePod(p.ref())
		}
	}
}

// applyStatus marks a node's vertex up or down: down when the node is
// (cordoned, NotReady) or holds more than the engine had free.
func (c *Core) applyStatus(name string) {
	v, ok := c.vertexOf[name]
	if !ok || c.q == nil {
		return
	}
	n := c.nodes[name]
	down := n == nil || n.Down || c.overloaded[name]
	want := resource.Up
	if down {
		want = resource.Down
	}
	if c.m.Graph().Vertex(v).Status == want {
		return
	}
	c.markNode(name, true)
	c.markQueue()
	c.fail("node-status", "", c.q.SetNodeStatus(v, !down))
}

// sortedNodes returns the nodes in name order.
func (c *Core) sortedNodes() []*Node {
	out := make([]*Node, 0, len(c.nodes))
	for _, k := range slices.Sorted(maps.Keys(c.nodes)) {
		out = append(out, c.nodes[k])
	}
	return out
}
