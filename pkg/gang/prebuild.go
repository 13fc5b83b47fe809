package gang

import (
	"fmt"
	"maps"

	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/queue"
)

// A graph for new nodes can be built outside the caller's lock. Building
// one costs as much as the cluster is large (tens of milliseconds at
// 5,000 nodes, more on a loaded machine), and the scheduler's every call
// into the core waits for its lock: a graph built under it while nodes
// arrive was the tail of the scheduler's time per group
// (docs/design/009). The build needs only the nodes and the
// configuration, so the caller takes a plan under its lock (PlanGraph),
// builds from it without (GraphPlan.Build), and installs the result under
// its lock again (InstallGraph): only the replay of what holds resources,
// which the lock must cover, stays under it.
//
// With Config.BuildOutside, arriving nodes wait outside the graph until a
// graph built so is installed; the core still rebuilds by itself for the
// changes nothing may be decided past (a node removed or resized, a node
// moved between domains) and when a judgement needs every node
// (arrivals.go). A graph planned before such a change is refused at
// install: it would show a node set that is gone.

// GraphPlan is what a graph is built from: the nodes as they were when it
// was taken (immutable values, safe to read without the core's lock) and
// the configuration.
type GraphPlan struct {
	nodes    []*Node
	levels   []level
	opts     match.Options
	queue    queue.Config
	graphGen int64
	shapeGen int64
}

// BuiltGraph is a graph, its matcher and an empty queue, ready to be
// installed.
type BuiltGraph struct {
	plan     *GraphPlan
	m        *match.Matcher
	q        *queue.Manager
	vertexOf map[string]int32
	op       string // the step that failed, with err
	err      error
}

// rebuildDue reports whether the graph must be rebuilt before the next
// decision.
func (c *Core) rebuildDue() bool {
	return c.dirty || c.m == nil || c.arrivalsDue() && !c.cfg.BuildOutside
}

// planGraph captures what a graph of the current nodes is built from.
func (c *Core) planGraph() *GraphPlan {
	return &GraphPlan{
		nodes:    c.sortedNodes(),
		levels:   c.levels(),
		opts:     match.Options{Policy: c.cfg.MatchPolicy, TightDomains: c.cfg.DomainOrder == DomainTightest, ExactDomains: true},
		queue:    c.cfg.Queue,
		graphGen: c.graphGen,
		shapeGen: c.shapeGen,
	}
}

// PlanGraph returns a plan for a graph with the nodes waiting outside the
// current one, or nil when none wait, their time has not come
// (arrivals.go), or the core has no graph yet (it builds its first
// itself, as for any change it cannot wait on).
func (c *Core) PlanGraph(now int64) *GraphPlan {
	c.advance(now)
	if c.m == nil || c.dirty || !c.arrivalsDue() {
		return nil
	}
	return c.planGraph()
}

// Build builds the planned graph, its matcher and queue. It reads only
// the plan, so it may run while the core is in use.
func (p *GraphPlan) Build() *BuiltGraph {
	b := &BuiltGraph{plan: p}
	g, err := buildGraph(p.nodes, p.levels)
	if err != nil {
		b.op, b.err = "build-graph", err
		return b
	}
	if b.m, err = match.New(g, p.opts); err != nil {
		b.op, b.err = "new-matcher", err
		return b
	}
	if b.q, err = queue.New(b.m, p.queue); err != nil {
		b.op, b.err = "new-queue", err
		return b
	}
	b.vertexOf = make(map[string]int32, len(p.nodes))
	nodeType, _ := g.LookupType(typeNode)
	for _, v := range g.ByType(nodeType) {
		b.vertexOf[g.Vertex(v).Name] = v
	}
	return b
}

// InstallGraph takes a graph built from a plan as the engine's, unless
// the node set changed since in a way the graph does not show (a node
// removed or resized, moved between domains) or the core rebuilt
// meanwhile: then it reports false and the caller plans again. Nodes
// added since the plan go on waiting, for the next; nodes relabelled,
// cordoned or uncordoned since are brought up to date.
func (c *Core) InstallGraph(b *BuiltGraph, now int64) bool {
	c.advance(now)
	if b == nil || c.m == nil || b.plan.graphGen != c.graphGen || b.plan.shapeGen != c.shapeGen {
		return false
	}
	if b.err != nil {
		c.fail(b.op, "", b.err)
		return false
	}
	waiting := len(c.nodes) - len(b.vertexOf)
	if waiting < 0 {
		c.fail("install-graph", "", fmt.Errorf("the graph has %d nodes, the core %d, with no change since its plan", len(b.vertexOf), len(c.nodes)))
		return false
	}
	if waiting > 0 && c.holdsOutside(b) {
		// A record adopted since holds a node the graph lacks: only a
		// graph with every node can replay it.
		c.dirty = true
		return false
	}
	c.install(b)
	for _, n := range b.plan.nodes {
		cur := c.nodes[n.Name]
		if cur == n {
			continue
		}
		c.m.Graph().Vertex(c.vertexOf[n.Name]).Properties = maps.Clone(cur.Labels)
		c.applyStatus(n.Name)
	}
	if waiting > 0 {
		c.arrivals, c.arriveAt = waiting, c.builtAt+c.cfg.TicksPerSecond
	}
	return true
}

// holdsOutside reports whether an allocation holds a node the built
// graph lacks.
func (c *Core) holdsOutside(b *BuiltGraph) bool {
	for _, g := range c.sortedGroups() {
		for _, a := range g.allocs {
			for _, s := range a.slots {
				if _, ok := b.vertexOf[s.node]; !ok && !s.done {
					if _, exists := c.nodes[s.node]; exists {
						return true
					}
				}
			}
		}
	}
	return false
}
