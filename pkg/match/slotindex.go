package match

import (
	"math"
	"math/bits"
)

// The count's node index. Counting reads every node, yet on a loaded
// cluster almost all of them hold no slot of anything: in the 1,000-node
// synthetic run, 93% of the nodes a count read had less than one core
// free. For the current time the count therefore keeps, per pool, which
// nodes have at least 2^l units free at the window start, for every level
// l (one bit per node and level); a request needing n units per slot
// reads only the nodes at level floor(log2 n), and the others, which have
// fewer than n units free, are busy without being read.
//
// The bits describe one instant: every node's usage row must hold at it.
// A commit or cancel on a node marks it dirty (its row is refreshed before
// the next count); a row also stops holding at its planner's next change
// (hi), so when the time reaches the earliest hi, or goes back, every row
// is checked again.

// nodeIndex is the level bitsets over the now cache's rows.
type nodeIndex struct {
	built bool
	at    int64 // the instant the bits describe
	minHi int64 // the earliest time a row stops holding
	dirty []int32
	// isDirty[o]: o is in dirty.
	isDirty []bool
	words   int
	// bits[(p*64+l)*words+w]: word w of pool p's level l.
	bits []uint64
	// level[o*pools+p] is the highest level node o is set in for pool p
	// (-1: none), so an update touches only the levels that changed.
	level []int8
}

func (x *nodeIndex) init(nodes, pools int) {
	x.words = (nodes + 63) / 64
	x.bits = make([]uint64, pools*64*x.words)
	x.level = make([]int8, nodes*pools)
	for i := range x.level {
		x.level[i] = -1
	}
	x.isDirty = make([]bool, nodes)
}

// markDirty notes that node o's row changed.
func (x *nodeIndex) markDirty(o int32) {
	if x.built && !x.isDirty[o] {
		x.isDirty[o] = true
		x.dirty = append(x.dirty, o)
	}
}

// levelOf is the highest l with 2^l <= free, -1 for none.
func levelOf(free int64) int8 {
	if free <= 0 {
		return -1
	}
	return int8(bits.Len64(uint64(free)) - 1)
}

// set records node o's free units in pool p.
func (x *nodeIndex) set(o int32, p, pools int, free int64) {
	k := int(o)*pools + p
	old, now := x.level[k], levelOf(free)
	if old == now {
		return
	}
	w, bit := int(o)/64, uint64(1)<<(uint(o)%64)
	base := p * 64
	for l := int(min(old, now)) + 1; l <= int(max(old, now)); l++ {
		i := (base+l)*x.words + w
		if now > old {
			x.bits[i] |= bit
		} else {
			x.bits[i] &^= bit
		}
	}
	x.level[k] = now
}

// levelWords returns pool p's level-l bit words.
func (x *nodeIndex) levelWords(p int, l int8) []uint64 {
	i := (p*64 + int(l)) * x.words
	return x.bits[i : i+x.words]
}

// prepareIndex brings every row and bit to the instant at.
func (m *Matcher) prepareIndex(at int64) {
	sc := &m.sc
	x := &sc.index
	u := &sc.now
	refresh := func(o int32) {
		row := u.at(m, o, sc.nodes[o], at)
		base := int(o) * sc.pools
		for p := range sc.pools {
			x.set(o, p, sc.pools, sc.tot[base+p]-row[p])
		}
	}
	if !x.built || at < x.at || at >= x.minHi {
		// Every node's bits are set again, not only those of rows that
		// did not hold: a count on the slow path may have refreshed a row
		// without touching the bits.
		x.minHi = math.MaxInt64
		for o := range sc.nodes {
			refresh(int32(o))
			x.minHi = min(x.minHi, u.hi[o])
		}
		for _, o := range x.dirty {
			x.isDirty[o] = false
		}
		x.dirty = x.dirty[:0]
		x.built, x.at = true, at
		return
	}
	for _, o := range x.dirty {
		x.isDirty[o] = false
		refresh(o)
		x.minHi = min(x.minHi, u.hi[o])
	}
	x.dirty = x.dirty[:0]
	x.at = at
}

// countRange counts the nodes with ordinals [lo, hi), all children of one
// vertex, reading only those the index says might hold a slot.
func (s *selector) countRange(lo, hi int32, c *counting) {
	m := s.m
	x := &m.sc.index
	var lv [8][]uint64
	if len(c.needs) > len(lv) {
		for o := lo; o < hi && c.found < c.want; o++ {
			s.countNode(o, m.sc.nodes[o], c)
		}
		return
	}
	for i, n := range c.needs {
		lv[i] = x.levelWords(n.p, levelOf(n.need))
	}
	read := int64(0)
	for w := int(lo) / 64; w <= int(hi-1)/64; w++ {
		word := ^uint64(0)
		for i := range c.needs {
			word &= lv[i][w]
		}
		if w == int(lo)/64 {
			word &= ^uint64(0) << (uint(lo) % 64)
		}
		if w == int(hi-1)/64 && hi%64 != 0 {
			word &= 1<<(uint(hi)%64) - 1
		}
		for word != 0 {
			o := int32(w*64 + bits.TrailingZeros64(word))
			word &= word - 1
			read++
			s.countNode(o, m.sc.nodes[o], c)
			if c.found >= c.want {
				return
			}
		}
	}
	// The nodes not read have less than one slot's worth free in some
	// pool: busy, as the walk would find them.
	c.busy += int64(hi-lo) - read
}

// holdsNoSlot: the node index (or a reservation search's bound) says node
// vertex v has less free than one slot of the request in some pool. A walk that the count found will
// succeed passes over such nodes: visiting them takes nothing, and what a
// successful selection records of them (nodes busy) is not reported.
func (s *selector) holdsNoSlot(v int32) bool {
	sc := &s.m.sc
	if s.probe != nil {
		// A reservation probe: the bound's slots by the free units at
		// the window start are at least what the node holds.
		return s.probe.k[sc.ord[v]] == 0
	}
	base := int(sc.ord[v]) * sc.pools
	for _, n := range s.req.count {
		if sc.index.level[base+n.p] < levelOf(n.need) {
			return true
		}
	}
	return false
}
