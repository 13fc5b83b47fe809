package localcluster

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/resourceclaim"
)

// startClaimController runs kube-controller-manager's ResourceClaim
// controller in this process until ctx ends: it makes each pod's claims
// from their templates (and names them in the pod's status), and releases
// a claim's reservation for a pod that is gone, as in a real cluster. No
// DRA driver is needed for that, nor to schedule: kube-scheduler
// allocates claims from the ResourceSlices alone.
func startClaimController(ctx context.Context, cfg *rest.Config, wg *sync.WaitGroup) error {
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "resource-claim-controller"))
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl, err := resourceclaim.NewController(klog.FromContext(ctx), client, factory.Core().V1().Pods(),
		factory.Scheduling().V1beta1().PodGroups(), factory.Resource().V1().ResourceClaims(), factory.Resource().V1().ResourceClaimTemplates())
	if err != nil {
		return fmt.Errorf("resource claim controller: %w", err)
	}
	runWithInformers(ctx, wg, factory, func() { ctrl.Run(ctx, 5) })
	return nil
}
