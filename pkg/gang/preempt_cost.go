package gang

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The cost of a preemption. Each victim (a group, or a group's pods on one
// node) has a priority and a lost work: for each of its pods, the ticks
// since the pod's last checkpoint (Pod.Checkpointed, the checkpointed-at
// annotation), or since it began when it has none, summed. A set of
// victims costs, per priority, the lost work and the number of victims
// of that priority, and sets are compared at their highest priority
// first: any set that evicts nothing of priority p is cheaper than one
// that does, whatever it evicts below p. So lower priorities go before
// higher ones, and within a priority the least work lost, then the fewest
// victims. Sets still equal are ordered by their victims' keys, sorted: a
// total order, so the cheapest set is one set, whichever way the search
// reaches it. Adding a victim always makes a set dearer, so the cheapest
// set that makes room holds no victim it could do without.
//
// Groups that have not run Preemption.MinRuntime are no candidates at all
// (victims), whatever their cost.

// price is one victim's share of a set's cost.
type price struct {
	prio int32
	lost int64 // pod-ticks lost should it be evicted now
	key  string
}

// priced is what the search chooses among: groups, or pods on a node.
type priced interface{ price() price }

func (v victim) price() price { return price{prio: v.g.priority, lost: v.lost, key: v.g.id.Key} }
func (u podUnit) price() price {
	return price{prio: u.v.g.priority, lost: u.lost, key: u.v.g.id.Key + "@" + u.node}
}

// comparePrice orders single victims cheapest first: the order the search
// tries them in, and the bound it prunes by (a set that must still take
// one more victim costs at least as much as with the cheapest left).
func comparePrice(a, b price) int {
	if a.prio != b.prio {
		return cmp.Compare(a.prio, b.prio)
	}
	if a.lost != b.lost {
		return cmp.Compare(a.lost, b.lost)
	}
	return cmp.Compare(a.key, b.key)
}

// prioCost is a set's cost at one priority.
type prioCost struct {
	prio    int32
	lost    int64
	victims int
}

// setCost is a set's cost: its levels, highest priority first, and its
// victims' keys, sorted.
type setCost struct {
	levels []prioCost
	keys   []string
}

// plus is the cost of the set with one more victim; s is not changed.
func (s setCost) plus(p price) setCost {
	out := setCost{levels: slices.Clone(s.levels), keys: slices.Clone(s.keys)}
	out.addLevel(p)
	j, _ := slices.BinarySearch(out.keys, p.key)
	out.keys = slices.Insert(out.keys, j, p.key)
	return out
}

// addLevel counts one more victim at its priority's level.
func (s *setCost) addLevel(p price) {
	i, found := slices.BinarySearchFunc(s.levels, p.prio, func(l prioCost, prio int32) int { return cmp.Compare(prio, l.prio) })
	if !found {
		s.levels = slices.Insert(s.levels, i, prioCost{prio: p.prio})
	}
	s.levels[i].lost += p.lost
	s.levels[i].victims++
}

// costOf is the cost of a set, as plus for each victim would make it,
// its keys sorted once.
func costOf[T priced](set []T) setCost {
	s := levelsOf(set)
	s.keys = make([]string, len(set))
	for i, v := range set {
		s.keys[i] = v.price().key
	}
	slices.Sort(s.keys)
	return s
}

// levelsOf is the cost of a set without its keys: enough to order sets
// whose levels differ.
func levelsOf[T priced](set []T) setCost {
	var s setCost
	for _, v := range set {
		s.addLevel(v.price())
	}
	return s
}

// compareCost orders sets cheapest first (see above).
func compareCost(a, b setCost) int {
	i, j := 0, 0
	for i < len(a.levels) || j < len(b.levels) {
		var la, lb prioCost
		switch {
		case j == len(b.levels) || (i < len(a.levels) && a.levels[i].prio > b.levels[j].prio):
			la = a.levels[i]
			i++
		case i == len(a.levels) || b.levels[j].prio > a.levels[i].prio:
			lb = b.levels[j]
			j++
		default:
			la, lb = a.levels[i], b.levels[j]
			i, j = i+1, j+1
		}
		if la.lost != lb.lost {
			return cmp.Compare(la.lost, lb.lost)
		}
		if la.victims != lb.victims {
			return cmp.Compare(la.victims, lb.victims)
		}
	}
	return slices.Compare(a.keys, b.keys)
}

// lostNote says what evicting a victim loses, for events and explain:
// "40 s since its checkpoint", "3h run, no checkpoint".
func (c *Core) lostNote(pods int, lost int64, checkpointed bool) string {
	per := lost / int64(max(pods, 1))
	d := ageNote((per + c.cfg.TicksPerSecond - 1) / c.cfg.TicksPerSecond)
	if checkpointed {
		return d + " since its checkpoint"
	}
	return d + " run, no checkpoint"
}

// ageNote renders seconds as "40 s", "290 s", "12 min", "3 h": to the
// second while a difference of seconds may decide a choice.
func ageNote(s int64) string {
	switch {
	case s < 600:
		return fmt.Sprintf("%d s", s)
	case s < 2*3600:
		return fmt.Sprintf("%d min", s/60)
	}
	return fmt.Sprintf("%.1f h", float64(s)/3600)
}

// victimNote describes a victim for the preemption's messages: "ns/a
// (priority 10, 2 pods, 40 s since its checkpoint)".
func (c *Core) victimNote(v victim) string {
	pods := "1 pod"
	if v.pods != 1 {
		pods = fmt.Sprintf("%d pods", v.pods)
	}
	return fmt.Sprintf("%s (priority %d, %s, %s)", v.g.id.Key, v.g.priority, pods, c.lostNote(v.pods, v.lost, v.checkpointed))
}

// victimsNote lists victims for the preemption's messages.
func (c *Core) victimsNote(set []victim) string {
	names := make([]string, len(set))
	for i, v := range set {
		names[i] = c.victimNote(v)
	}
	return strings.Join(names, ", ")
}
