package gang

// Nodes arrive in bursts: a node pool created, a cluster scaled up, a
// scheduler started against thousands of nodes its informer delivers one
// by one. A new node needs a new graph (the matcher's indexes and pruning
// counts are built per graph), and a rebuild costs as much as the cluster
// is large: rebuilt for each of 5,000 nodes arriving while pods were
// scheduled, it was most of the scheduler's time (docs/design/009).
//
// So a node that arrives within a second (engine time) of the last
// rebuild waits outside the graph until that second is over, and every
// node arriving meanwhile joins with it: arrivals cost at most one
// rebuild a second. Waiting only delays: nothing is placed on a node the
// graph lacks. But a group judged impossible, or one preempting to make
// room, would be judged on less than the cluster; such a judgement waits
// for the graph with every node instead (refuse, checkEarly, preempt).

// arrival records a node added to the node set. It reports whether the
// node waits outside the graph; otherwise the caller rebuilds as for any
// other change.
func (c *Core) arrival() bool {
	if c.m == nil || c.dirty {
		return false // a rebuild is due anyway: the node joins it
	}
	if c.now >= c.builtAt+c.cfg.TicksPerSecond && !c.cfg.BuildOutside {
		return false // the first arrival after a quiet second joins at once
	}
	if c.arrivals == 0 {
		// Built outside, the first arrival after a quiet second is
		// due at once: the caller builds while the core goes on.
		c.arriveAt = max(c.now, c.builtAt+c.cfg.TicksPerSecond)
	}
	c.arrivals++
	return true
}

// arrivalsDue reports whether nodes waiting outside the graph are due to
// join it.
func (c *Core) arrivalsDue() bool { return c.arrivals > 0 && c.now >= c.arriveAt }

// judgeWhole reports whether a judgement on the whole cluster (rejecting
// a group, preempting for one) must wait for nodes outside the graph. If
// so it asks for a rebuild before the next decision.
func (c *Core) judgeWhole() bool {
	if c.arrivals == 0 {
		return false
	}
	c.dirty = true
	return true
}

// arrived settles the waiting nodes once a rebuild took them in: like any
// node change, they may make rejected groups possible.
func (c *Core) arrived() {
	c.builtAt = c.now
	if c.arrivals == 0 {
		return
	}
	c.arrivals = 0
	c.nodeGen++
	c.nodesChanged()
}

// rejudge decides again, on a graph with every node, when a decision just
// taken waited for nodes outside the graph (judgeWhole).
func (c *Core) rejudge() {
	if !c.dirty || !c.ensureEngine() {
		return
	}
	for _, g := range c.touchedGroups() {
		c.trySubmit(g)
	}
	c.schedule()
}
