package gang

import (
	"maps"
	"slices"
)

// The loop's request step (trySubmit) asks, group by group, whether a
// group has pods enough for a request it lacks. The answer depends only on
// the group itself (its pods, allocations and state) and on the graph, so
// a group nothing happened to since it was last asked answers the same:
// nothing to do. The core keeps the keys of groups something happened to
// (touched) and asks only those, in key order as before, instead of every
// group at every loop: with thousands of groups waiting, that scan was
// most of a simulation's time. A change to the nodes or a new graph
// touches every group.

// touch records that something happened to a group.
func (c *Core) touch(g *group) {
	if g != nil {
		g.victimRec = nil
		c.touched[g.id.Key] = true
		c.markGroup(g)
		if c.gathering[g.id.Key] != nil {
			c.gatherTouched[g.id.Key] = true
		}
		if g.everPlaced {
			c.review[g.id.Key] = true
		}
	}
}

// touchAll records that every group may answer differently (the nodes or
// the graph changed).
func (c *Core) touchAll() {
	for key := range c.groups {
		c.touched[key] = true
		if c.pub != nil {
			c.pub.dirtyGroups[key] = true
		}
	}
}

// touchedGroups returns the touched groups that still exist, in key
// order, and forgets them.
func (c *Core) touchedGroups() []*group { return c.groupsOf(c.touched) }

// groupsOf returns the groups of a set of keys that still exist, in key
// order, and empties the set.
func (c *Core) groupsOf(set map[string]bool) []*group {
	keys := slices.Sorted(maps.Keys(set))
	clear(set)
	out := make([]*group, 0, len(keys))
	for _, k := range keys {
		if g := c.groups[k]; g != nil {
			out = append(out, g)
		}
	}
	return out
}
