package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// refPass is the definition the fast pass implements: repeatedly take, of
// all active pods not yet tried at this instant, the first in QueueSort
// order (whatever happened since the last pick), and try it. It rescans
// every pod for every pick.
func (c *cosched) refPassImpl(now float64) error {
	c.q.promote(now)
	c.q.incoming = c.q.incoming[:0]
	c.q.active = nil
	c.cache.reset()
	c.q.sink = func(*qPod) {}
	defer func() { c.q.sink = nil }()
	for {
		var best *qPod
		for _, cg := range c.groups {
			if cg == nil {
				continue
			}
			for _, p := range cg.pods {
				if p.state == stActive && p.lastTried < now && (best == nil || c.podLess(p, best)) {
					best = p
				}
			}
		}
		if best == nil {
			break
		}
		best.state = stOut
		if err := c.try(best, c.groups[best.g.ID], now); err != nil {
			return err
		}
	}
	// Leave the queue as the fast pass expects it: every active pod listed.
	for _, cg := range c.groups {
		if cg == nil {
			continue
		}
		for _, p := range cg.pods {
			if p.state == stActive {
				c.q.active = append(c.q.active, p)
			}
		}
	}
	slices.SortFunc(c.q.active, c.q.cmp)
	c.rekeyed = false
	return nil
}

// The fast pass (sorted list + heap) must take exactly the pods the
// reference takes, in the same order: compare whole runs on random small
// workloads and on the measured ones.
func TestCoschedulingPassMatchesReference(t *testing.T) {
	var ws []*Workload
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 100 {
		w := &Workload{Name: fmt.Sprint("random", i), Cluster: mNodes(2+r.IntN(4), 2+int64(r.IntN(3)))}
		for j := range 4 + r.IntN(12) {
			g := mGroup(fmt.Sprintf("g%02d", r.IntN(20)), float64(r.IntN(8))/2, 1+r.IntN(4), 1+int64(r.IntN(2)), float64(1+r.IntN(10)))
			g.Name += fmt.Sprint("-", j)
			g.Priority = int64(r.IntN(2))
			g.ReleaseDelay = float64(r.IntN(3))
			w.Groups = append(w.Groups, g)
		}
		ws = append(ws, w)
	}
	ws = append(ws, mShared(t, "run8"), mShared(t, "run10"))
	for _, w := range ws {
		for _, opts := range []CoschedulingOptions{
			{PermitTimeout: 10, RejectPercentage: 10, Backoff: DefaultBackoff},
			{PermitTimeout: 3, RejectPercentage: 50, Backoff: DefaultBackoff},
			{PermitTimeout: 5, RejectPercentage: 10},
			{PermitTimeout: 10, RejectPercentage: 10, Backoff: DefaultBackoff, GroupBackoff: 2},
			{PermitTimeout: 4, RejectPercentage: 30, Backoff: DefaultBackoff, CreationOrder: true},
		} {
			fast := NewCoschedulingWith(opts)
			ref := NewCoschedulingWith(opts).(*cosched)
			ref.refPass = ref.refPassImpl
			a := fmt.Sprintf("%+v", *mRun(t, w, &viewChecker{Scheduler: fast, t: t}, Options{StallWindow: 60}))
			b := fmt.Sprintf("%+v", *mRun(t, w, ref, Options{StallWindow: 60}))
			if a != b {
				i := 0
				for i < len(a) && i < len(b) && a[i] == b[i] {
					i++
				}
				lo := max(0, i-300)
				t.Fatalf("%s, %+v: fast and reference passes differ at %d\nfast ...%.500s\nref  ...%.500s", w.Name, opts, i, a[lo:], b[lo:])
			}
		}
	}
}
