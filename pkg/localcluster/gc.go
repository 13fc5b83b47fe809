package localcluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
	"k8s.io/kubernetes/pkg/controller/namespace"
)

// gcSyncPeriod is how often the garbage collector looks for resource
// types that appeared (a CRD installed after start) and forgets those
// that went.
const gcSyncPeriod = 10 * time.Second

// startCleanupControllers runs kube-controller-manager's garbage collector
// and namespace controller (and, with Kubernetes PodGroups served, the
// PodGroup protection controller) in this process until ctx ends. Without them
// deleting a Job leaves its pods running, holding their nodes, and a
// deleted namespace stays Terminating for good: what a user of a real
// cluster expects kubectl delete to do would not happen.
func startCleanupControllers(ctx context.Context, cfg *rest.Config, wg *sync.WaitGroup) error {
	gcCfg := rest.AddUserAgent(rest.CopyConfig(cfg), "generic-garbage-collector")
	client, err := kubernetes.NewForConfig(gcCfg)
	if err != nil {
		return err
	}
	meta, err := metadata.NewForConfig(gcCfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	mapper.Reset()
	typed := informers.NewSharedInformerFactory(client, 0)
	metaInformers := metadatainformer.NewSharedInformerFactory(meta, 0)
	started := make(chan struct{})
	gc, err := garbagecollector.NewGarbageCollector(ctx, client, meta, mapper,
		garbagecollector.DefaultIgnoredResources(), informerfactory.NewInformerFactory(typed, metaInformers), started)
	if err != nil {
		return fmt.Errorf("garbage collector: %w", err)
	}

	nsCfg := rest.AddUserAgent(rest.CopyConfig(cfg), "namespace-controller")
	nsClient, err := kubernetes.NewForConfig(nsCfg)
	if err != nil {
		return err
	}
	nsMeta, err := metadata.NewForConfig(nsCfg)
	if err != nil {
		return err
	}
	ns := namespace.NewNamespaceController(ctx, nsClient, nsMeta, nsClient.Discovery().ServerPreferredNamespacedResources,
		typed.Core().V1().Namespaces(), 10*time.Minute, corev1.FinalizerKubernetes)

	typed.Start(ctx.Done())
	close(started)
	wg.Go(func() { gc.Run(ctx, 2, gcSyncPeriod) })
	wg.Go(func() { gc.Sync(ctx, client.Discovery(), gcSyncPeriod) })
	wg.Go(func() { ns.Run(ctx, 2) })
	if err := startPodGroupProtection(ctx, cfg, wg); err != nil {
		return err
	}
	wg.Go(func() {
		<-ctx.Done()
		typed.Shutdown()
		metaInformers.Shutdown()
	})
	return nil
}
