package sim

import "errors"

// NewQuotaOver puts the quota model's admission in front of place: Kueue
// admitting each group whole against one ClusterQueue, and another
// scheduler placing what it admitted ("quota+fluence" with fluence's gang
// core behind it). place sees a group only once it is admitted, as a
// scheduler sees a suspended Job's pods only once Kueue unsuspends it and
// the Job controller creates them. cpuQuota is in millicores, 0 meaning
// the cluster's total; podQuota 0 means unlimited.
//
// The groups' arrival times stay as they were (Group.Submit), so a
// scheduler that orders by pod creation orders by arrival rather than by
// admission; admission itself goes by arrival, so the two orders differ
// only where a group that did not fit let a later one by. Nodes joining
// mid-run and preemption are not modelled: it is neither a NodeObserver
// nor an Evictee, so Run refuses a workload whose nodes join and an
// eviction fails the run.
func NewQuotaOver(place Scheduler, cpuQuota int64, podQuota int) Scheduler {
	return &quotaOver{place: place, admission: admission{cpuQuota: cpuQuota, podQuota: podQuota}}
}

type quotaOver struct {
	admission
	place   Scheduler
	started bool
}

func (q *quotaOver) Name() string { return "quota+" + q.place.Name() }

// Model: the admission is a model of Kueue, whatever places behind it.
func (q *quotaOver) Model() bool { return true }

func (q *quotaOver) Config() string {
	return "model of Kueue-like quota admission: " + q.configNote() + ", then " + q.place.Name() + ": " + q.place.Config()
}

func (q *quotaOver) Start(env *Env) error {
	q.admission.start(env)
	q.started = true
	return q.place.Start(env)
}

func (q *quotaOver) Submit(g *Group) error {
	if !q.started {
		return errors.New("not started")
	}
	q.submit(g)
	return nil
}

func (q *quotaOver) PodReleased(g *Group, pod int) error { return q.place.PodReleased(g, pod) }

func (q *quotaOver) Release(g *Group) error {
	q.release(g)
	return q.place.Release(g)
}

func (q *quotaOver) Schedule() error {
	if !q.started {
		return errors.New("not started")
	}
	if err := q.admit(q.place.Submit); err != nil {
		return err
	}
	return q.place.Schedule()
}

func (q *quotaOver) Wakeup() (float64, bool) { return q.place.Wakeup() }
