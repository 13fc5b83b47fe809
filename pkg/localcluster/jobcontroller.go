package localcluster

import (
	"context"
	"fmt"
	"sync"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/kubernetes/pkg/features"
)

// startJobController runs kube-controller-manager's Job controller in this
// process until ctx ends. With the WorkloadWithJob gate on it also creates
// the Workload and PodGroup of each gang-shaped Job, as in a real cluster.
func startJobController(ctx context.Context, cfg *rest.Config, wg *sync.WaitGroup) error {
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "job-controller"))
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	var ctrl *job.Controller
	if utilfeature.DefaultFeatureGate.Enabled(features.WorkloadWithJob) {
		ctrl, err = job.NewController(ctx, client, factory.Core().V1().Pods(), factory.Batch().V1().Jobs(),
			factory.Scheduling().V1beta1().Workloads(), factory.Scheduling().V1beta1().PodGroups())
	} else {
		ctrl, err = job.NewController(ctx, client, factory.Core().V1().Pods(), factory.Batch().V1().Jobs(), nil, nil)
	}
	if err != nil {
		return fmt.Errorf("job controller: %w", err)
	}
	runWithInformers(ctx, wg, factory, func() { ctrl.Run(ctx, 5) })
	return nil
}

// runWithInformers starts a controller's informers and runs it until ctx
// ends, then stops the informers.
func runWithInformers(ctx context.Context, wg *sync.WaitGroup, factory informers.SharedInformerFactory, run func()) {
	factory.Start(ctx.Done())
	wg.Go(func() {
		run()
		factory.Shutdown()
	})
}
