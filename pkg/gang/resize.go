package gang

import (
	"cmp"
	"fmt"
)

// A group's definition may change while it waits or runs: a Kubernetes
// PodGroup's minCount is mutable, a Job's parallelism and a
// scheduler-plugins PodGroup's minMember may be edited, a group-size label
// relabelled. The newest definition wins. Whatever was planned for the old
// one and may still be undone (a queued request, an allocation no pod of
// which was let through) is withdrawn, and the group is planned again at
// its old place in line; what already runs stays, and the group's size
// counts from then on (a running group that grows gets its new pods
// placed beside the old; one that shrinks keeps what runs).

// sizeChanged handles a pod whose group resolves to another size than the
// group has. Sizes read from one object (a PodGroup, a workload) change
// for every pod at once: the group takes the new size. A size on the
// pods' own labels is each pod's to say: the group takes it once every
// pod still to be placed says the same, and is invalid until then. It
// reports whether the group took the new size.
func (c *Core) sizeChanged(g *group, p *Pod, id GroupID) bool {
	if id.Source == SourceLabel {
		for _, m := range g.members {
			if m.UID == p.UID || m.NodeName != "" || m.Labeled.Key != id.Key {
				continue
			}
			if m.Labeled.Size != id.Size || m.Labeled.Roles != id.Roles {
				return false
			}
		}
	}
	why := fmt.Sprintf("its size changed from %d to %d", g.id.Size, id.Size)
	if g.id.Roles != id.Roles {
		// A composite that gains a child, a JobSet whose replicated job
		// grows: the roles change with the size.
		why = fmt.Sprintf("its roles changed from %s to %s", cmp.Or(g.id.Roles, "none"), cmp.Or(id.Roles, "none"))
	}
	g.id.Size, g.id.Roles = id.Size, id.Roles
	c.replan(g, why)
	return true
}

// replan withdraws what may still be undone of the group's plan and has
// the group placed again, keeping its place in line. A rejected or invalid
// group is judged again.
func (c *Core) replan(g *group, why string) {
	c.touch(g)
	line, kept := int64(0), false
	for _, a := range append([]*alloc(nil), g.allocs...) {
		if a.running && !a.withdrawable() {
			continue
		}
		if !kept || a.submit < line {
			line, kept = a.submit, true
		}
		c.withdraw(g, a, why)
	}
	if kept {
		g.lineAt, g.hasLine = line, true
	}
	c.setReservedAt(g, -1)
	if g.state == rejected || g.state == invalid {
		g.invalidBy = ""
		c.judgeAgain(g)
		return
	}
	if g.state == queued || g.state == placed {
		g.state, g.reason = gathering, ""
	}
	for _, p := range g.sortedMembers() {
		if p.NodeName == "" {
			c.fx.activatePod(p.ref())
		}
	}
}

// GroupChanged tells the core that the object defining groups named name
// in namespace ns changed (a PodGroup, a Job, a workload): their pods
// still to be placed are woken, so that their next cycle reads the object
// afresh and the group follows it.
func (c *Core) GroupChanged(ns, name string, now int64) {
	c.advance(now)
	// Activations are a set, taken in name order: the map's order does
	// not reach them.
	for _, g := range c.groups {
		if g.id.Namespace != ns || g.id.Name != name && !g.hasRole(name) {
			continue
		}
		for _, p := range g.sortedMembers() {
			if p.NodeName == "" && !p.Done {
				c.fx.activatePod(p.ref())
			}
		}
	}
}
