package sim

import (
	"fmt"
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

func TestZZPreferred(t *testing.T) {
	w := TopologyFragmentedWorkload()
	s, _ := NewFluence(FluenceConfig{Queue: queue.Config{Policy: queue.Easy, QueueDepth: queue.DefaultQueueDepth, ReservationDepth: queue.DefaultReservationDepth, Packing: true}})
	r, err := Run(w, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := s.(*fluence)
	idx := map[string]int{}
	for i, n := range w.Cluster.Nodes {
		idx[n.Name] = i
	}
	levels := w.TopologyLevels
	for i, g := range w.Groups {
		if g.TopologyPreferred == "" {
			continue
		}
		j := r.Jobs[i]
		var on []*NodeSpec
		for _, n := range j.Nodes {
			on = append(on, &w.Cluster.Nodes[idx[n]])
		}
		lvl := GroupLevel(levels, on)
		nodeFree := make([]int64, len(w.Cluster.Nodes))
		for x, n := range w.Cluster.Nodes {
			nodeFree[x] = n.CPU
		}
		for k, jj := range r.Jobs {
			if k == i || jj.Start < 0 || jj.Start > j.Start {
				continue
			}
			for p, n := range jj.Nodes {
				rel := jj.End + w.Groups[k].ReleaseDelay + 0.1*float64(p)
				if jj.End >= 0 && rel <= j.Start {
					continue
				}
				nodeFree[idx[n]] -= w.Groups[k].Pods[p].CPU
			}
		}
		var cpu int64
		for _, p := range g.Pods {
			cpu += p.CPU
		}
		roomy := []string{}
		racks := map[string][]int{}
		for x, n := range w.Cluster.Nodes {
			racks[n.Labels[RackLabelKey]] = append(racks[n.Labels[RackLabelKey]], x)
		}
		for rk, xs := range racks {
			fr := []int64{}
			for _, x := range xs {
				fr = append(fr, nodeFree[x])
			}
			ok := true
			for _, p := range g.Pods { // pods are sorted big first in these shapes
				placed := false
				for q := range fr {
					if fr[q] >= p.CPU {
						fr[q] -= p.CPU
						placed = true
						break
					}
				}
				if !placed {
					ok = false
					break
				}
			}
			if ok {
				roomy = append(roomy, rk)
			}
		}
		fmt.Printf("%-16s cpu=%d submit=%.0f start=%.0f level=%d within=%q racks-with-cpu-room=%v\n", g.Name, cpu/1000, j.Submit, j.Start, lvl, f.within[i], roomy)
	}
}
