package localcluster

import (
	"context"
	"fmt"
	"sync"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/scheduling/podgroupprotection"
	"k8s.io/kubernetes/pkg/features"
)

// startPodGroupProtection runs kube-controller-manager's PodGroup
// protection controller in this process until ctx ends, when the API
// server serves Kubernetes PodGroups (GenericWorkload). The API server
// gives every PodGroup a finalizer that only this controller removes,
// once no live pod names the group: without it `kubectl delete` of a
// PodGroup waits forever.
func startPodGroupProtection(ctx context.Context, cfg *rest.Config, wg *sync.WaitGroup) error {
	if !utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload) {
		return nil
	}
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "podgroup-protection-controller"))
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl, err := podgroupprotection.NewPodGroupProtectionController(klog.FromContext(ctx), factory.Scheduling().V1beta1().PodGroups(), factory.Core().V1().Pods(), client)
	if err != nil {
		return fmt.Errorf("podgroup protection controller: %w", err)
	}
	runWithInformers(ctx, wg, factory, func() { ctrl.Run(ctx, 1) })
	return nil
}
