package gang

import "slices"

// fail records an internal error as an effect: the caller logs and counts
// it. Dropping it instead hid engine failures behind a core that merely
// looked stuck.
func (c *Core) fail(op, group string, err error) {
	if err == nil {
		return
	}
	c.fx.out.Errors = append(c.fx.out.Errors, InternalError{Op: op, Group: group, Err: err})
}

// dequeue takes an allocation's (or a foreign load's) job out of the queue
// and the matcher. The queue answers "no such group" for a job it should
// hold, so that answer is an error too, except for a running allocation
// the engine never took (unplaced): there is nothing to take out.
func (c *Core) dequeue(op, group string, id int64) {
	if c.unplaced[id] {
		delete(c.unplaced, id)
		return
	}
	if c.q == nil {
		return
	}
	c.markQueue()
	c.fail(op, group, c.q.Remove(id))
}

// setUnplaced records a running allocation the engine does not hold.
func (c *Core) setUnplaced(id int64) {
	if c.unplaced == nil {
		c.unplaced = map[int64]bool{}
	}
	c.unplaced[id] = true
}

// holdsUnplaced reports whether a running allocation the engine does not
// hold has a pod on the node: the node stays overloaded whatever its
// foreign load, or the engine would offer what those pods use.
func (c *Core) holdsUnplaced(node string) bool {
	for id := range c.unplaced { // any order: the answer is one bit
		g := c.byAlloc[id]
		if g == nil {
			continue
		}
		if a := g.allocByID(id); a != nil && slices.ContainsFunc(a.slots, func(s *slot) bool { return !s.done && s.node == node }) {
			return true
		}
	}
	return false
}
