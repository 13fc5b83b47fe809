package replay

import (
	"context"
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/sim"
)

// KueueSchedulerNames are the schedulers behind the real Kueue, in the
// order `fluence demo --with kueue` adds them. They need Kueue's binary,
// built from its module on first use (localcluster.BuildNeighbour).
var KueueSchedulerNames = []string{"stock+kueue", "fluence+kueue"}

// kueueScheduler is place with the real Kueue (its manager as a process of
// its own) admitting each Job whole through one ClusterQueue whose nominal
// quota is the cluster's allocatable capacity: the setup the seed
// experiment meant to run for its Kueue row.
type kueueScheduler struct {
	place Scheduler
}

func (k kueueScheduler) Name() string { return k.place.Name() + "+kueue" }

func (k kueueScheduler) Config() string {
	return "Kueue (sigs.k8s.io/kueue as third_party/kueue pins it, its own process) admitting each Job whole through one ClusterQueue " +
		"whose nominal quota is the nodes' allocatable (BestEffortFIFO, no preemption), then " + k.place.Config()
}

func (k kueueScheduler) FeatureGates() map[string]bool { return k.place.FeatureGates() }

func (k kueueScheduler) Start(ctx context.Context, c *localcluster.Cluster, namespace string) error {
	if err := k.place.Start(ctx, c, namespace); err != nil {
		return err
	}
	// Jobs only: the replay makes nothing else, and Kueue's other
	// integrations would watch kinds this cluster does not serve.
	if _, err := c.StartKueue(ctx, []string{"batch/job"}); err != nil {
		return err
	}
	return createKueueQueues(ctx, c, namespace)
}

// Prepare names the LocalQueue and creates the Job suspended, so that only
// Kueue's admission starts it, whatever its webhook does.
func (k kueueScheduler) Prepare(ctx context.Context, client kubernetes.Interface, job *batchv1.Job) error {
	// JobFor shares one label map between the Job and its pods; the queue
	// label belongs on the Job alone (on a pod it asks Kueue's pod
	// integration to admit the pod by itself).
	job.Labels = maps.Clone(job.Labels)
	job.Labels[localcluster.KueueQueueLabel] = kueueQueue
	job.Spec.Suspend = ptr.To(true)
	return k.place.Prepare(ctx, client, job)
}

// Model is the quota model's admission, at the cluster's total CPU, in
// front of the model of place. The model's quota is CPUs alone, where the
// live ClusterQueue's covers memory and GPUs too: exact for run8, whose
// pods request only CPUs.
func (k kueueScheduler) Model() (sim.Scheduler, string, error) {
	// The quota model is that admission with the stock model's placement
	// built in, and the model the simulator has always run for Kueue.
	if _, ok := k.place.(stockScheduler); ok {
		return sim.NewQuota(0, 0), "", nil
	}
	place, why, err := k.place.Model()
	if err != nil || place == nil {
		return nil, why, err
	}
	return sim.NewQuotaOver(place, 0, 0), "", nil
}
