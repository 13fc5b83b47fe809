package gang

import (
	"cmp"
	"container/heap"
	"slices"
)

// Wakeup is asked after every event: the earliest reservation coming due,
// hold ending or planned end. Scanning every group for it made an event
// cost as much as the queue is long. The core keeps those times in two
// heaps instead, each entry pushed when its time is set and dropped,
// lazily, once it no longer matches the group or allocation it was for
// (the reservation moved, the allocation ended or was extended): the
// answers are the scan's.

// wakeKind is what a wake entry is for.
type wakeKind uint8

const (
	wakeReserved wakeKind = iota // g.reservedAt
	wakeHold                     // g.holdUntil
	wakeEnd                      // a.start + a.dur - 1 of a running allocation
)

type wake struct {
	at   int64
	kind wakeKind
	g    *group
	a    *alloc
}

type wakeHeap []wake

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h wakeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)        { *h = append(*h, x.(wake)) }
func (h *wakeHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	*h = old[:len(old)-1]
	return w
}

// valid reports whether the entry still stands for its time.
func (c *Core) valid(w wake) bool {
	if c.groups[w.g.id.Key] != w.g {
		return false
	}
	switch w.kind {
	case wakeReserved:
		return w.g.reservedAt == w.at
	case wakeHold:
		return w.g.holdUntil == w.at
	}
	a := w.a
	return c.byAlloc[a.id] == w.g && a.running && a.dur > 0 && a.start+a.dur-1 == w.at
}

// setReservedAt sets a group's reserved start and remembers it.
func (c *Core) setReservedAt(g *group, at int64) {
	if g.reservedAt == at {
		return
	}
	g.reservedAt = at
	c.markGroup(g)
	if at >= 0 {
		heap.Push(&c.wakes, wake{at: at, kind: wakeReserved, g: g})
	}
}

// setHoldUntil sets the end of a group's hold and remembers it.
func (c *Core) setHoldUntil(g *group, at int64) {
	g.holdUntil = at
	c.markGroup(g)
	heap.Push(&c.wakes, wake{at: at, kind: wakeHold, g: g})
}

// planned remembers a running allocation's planned end (set or moved).
func (c *Core) planned(g *group, a *alloc) {
	c.markGroup(g)
	if a.running && a.dur > 0 {
		heap.Push(&c.ends, wake{at: a.start + a.dur - 1, kind: wakeEnd, g: g, a: a})
	}
}

// earliest returns the earliest valid time after now in h, dropping stale
// entries and those at or before now that can never count again (now
// only grows). Valid planned ends at or before now are kept: they are
// overruns extendOverruns has yet to see.
func (c *Core) earliest(h *wakeHeap) (int64, bool) {
	var overdue []wake
	defer func() {
		for _, w := range overdue {
			heap.Push(h, w)
		}
	}()
	for h.Len() > 0 {
		w := (*h)[0]
		if !c.valid(w) {
			heap.Pop(h)
			continue
		}
		if w.at > c.now {
			return w.at, true
		}
		heap.Pop(h)
		if w.kind == wakeEnd {
			overdue = append(overdue, w)
		}
	}
	return 0, false
}

// overruns pops the running allocations whose planned end is at or
// before now, each once, ordered as a scan of the groups in key order
// would meet them.
func (c *Core) overruns() []wake {
	var out []wake
	for c.ends.Len() > 0 {
		w := c.ends[0]
		if !c.valid(w) {
			heap.Pop(&c.ends)
			continue
		}
		if w.at > c.now {
			break
		}
		heap.Pop(&c.ends)
		if !slices.ContainsFunc(out, func(x wake) bool { return x.a == w.a }) {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(x, y wake) int {
		if k := cmp.Compare(x.g.id.Key, y.g.id.Key); k != 0 {
			return k
		}
		return cmp.Compare(slices.Index(x.g.allocs, x.a), slices.Index(y.g.allocs, y.a))
	})
	return out
}
