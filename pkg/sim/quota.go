package sim

import (
	"errors"
	"slices"
)

// The quota model: Kueue-style admission in front of kube-scheduler
// (docs/reference/peers.md 4; docs/reference/experiments.md 4.2, 5.3). One
// ClusterQueue with a nominal quota of cpu and pods, no borrowing, no
// preemption, no waitForPodsReady, no Topology Aware Scheduling (Kueue v0.6
// as run10 used it):
//
//   - A group (Workload) is admitted when the quota left covers the WHOLE
//     group: the sum of its pods' cpu requests and its pod count (Kueue's
//     quota-level all-or-nothing).
//   - Order: priority descending, then arrival, then group index.
//     BestEffortFIFO: a group that does not fit the quota left does not
//     block later groups that fit.
//   - Admitted groups' pods are then placed pod by pod exactly as by the
//     stock model. They are created at admission (the Job integration
//     unsuspends the Job and the Job controller creates the pods), so their
//     queue timestamp is the admission time. Before admission the env counts
//     the pods Pending although a suspended Job has none.
//   - The group's quota returns when it is released (the Job is deleted).
//
// Quota sums are not bin packing: with a quota above the free cpu (run10:
// 40 cores against 24) admitted pods wait for room and partial gangs can
// hold nodes, as in the stock model. A group larger than the whole quota is
// never admitted and stays Pending, as Kueue leaves it inadmissible.

// NewQuota returns the quota model. cpuQuota is in millicores, 0 meaning
// the cluster's total; podQuota 0 means unlimited. Placement is the stock
// model's: kube-scheduler's default pod back-off, DefaultAttemptSeconds.
func NewQuota(cpuQuota int64, podQuota int) Scheduler {
	return NewQuotaWith(cpuQuota, podQuota, DefaultAttemptSeconds)
}

// NewQuotaWith is NewQuota with the placement's time per attempt (0:
// instantaneous, see StockOptions.AttemptSeconds).
func NewQuotaWith(cpuQuota int64, podQuota int, attemptSeconds float64) Scheduler {
	return &quota{cpuQuota: cpuQuota, podQuota: podQuota, attempt: attemptSeconds}
}

type quota struct {
	placer
	cpuQuota int64 // as configured; 0 = the cluster's total
	podQuota int
	attempt  float64 // placement time per attempt
	cpu      int64   // in force for this run

	usedCPU  int64
	usedPods int
	waiting  []*Group // arrived, not admitted, in admission order
	admitted []bool   // by group ID
	cpuOf    []int64  // group cpu by group ID
	retry    bool     // quota freed or a group arrived since the last admission pass
}

func (q *quota) Name() string { return "quota" }
func (q *quota) Model() bool  { return true }
func (q *quota) Config() string {
	pods := "pods unlimited"
	if q.podQuota > 0 {
		pods = "pods " + trimFloat(float64(q.podQuota))
	}
	cpu := "cpu " + fmtCPU(q.cpuQuota)
	if q.cpuQuota == 0 {
		cpu = "cpu = cluster total"
	}
	return "model of Kueue-like quota admission: " + cpu + ", " + pods + ", then pod-by-pod placement" + attemptNote(q.attempt) + gpuCountNote(q.env)
}

// Start resets all state, so a model can be run more than once.
func (q *quota) Start(env *Env) error {
	q.placer = newPlacer(StockOptions{Backoff: DefaultBackoff, AttemptSeconds: q.attempt})
	q.start(env)
	q.cpu = q.cpuQuota
	if q.cpu == 0 {
		for _, n := range env.Cluster().Nodes {
			q.cpu += n.CPU
		}
	}
	q.usedCPU, q.usedPods, q.retry = 0, 0, false
	q.waiting = nil
	q.admitted = make([]bool, len(env.Groups()))
	q.cpuOf = make([]int64, len(env.Groups()))
	return nil
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

func (q *quota) Submit(g *Group) error {
	if q.env == nil {
		return errors.New("not started")
	}
	q.cpuOf[g.ID] = groupCPU(g)
	// Groups arrive in time order, so this is nearly always an append.
	i := len(q.waiting)
	for i > 0 && admitBefore(g, q.waiting[i-1]) {
		i--
	}
	q.waiting = slices.Insert(q.waiting, i, g)
	q.retry = true
	return nil
}

// Release returns the group's quota and is a cluster event for placement.
// PodReleased: a bound pod was deleted; its node has room again.
func (q *quota) PodReleased(g *Group, pod int) error {
	q.event(g, pod)
	return nil
}

// Release returns the group's quota once its last pod is gone, as Kueue
// does when the workload finishes.
func (q *quota) Release(g *Group) error {
	if q.admitted[g.ID] {
		q.usedCPU -= q.cpuOf[g.ID]
		q.usedPods -= len(g.PodNode)
		q.retry = true
	}
	return nil
}

func (q *quota) Schedule() error {
	if q.env == nil {
		return errors.New("not started")
	}
	if q.retry {
		q.retry = false
		now := q.env.Now()
		rest := q.waiting[:0]
		for _, g := range q.waiting {
			cpu, pods := q.cpuOf[g.ID], len(g.PodNode)
			if q.usedCPU+cpu <= q.cpu && (q.podQuota <= 0 || q.usedPods+pods <= q.podQuota) {
				q.usedCPU += cpu
				q.usedPods += pods
				q.admitted[g.ID] = true
				q.enqueue(g, now)
				continue
			}
			rest = append(rest, g)
		}
		clear(q.waiting[len(rest):])
		q.waiting = rest
	}
	return q.schedule()
}

func (q *quota) Wakeup() (float64, bool) { return q.wakeup() }
