package sim

import "slices"

// admission is the quota model's Kueue-like admission, apart from what
// places the admitted groups: the quota model puts kube-scheduler's
// pod-by-pod placement behind it (quota.go), NewQuotaOver any scheduler
// (quota_over.go). A group is admitted when the quota left covers the
// whole group, in admitBefore order, a group that does not fit letting
// later ones by (BestEffortFIFO); its quota returns when it is released.
type admission struct {
	cpuQuota int64 // as configured; 0 = the cluster's total
	podQuota int
	cpu      int64 // in force for this run

	usedCPU  int64
	usedPods int
	waiting  []*Group // arrived, not admitted, in admission order
	admitted []bool   // by group ID
	cpuOf    []int64  // group cpu by group ID
	retry    bool     // quota freed or a group arrived since the last admission pass
}

// configNote is the quota in a scheduler's config line.
func (a *admission) configNote() string {
	pods := "pods unlimited"
	if a.podQuota > 0 {
		pods = "pods " + trimFloat(float64(a.podQuota))
	}
	cpu := "cpu " + fmtCPU(a.cpuQuota)
	if a.cpuQuota == 0 {
		cpu = "cpu = cluster total"
	}
	return cpu + ", " + pods
}

// start resets the quota for a run on env's cluster.
func (a *admission) start(env *Env) {
	a.cpu = a.cpuQuota
	if a.cpu == 0 {
		for _, n := range env.Cluster().Nodes {
			a.cpu += n.CPU
		}
	}
	a.usedCPU, a.usedPods, a.retry = 0, 0, false
	a.waiting = nil
	a.admitted = make([]bool, len(env.Groups()))
	a.cpuOf = make([]int64, len(env.Groups()))
}

func groupCPU(g *Group) int64 {
	var cpu int64
	for _, p := range g.Spec.Pods {
		cpu += p.CPU
	}
	return cpu
}

// admitBefore is the admission order: priority descending, then arrival,
// then group index.
func admitBefore(a, b *Group) bool {
	if a.Spec.Priority != b.Spec.Priority {
		return a.Spec.Priority > b.Spec.Priority
	}
	if a.Submit != b.Submit {
		return a.Submit < b.Submit
	}
	return a.ID < b.ID
}

// submit queues an arrived group for admission.
func (a *admission) submit(g *Group) {
	a.cpuOf[g.ID] = groupCPU(g)
	// Groups arrive in time order, so this is nearly always an append.
	i := len(a.waiting)
	for i > 0 && admitBefore(g, a.waiting[i-1]) {
		i--
	}
	a.waiting = slices.Insert(a.waiting, i, g)
	a.retry = true
}

// release returns an admitted group's quota, as Kueue does when its
// workload finishes.
func (a *admission) release(g *Group) {
	if a.admitted[g.ID] {
		a.usedCPU -= a.cpuOf[g.ID]
		a.usedPods -= len(g.PodNode)
		a.retry = true
	}
}

// admit, when the quota or the queue changed, admits in order every
// waiting group the quota left covers and hands each to place.
func (a *admission) admit(place func(*Group) error) error {
	if !a.retry {
		return nil
	}
	a.retry = false
	rest := a.waiting[:0]
	var err error
	for _, g := range a.waiting {
		cpu, pods := a.cpuOf[g.ID], len(g.PodNode)
		if err == nil && a.usedCPU+cpu <= a.cpu && (a.podQuota <= 0 || a.usedPods+pods <= a.podQuota) {
			a.usedCPU += cpu
			a.usedPods += pods
			a.admitted[g.ID] = true
			err = place(g)
			continue
		}
		rest = append(rest, g)
	}
	clear(a.waiting[len(rest):])
	a.waiting = rest
	return err
}
