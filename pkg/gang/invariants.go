package gang

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// CheckInvariants returns every way the core's records disagree with each
// other or with the engine, joined (nil when they all agree). Each rule is
// one a correct core holds after every call, whatever the events were: a
// violation is a core bug. It changes nothing and reports in a fixed
// order; it costs a pass over every group, pod, node and engine job, so
// tests and the simulator's checked runs call it, not the scheduler.
func (c *Core) CheckInvariants() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	// Where every allocation id is held, to check the engine against.
	allocs := map[int64]*alloc{}
	for _, key := range slices.Sorted(maps.Keys(c.groups)) {
		g := c.groups[key]
		if g == nil || g.id.Key != key {
			bad("group %s is filed under key %s", groupKey(g), key)
			continue
		}
		c.checkGroup(g, allocs, bad)
		if g.victimRec != nil {
			if fresh := c.readVictimRec(g); !reflect.DeepEqual(g.victimRec, fresh) {
				bad("group %s: its kept victim record %+v differs from one read now %+v: something changed it without touching it", key, *g.victimRec, *fresh)
			}
		}
	}
	for _, uid := range slices.Sorted(maps.Keys(c.podKey)) {
		key := c.podKey[uid]
		g := c.groups[key]
		if g == nil {
			bad("pod %s maps to group %s, which does not exist", uid, key)
		} else if g.members[uid] == nil {
			bad("pod %s maps to group %s, which has no such member", uid, key)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.byAlloc)) {
		g := c.byAlloc[id]
		if g == nil || c.groups[g.id.Key] != g {
			bad("allocation %d belongs to group %s, which is not in the core", id, groupKey(g))
		} else if g.allocByID(id) == nil {
			bad("allocation %d maps to group %s, which does not hold it", id, g.id.Key)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.unplaced)) {
		if a := allocs[id]; a == nil || !a.running {
			bad("allocation %d is recorded as unplaced but is no running allocation", id)
		}
	}
	c.checkGated(bad)
	c.checkGathering(bad)
	c.checkForeign(bad)
	c.checkEngine(allocs, bad)
	c.checkLoad(bad)
	return errors.Join(errs...)
}

func groupKey(g *group) string {
	if g == nil {
		return "<nil>"
	}
	return g.id.Key
}

// checkGroup checks one group's members, allocations and slots.
func (c *Core) checkGroup(g *group, allocs map[int64]*alloc, bad func(string, ...any)) {
	key := g.id.Key
	for _, uid := range slices.Sorted(maps.Keys(g.members)) {
		p := g.members[uid]
		switch {
		case p == nil || p.UID != uid:
			bad("group %s: member %s is recorded as another pod", key, uid)
		case c.podKey[uid] != key:
			bad("group %s: member %s maps to group %q", key, uid, c.podKey[uid])
		}
	}
	// holder: which allocation (and whether as a queued request) each pod
	// is counted in; a pod counts at most once in its group.
	type hold struct {
		id     int64
		queued bool
	}
	holder := map[string]hold{}
	claim := func(a *alloc, uid string, queued bool) {
		if h, dup := holder[uid]; dup {
			switch {
			case h.queued && queued:
				bad("group %s: pod %s is in two queued requests (%d, %d)", key, uid, h.id, a.id)
			case !h.queued && !queued:
				bad("group %s: pod %s holds two slots (allocations %d, %d)", key, uid, h.id, a.id)
			default:
				bad("group %s: pod %s is placed and queued at once (allocations %d, %d)", key, uid, h.id, a.id)
			}
			return
		}
		holder[uid] = hold{id: a.id, queued: queued}
		if g.members[uid] == nil {
			bad("group %s: allocation %d holds pod %s, which is not a member", key, a.id, uid)
		}
	}
	for _, a := range g.allocs {
		if a == nil {
			bad("group %s: a nil allocation", key)
			continue
		}
		if other, dup := allocs[a.id]; dup && other != a {
			bad("group %s: allocation id %d is used twice", key, a.id)
		}
		allocs[a.id] = a
		if c.byAlloc[a.id] != g {
			bad("group %s: allocation %d maps to group %s", key, a.id, groupKey(c.byAlloc[a.id]))
		}
		if !a.running {
			if a.committed || len(a.pods) != len(a.slots) {
				bad("group %s: queued allocation %d: committed=%v, %d pods for %d slots", key, a.id, a.committed, len(a.pods), len(a.slots))
			}
			for _, uid := range a.pods {
				claim(a, uid, true)
			}
			continue
		}
		if len(a.pods) != 0 {
			bad("group %s: running allocation %d still lists %d queued pods", key, a.id, len(a.pods))
		}
		for i, s := range a.slots {
			if s.node == "" {
				bad("group %s: allocation %d: slot %d has no node", key, a.id, i)
			}
			if s.pod == "" || s.done {
				continue
			}
			claim(a, s.pod, false)
		}
	}
}

// checkGated checks that the count of gated pods per group is the count
// of the gated map.
func (c *Core) checkGated(bad func(string, ...any)) {
	want := map[string]int{}
	for _, key := range c.gated {
		want[key]++
	}
	for _, key := range slices.Sorted(maps.Keys(want)) {
		if c.gatedCount[key] != want[key] {
			bad("group %s: %d gated pods counted, %d recorded", key, c.gatedCount[key], want[key])
		}
	}
	for _, key := range slices.Sorted(maps.Keys(c.gatedCount)) {
		if want[key] == 0 {
			bad("group %s: %d gated pods counted, none recorded", key, c.gatedCount[key])
		}
	}
}

// checkForeign checks that foreign pods are indexed both ways and are no
// group's members.
func (c *Core) checkForeign(bad func(string, ...any)) {
	for _, uid := range slices.Sorted(maps.Keys(c.foreignNode)) {
		node := c.foreignNode[uid]
		if _, ok := c.foreign[node][uid]; !ok {
			bad("foreign pod %s is indexed on %s, which does not count it", uid, node)
		}
		if key, ok := c.podKey[uid]; ok {
			bad("foreign pod %s is also a member of group %s", uid, key)
		}
	}
	for _, node := range slices.Sorted(maps.Keys(c.foreign)) {
		for _, uid := range slices.Sorted(maps.Keys(c.foreign[node])) {
			if c.foreignNode[uid] != node {
				bad("foreign pod %s is counted on %s but indexed on %q", uid, node, c.foreignNode[uid])
			}
		}
	}
	for _, node := range slices.Sorted(maps.Keys(c.foreignJob)) {
		// While the graph is to be rebuilt, foreign changes wait for the
		// rebuild, which places every node's load afresh.
		// Devices held by claims may still be counted from before their
		// pods took slots (counting them twice keeps work off them, never
		// on), until the node's load is placed again.
		if !c.dirty && len(c.foreign[node]) == 0 && !c.anyHeld(node) {
			bad("node %s: a foreign job (%d) for no foreign pods or devices", node, c.foreignJob[node])
		}
	}
}

// checkEngine checks the queue and the matcher against the allocations:
// every queued request waits in the queue, every running allocation (but
// those the engine could not take) holds its job, and the engine holds no
// job the core does not know.
func (c *Core) checkEngine(allocs map[int64]*alloc, bad func(string, ...any)) {
	if c.q == nil || c.m == nil {
		for _, id := range slices.Sorted(maps.Keys(allocs)) {
			if !allocs[id].running {
				bad("allocation %d is queued, yet there is no queue", id)
			}
		}
		return
	}
	if err := c.q.Check(); err != nil {
		bad("%w", err)
	}
	jobs := c.m.JobIDs()
	inMatcher := func(id int64) bool { _, ok := slices.BinarySearch(jobs, id); return ok }
	foreign := map[int64]string{}
	for _, node := range slices.Sorted(maps.Keys(c.foreignJob)) {
		id := c.foreignJob[node]
		foreign[id] = node
		if st, _, ok := c.q.StateOf(id); !ok || st != queue.Running {
			bad("node %s: foreign job %d is %v in the queue (known: %v), not running", node, id, st, ok)
		}
		if !inMatcher(id) {
			bad("node %s: foreign job %d is not in the matcher", node, id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(allocs)) {
		a := allocs[id]
		st, _, ok := c.q.StateOf(id)
		switch {
		case !a.running:
			if !ok || (st != queue.Pending && st != queue.Reserved && st != queue.Blocked) {
				bad("allocation %d is queued in the core but %v in the queue (known: %v)", id, st, ok)
			}
			if inMatcher(id) != (ok && st == queue.Reserved) {
				bad("allocation %d: the queue says %v, the matcher holds a job: %v", id, st, inMatcher(id))
			}
		case c.unplaced[id]:
			if ok || inMatcher(id) {
				bad("allocation %d is recorded as unplaced, yet the engine holds it", id)
			}
		case c.dirty:
			// Adopted since the last graph: the rebuild replays it.
		default:
			if !ok || st != queue.Running {
				bad("allocation %d runs in the core but is %v in the queue (known: %v)", id, st, ok)
			}
			if !inMatcher(id) {
				bad("allocation %d runs in the core but the matcher holds no job for it", id)
			}
		}
	}
	known := func(id int64) bool { return allocs[id] != nil || foreign[id] != "" }
	for _, gr := range c.q.Pending() {
		if !known(gr.ID) {
			bad("the queue holds request %d (%s), which the core does not know", gr.ID, gr.Name)
		}
	}
	for _, gr := range c.q.Blocked() {
		if !known(gr.ID) {
			bad("the queue holds blocked request %d (%s), which the core does not know", gr.ID, gr.Name)
		}
	}
	for _, id := range c.q.Running() {
		if !known(id) {
			bad("the queue runs job %d, which the core does not know", id)
		}
	}
	for _, id := range jobs {
		if !known(id) {
			bad("the matcher holds job %d, which the core does not know", id)
		}
	}
}

// checkLoad checks that no node holds more than it has, as the core
// records it (running allocations' live slots, vacant ones included, and
// foreign pods), in the graph's units, unless the node is marked
// overloaded: the core's own record that it is, and takes nothing new.
// While the graph is to be rebuilt the nodes may have shrunk under what
// they hold; the rebuild marks them.
func (c *Core) checkLoad(bad func(string, ...any)) {
	if c.dirty || c.m == nil {
		return
	}
	type load struct{ cpu, mem, gpu, pods, dev int64 }
	held := map[string]*load{}
	at := func(node string) *load {
		if held[node] == nil {
			held[node] = &load{}
		}
		return held[node]
	}
	for _, key := range slices.Sorted(maps.Keys(c.groups)) {
		for _, a := range c.groups[key].allocs {
			if !a.running {
				continue
			}
			for _, s := range a.slots {
				if s.done {
					continue
				}
				if _, ok := c.nodes[s.node]; !ok {
					bad("group %s: allocation %d holds a slot on %s, which is not a node", key, a.id, s.node)
					continue
				}
				l := at(s.node)
				l.cpu, l.mem, l.gpu = addSat(l.cpu, s.shape.MilliCPU), addSat(l.mem, s.shape.MemoryMiB), addSat(l.gpu, s.shape.GPU)
				l.pods, l.dev = addSat(l.pods, 1), addSat(l.dev, s.shape.Devices.total())
			}
		}
	}
	for _, node := range c.foreignNodes() {
		if _, ok := c.nodes[node]; !ok {
			continue // counted once the node is: the rebuild places them
		}
		if _, inGraph := c.vertexOf[node]; !inGraph {
			// A new node waiting outside the graph (arrivals.go): its
			// load is placed, and an overload marked, when it joins;
			// nothing of this scheduler's goes there before.
			continue
		}
		sh := ShapeOf(foreignLoad(c.foreign[node]))
		l := at(node)
		// One pod place for all of them, as the engine's foreign job takes.
		l.cpu, l.mem, l.gpu, l.pods = addSat(l.cpu, sh.MilliCPU), addSat(l.mem, sh.MemoryMiB), addSat(l.gpu, sh.GPU), addSat(l.pods, 1)
		l.dev = addSat(l.dev, int64(len(c.foreignHeld(node))))
	}
	for _, node := range slices.Sorted(maps.Keys(held)) {
		if c.overloaded[node] {
			continue
		}
		l, a := held[node], c.nodes[node].Allocatable
		pods := podPlaces(a)
		if devs := int64(len(c.nodes[node].Devices)); l.cpu > a.MilliCPU || l.mem > a.MemoryBytes>>20 || l.gpu > a.GPU || l.pods > pods || l.dev > devs {
			bad("node %s holds cpu %dm, memory %dMi, %d GPUs, %d pods, %d devices of %dm, %dMi, %d, %d, %d, and is not marked overloaded",
				node, l.cpu, l.mem, l.gpu, l.pods, l.dev, a.MilliCPU, a.MemoryBytes>>20, a.GPU, pods, devs)
		}
	}
}

// foreignLoad sums a node's foreign pods' requests. A negative request
// (no API server admits one) holds nothing, and the sum stops at the
// largest int64 rather than wrap to a small or negative load.
func foreignLoad(pods map[string]Resources) Resources {
	var sum Resources
	for _, r := range pods { // commutative: order does not matter
		sum.MilliCPU = addSat(sum.MilliCPU, max(r.MilliCPU, 0))
		sum.MemoryBytes = addSat(sum.MemoryBytes, max(r.MemoryBytes, 0))
		sum.GPU = addSat(sum.GPU, max(r.GPU, 0))
	}
	return sum
}

// addSat adds without wrapping: absurd requests must not sum to a small
// load.
func addSat(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}
