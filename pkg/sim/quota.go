package sim

import "errors"

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
	return &quota{admission: admission{cpuQuota: cpuQuota, podQuota: podQuota}, attempt: attemptSeconds}
}

type quota struct {
	placer
	admission
	attempt float64 // placement time per attempt
}

func (q *quota) Name() string { return "quota" }
func (q *quota) Model() bool  { return true }
func (q *quota) Config() string {
	return "model of Kueue-like quota admission: " + q.configNote() + ", then pod-by-pod placement" + attemptNote(q.attempt) + gpuCountNote(q.env)
}

// Start resets all state, so a model can be run more than once.
func (q *quota) Start(env *Env) error {
	q.placer = newPlacer(StockOptions{Backoff: DefaultBackoff, AttemptSeconds: q.attempt})
	q.placer.start(env)
	q.admission.start(env)
	return nil
}

func (q *quota) Submit(g *Group) error {
	if q.env == nil {
		return errors.New("not started")
	}
	q.submit(g)
	return nil
}

// PodReleased: a bound pod was deleted; its node has room again.
func (q *quota) PodReleased(g *Group, pod int) error {
	q.event(g, pod)
	return nil
}

// Release returns the group's quota once its last pod is gone, as Kueue
// does when the workload finishes.
func (q *quota) Release(g *Group) error {
	q.release(g)
	return nil
}

func (q *quota) Schedule() error {
	if q.env == nil {
		return errors.New("not started")
	}
	// An admitted group's pods are created at its admission.
	now := q.env.Now()
	if err := q.admit(func(g *Group) error { q.enqueue(g, now); return nil }); err != nil {
		return err
	}
	return q.schedule()
}

func (q *quota) Wakeup() (float64, bool) { return q.wakeup() }
