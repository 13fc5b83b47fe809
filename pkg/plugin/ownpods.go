package plugin

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// The scheduler's own pod informer leaves out pods that ended (its field
// selector is status.phase!=Succeeded,status.phase!=Failed): a pod that
// ends reaches its handlers as deleted, as it was while it ran. The core
// must know how a member ended: one that succeeded still counts toward
// its group (an Indexed Job never runs a completed index again), and one
// its node refused (OutOfcpu) must not have its node kept for a
// replacement. So the pods this profile schedules are watched apart, in
// every phase, and reach the core from that informer alone: one stream
// per pod, so its end and its deletion arrive in order (and after the
// scheduler's informer let it go: cacheorder.go). Pods of other
// schedulers still come from the scheduler's informer (what they hold is
// all that matters of them).

// watchOwnPods makes an informer on the pods of this profile, feeding the
// core, and returns its sync check and the function that starts it (once
// the plugin knows whether it acts: the first list must not reach a core
// that drops it).
func (p *Plugin) watchOwnPods(ctx context.Context, client kubernetes.Interface) (cache.InformerSynced, func(), error) {
	selector := fields.OneTermEqualSelector("spec.schedulerName", p.h.ProfileName()).String()
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = selector
	}))
	inf := f.Core().V1().Pods().Informer()
	// The scheduler's informer holds the same pods while they run: keep
	// this copy lean.
	if err := inf.SetTransform(func(o any) (any, error) {
		if pod, ok := o.(*corev1.Pod); ok {
			pod.ManagedFields = nil
		}
		return o, nil
	}); err != nil {
		return nil, nil, err
	}
	// The inspection API finds the groups whose pods wait for their
	// scheduling gates through this index (gated.go).
	if err := inf.AddIndexers(cache.Indexers{gatedIndex: gatedIndexFunc}); err != nil {
		return nil, nil, err
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { p.onOwnPod(o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { p.onOwnPod(o.(*corev1.Pod)) },
		DeleteFunc: func(o any) {
			if pod, ok := objectOf[*corev1.Pod](o); ok {
				p.ownPodDeleted(pod)
			}
		},
	})
	if err != nil {
		return nil, nil, err
	}
	p.ownPods = f.Core().V1().Pods().Lister()
	p.gated = inf.GetIndexer()
	return reg.HasSynced, func() { f.Start(ctx.Done()) }, nil
}

// onOwnPod feeds the core a pod of this profile as its informer stores it
// now (a handler may run after the plugin read the cache when it began to
// lead).
func (p *Plugin) onOwnPod(pod *corev1.Pod) {
	p.ends.mu.Lock()
	defer p.ends.mu.Unlock()
	cur, err := p.ownPods.Pods(pod.Namespace).Get(pod.Name)
	if err != nil || cur.UID != pod.UID || !p.owns(cur) {
		return // gone since, or not this profile's (a client that ignores field selectors)
	}
	p.feedOwnLocked(cur)
}

// fromOwnInformer reports whether the core hears of pod from the informer
// of this profile's pods rather than the scheduler's.
func (p *Plugin) fromOwnInformer(pod *corev1.Pod) bool {
	return p.ownPods != nil && p.owns(pod)
}
