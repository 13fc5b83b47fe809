package gang

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/fluence-sched/fluence/pkg/jobspec"
)

// Room on one node. A preemptor that is one pod, not bound to a domain,
// needs its room on one node, and only the victims on that node can make
// it: evicting one elsewhere frees nothing it could use there, so the
// cheapest set on the cheapest node is the cheapest set anywhere (it
// holds no victim it could do without, so none off its node). The search
// goes node by node, as kube-scheduler's preemption does, rather than
// over every running group at once, which on a thousand nodes of lone
// pods asks the matcher about thousands of victims per question.
//
// Each node's candidates are priced by arithmetic first: the node's CPU,
// memory, GPUs and pod places, less what the core records its running
// allocations holding there, plus what the victims chosen hold there,
// must cover the pod's request. The matcher holds at least that much
// (it also holds foreign pods and reservations), so a set the
// arithmetic turns away cannot fit: the arithmetic only spares the
// matcher questions whose answer is no. It also gives each node a
// lower bound: a set that makes room takes at least k victims, k being
// what the largest of them would need to cover the request, and costs
// at least the k cheapest (preempt_cost.go orders sets by priority, then
// work lost, then count). Nodes are searched in order of that bound, each
// exactly (cheapestIn, the matcher confined to the node), until the
// next node's bound cannot beat the cheapest set found: usually the
// first node searched is the last.
//
// Devices from claims are left to the matcher (the arithmetic ignores
// them, which only makes it looser), and a node marked overloaded, where
// the core's record and the matcher's may differ, has no arithmetic: its
// bound is its cheapest candidate alone.

// nodeAmt are what the arithmetic counts: CPU (milli), memory (MiB), GPUs,
// pod places.
type nodeAmt [4]int64

func shapeAmounts(s Shape) nodeAmt { return nodeAmt{s.MilliCPU, s.MemoryMiB, s.GPU, 1} }

func (a nodeAmt) plus(b nodeAmt) nodeAmt {
	for i := range a {
		a[i] += b[i]
	}
	return a
}

func (a nodeAmt) covers(b nodeAmt) bool {
	for i := range a {
		if a[i] < b[i] {
			return false
		}
	}
	return true
}

// nodeHeld is what something holds on one node.
type nodeHeld struct {
	node string
	amt  nodeAmt
}

// mergeHeld sums a list of holdings by node, sorted by node.
func mergeHeld(all []nodeHeld) []nodeHeld {
	if len(all) < 2 {
		return all
	}
	slices.SortFunc(all, func(x, y nodeHeld) int { return cmp.Compare(x.node, y.node) })
	out := all[:1]
	for _, h := range all[1:] {
		if last := &out[len(out)-1]; last.node == h.node {
			last.amt = last.amt.plus(h.amt)
		} else {
			out = append(out, h)
		}
	}
	return out
}

// onNode is a candidate as one node sees it: what it holds there, and
// its price (read once: the node's candidates are sorted by it).
type onNode[T priced] struct {
	v   *T
	amt nodeAmt
	p   price
}

func (o onNode[T]) price() price { return o.p }

// nodeCands are one node's candidates, cheapest first, and what the node
// has free with all of them still there.
type nodeCands[T priced] struct {
	node  string
	free  nodeAmt
	exact bool // the arithmetic holds here (not overloaded)
	cands []onNode[T]
	bound setCost
}

// onePodRoom reports whether g's waiting request a is one pod whose room
// the per-node search may find: no required domain, and a policy that
// shares nodes (an exclusive one frees a node only when all go).
func (c *Core) onePodRoom(g *group, a *alloc) bool {
	return g.id.TopologyKey == "" && len(a.slots) == 1 && !c.m.Policy().NodeExclusive
}

// allocatableAmt is a node's allocatable in the arithmetic's units, as
// the graph has it.
func allocatableAmt(n *Node) nodeAmt {
	a := n.Allocatable
	return nodeAmt{a.MilliCPU, a.MemoryBytes >> 20, a.GPU, podPlaces(a)}
}

// admitsNode reports whether the one-pod request js may go to the node at
// vertex v at all: its constraint and its slot's requires.
func (c *Core) admitsNode(js *jobspec.Jobspec, v int32) bool {
	vx := c.m.Graph().Vertex(v)
	if js.Constraint != nil && !js.Constraint.Match(vx.DisplayName(), vx.Rank, vx.Properties) {
		return false
	}
	for _, r := range js.Resources {
		if r.Requires != nil && !r.Requires.Match(vx.DisplayName(), vx.Rank, vx.Properties) {
			return false
		}
	}
	return true
}

// onNodeJobspec is the request confined to the node at vertex v.
func (c *Core) onNodeJobspec(js *jobspec.Jobspec, v int32) *jobspec.Jobspec {
	out := *js
	con := jobspec.Ranks(fmt.Sprint(c.m.Graph().Vertex(v).Rank))
	if js.Constraint != nil {
		con = jobspec.And(js.Constraint, con)
	}
	out.Constraint = con
	return &out
}

// nodeRoom is cheapestRoom for a one-pod preemptor (onePodRoom): the
// cheapest set of cands that lets its request a fit on one node, and the
// dearer one on another node it beat. spread tells where a candidate
// holds what; fits asks the matcher.
func nodeRoom[T priced](c *Core, sc *nodeScratch[T], s *search, a *alloc, cands []T, spread func(*T) []nodeHeld, fits func(js *jobspec.Jobspec, set []T) bool) (best, second found[T]) {
	need := shapeAmounts(a.slots[0].shape)
	// The nodes candidates hold something on, by index (-1: the pod could
	// never go there), each node's candidates counted first so that all
	// are cut from one array: ten thousand lone pods make a thousand
	// nodes of ten.
	sc.reset(len(c.nodes))
	at, nodes, counts := sc.at, sc.nodes, sc.counts
	defer func() { sc.nodes, sc.counts = nodes, counts }()
	for i := range cands {
		for _, h := range spread(&cands[i]) {
			j, seen := at[h.node]
			if !seen {
				j = -1
				n, ok := c.nodes[h.node]
				vx, inGraph := c.vertexOf[h.node]
				if ok && inGraph && !n.Down && c.admitsNode(a.js, vx) {
					j = int32(len(nodes))
					nodes = append(nodes, nodeCands[T]{node: h.node, free: allocatableAmt(n), exact: !c.overloaded[h.node]})
					counts = append(counts, 0)
				}
				at[h.node] = j
			}
			if j >= 0 {
				counts[j]++
			}
		}
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	all := sc.cut(total)
	defer func() { sc.all = all }()
	for j, n := range counts {
		nodes[j].cands = all[len(all) : len(all) : len(all)+n]
		all = all[:len(all)+n]
	}
	for i := range cands {
		v := &cands[i]
		for _, h := range spread(v) {
			if j := at[h.node]; j >= 0 {
				nodes[j].cands = append(nodes[j].cands, onNode[T]{v: v, amt: h.amt, p: (*v).price()})
			}
		}
	}
	// What each node has free as the core records it: its allocatable
	// less the live slots of every running allocation there.
	for _, g := range c.groups {
		for _, h := range c.victimRecOf(g).all {
			if j, ok := at[h.node]; ok && j >= 0 {
				f := &nodes[j].free
				for r := range f {
					f[r] -= h.amt[r]
				}
			}
		}
	}
	// Each node's bound; nodes where even all candidates gone leave too
	// little are dropped.
	kept := sc.kept
	defer func() { sc.kept = kept }()
	for j := range nodes {
		nc := &nodes[j]
		// Keys are unique: the order is one order.
		slices.SortFunc(nc.cands, func(x, y onNode[T]) int { return comparePrice(x.price(), y.price()) })
		k, ok := nc.fewestNeeded(need)
		if !ok {
			continue
		}
		// Levels only: a bound decides the order nodes are searched in and
		// when to stop, never a tie between sets.
		nc.bound = levelsOf(nc.cands[:k])
		kept = append(kept, nc)
	}
	slices.SortFunc(kept, func(x, y *nodeCands[T]) int {
		if d := compareCost(x.bound, y.bound); d != 0 {
			return d
		}
		return cmp.Compare(x.node, y.node)
	})
	for _, nc := range kept {
		// Sets are ordered by their levels, then keys: once a node's bound
		// is dearer by its levels, no set there or on a later node wins.
		if best.ok && compareCost(nc.bound, setCost{levels: best.cost.levels}) > 0 {
			break
		}
		js := c.onNodeJobspec(a.js, c.vertexOf[nc.node])
		quick := func(set []onNode[T]) bool {
			if !nc.exact {
				return true
			}
			have := nc.free
			for _, o := range set {
				have = have.plus(o.amt)
			}
			return have.covers(need)
		}
		probe := func(set []onNode[T]) bool {
			vs := make([]T, len(set))
			for i, o := range set {
				vs[i] = *o.v
			}
			return fits(js, vs)
		}
		f := cheapestIn(s, nc.cands, probe, quick, found[onNode[T]]{cost: best.cost, ok: best.ok})
		if !f.ok {
			continue
		}
		set := make([]T, len(f.set))
		for i, o := range f.set {
			set[i] = *o.v
		}
		best, second = found[T]{domain: "node " + nc.node, set: set, cost: f.cost, ok: true}, best
	}
	return best, second
}

// fewestNeeded is how many of the node's candidates any set that makes
// room there takes at least: per resource, what the largest of them
// would need to cover the request. ok is false when all of them gone
// would not cover it.
func (nc *nodeCands[T]) fewestNeeded(need nodeAmt) (int, bool) {
	if !nc.exact {
		return 1, true
	}
	k := 0
	for r := range need {
		short := need[r] - nc.free[r]
		if short <= 0 {
			continue
		}
		var buf [32]int64 // most nodes hold fewer pods: no allocation
		held := buf[:0]
		for _, o := range nc.cands {
			held = append(held, o.amt[r])
		}
		slices.SortFunc(held, func(x, y int64) int { return cmp.Compare(y, x) })
		n := 0
		for n < len(held) && short > 0 {
			short -= held[n]
			n++
		}
		if short > 0 {
			return 0, false
		}
		k = max(k, n)
	}
	// The matcher said no with nothing evicted: at least one goes.
	return max(k, 1), true
}
