package sim

import (
	"cmp"
	"math"
	"slices"
)

// Pod-by-pod preemption in the stock model (StockOptions.Preemption):
// kube-scheduler's DefaultPreemption plugin, reduced to what these
// workloads exercise. It knows nothing of groups.
//
//   - When a pod fits no node, each node is a candidate if the pod would
//     fit there were every pod of strictly lower priority on it gone
//     (pods being evicted already, and pods of groups that completed
//     and are only releasing their nodes, are not counted as victims).
//   - On a candidate node the victims are the fewest needed: all those
//     lower-priority pods, then each spared again, the most important
//     first (higher priority, then bound earlier), if the pod still fits
//     without evicting it (upstream's reprieve; there are no
//     PodDisruptionBudgets here).
//   - The node is picked as upstream's pickOneNodeForPreemption does:
//     the lowest priority of its most important victim, then the lowest
//     sum of victim priorities, then the fewest victims, then the latest
//     bound most important victim (the least work lost), then the lowest
//     node index (upstream picks the first).
//   - The victims are evicted (Env.Evict, EvictionGrace), and the pod is
//     nominated to the node: its request is set aside there, so no other
//     pod takes the room being freed (upstream only keeps it from pods of
//     lower or equal priority). It waits, as unschedulable, for the
//     victims to go; tried again, it binds on its node if it fits there,
//     else anywhere it fits. While lower-priority pods on its node are
//     still going it does not preempt again (upstream's
//     PodEligibleToPreemptOthers).
//
// A victim's group is a gang that loses one member: if it was running,
// its run is lost, and its other pods keep their nodes, bound and idle,
// until the replacement of the evicted pod (a new pod, Pending, of the
// victim's low priority) is bound again and the gang starts over. Nothing
// evicts the rest of the gang: Result.PartialMax and PartialPodSeconds
// measure the gangs left so.

// DefaultStockEvictionGrace is the stock model's eviction grace period
// when StockOptions.EvictionGrace is 0: the same as the fluence model's.
const DefaultStockEvictionGrace = DefaultEvictionGrace

// minStockGrace is the stock model's grace period "at once".
const minStockGrace = 0.001

// stockPreemptor is the state of the stock model's preemption.
type stockPreemptor struct {
	grace float64
	// onNode lists the pods bound on each node.
	onNode [][]podRef
	// at is when each bound pod was bound.
	at map[podRef]float64
	// nominated is the node each nominated pod waits on, its request set
	// aside there in the view.
	nominated map[*qPod]int
}

type podRef struct {
	g   *Group
	pod int
}

func newStockPreemptor(grace float64, nodes int) *stockPreemptor {
	switch {
	case grace < 0:
		// At once: a millisecond, so that the preemptor, tried at most
		// once per instant, is tried again when its victims are gone.
		grace = minStockGrace
	case grace == 0:
		grace = DefaultStockEvictionGrace
	}
	return &stockPreemptor{grace: grace, onNode: make([][]podRef, nodes), at: map[podRef]float64{}, nominated: map[*qPod]int{}}
}

// bound: a pod was bound on node at t.
func (s *stockPreemptor) bound(node int, g *Group, pod int, t float64) {
	r := podRef{g, pod}
	s.onNode[node] = append(s.onNode[node], r)
	s.at[r] = t
}

// left: a pod no longer holds node.
func (s *stockPreemptor) left(node int, g *Group, pod int) {
	r := podRef{g, pod}
	s.onNode[node] = slices.DeleteFunc(s.onNode[node], func(o podRef) bool { return o == r })
	delete(s.at, r)
}

// unnominate gives back a pod's nomination, before it is tried; the node
// it was nominated to, or -1.
func (s *stockPreemptor) unnominate(p *placer, e *qPod) int {
	n, ok := s.nominated[e]
	if !ok {
		return -1
	}
	delete(s.nominated, e)
	p.view.give(n, e.spec)
	p.cache.reset()
	return n
}

// nominate sets the pod's request aside on node n.
func (s *stockPreemptor) nominate(p *placer, e *qPod, n int) {
	s.nominated[e] = n
	p.view.take(n, e.spec)
}

// victim is a pod that may be evicted.
type stockVictim struct {
	podRef
	prio    int64
	boundAt float64
	spec    PodSpec
}

// candidate is a node and the victims preemption would take there.
type stockCandidate struct {
	node    int
	victims []stockVictim
}

// preempt runs after pod e (last nominated to node was, or -1) failed
// to fit at t: it waits for its node while pods are going there, else
// evicts the fewest lower-priority pods of one node that make room and
// is nominated there.
func (s *stockPreemptor) preempt(p *placer, e *qPod, was int) error {
	prio := e.g.Spec.Priority
	if was >= 0 {
		for _, r := range s.onNode[was] {
			if r.g.Evicting(r.pod) && r.g.Spec.Priority < prio {
				s.nominate(p, e, was)
				return nil
			}
		}
	}
	var best *stockCandidate
	for n := range s.onNode {
		c, ok := s.victimsOn(p, n, e)
		if ok && (best == nil || s.better(c, *best)) {
			best = &c
		}
	}
	if best == nil {
		return nil
	}
	var order []*Group
	pods := map[*Group][]int{}
	for _, v := range best.victims {
		if _, seen := pods[v.g]; !seen {
			order = append(order, v.g)
		}
		pods[v.g] = append(pods[v.g], v.pod)
	}
	for _, g := range order {
		if err := p.env.Evict(g, pods[g], s.grace); err != nil {
			return err
		}
	}
	s.nominate(p, e, best.node)
	return nil
}

// victimsOn finds the fewest victims that make room for e on node n,
// and whether there are any that do.
func (s *stockPreemptor) victimsOn(p *placer, n int, e *qPod) (stockCandidate, bool) {
	prio := e.g.Spec.Priority
	var all []stockVictim
	free := p.view.free[n]
	for _, r := range s.onNode[n] {
		if r.g.Spec.Priority >= prio || r.g.Evicting(r.pod) || r.g.End >= 0 {
			continue
		}
		v := stockVictim{podRef: r, prio: r.g.Spec.Priority, boundAt: s.at[r], spec: r.g.Spec.Pods[r.pod]}
		all = append(all, v)
		free = addSpec(free, v.spec)
	}
	if len(all) == 0 || !Fits(free, e.spec) {
		return stockCandidate{}, false
	}
	// The most important first: higher priority, then bound earlier.
	slices.SortStableFunc(all, func(a, b stockVictim) int {
		if a.prio != b.prio {
			return cmp.Compare(b.prio, a.prio)
		}
		return cmp.Compare(a.boundAt, b.boundAt)
	})
	c := stockCandidate{node: n}
	for _, v := range all {
		if rest := subSpec(free, v.spec); Fits(rest, e.spec) {
			free = rest // spared
			continue
		}
		c.victims = append(c.victims, v)
	}
	return c, len(c.victims) > 0
}

// better is pickOneNodeForPreemption's order, reduced.
func (s *stockPreemptor) better(a, b stockCandidate) bool {
	top := func(c stockCandidate) (int64, float64) {
		// victims are sorted most important first.
		return c.victims[0].prio, c.victims[0].boundAt
	}
	sum := func(c stockCandidate) int64 {
		var t int64
		for _, v := range c.victims {
			t += v.prio + math.MaxInt32 + 1
		}
		return t
	}
	ap, at := top(a)
	bp, bt := top(b)
	switch {
	case ap != bp:
		return ap < bp
	case sum(a) != sum(b):
		return sum(a) < sum(b)
	case len(a.victims) != len(b.victims):
		return len(a.victims) < len(b.victims)
	case at != bt:
		return at > bt
	}
	return a.node < b.node
}

func addSpec(a, b PodSpec) PodSpec {
	return PodSpec{CPU: a.CPU + b.CPU, Memory: a.Memory + b.Memory, GPU: a.GPU + b.GPU}
}

func subSpec(a, b PodSpec) PodSpec {
	return PodSpec{CPU: a.CPU - b.CPU, Memory: a.Memory - b.Memory, GPU: a.GPU - b.GPU}
}
