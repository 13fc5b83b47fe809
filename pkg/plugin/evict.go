package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	apipod "k8s.io/kubernetes/pkg/api/v1/pod"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// evictWorkers is how many evictions are carried out at once: a
// preempted group's pods go together, not one after another.
const evictWorkers = 8

// evictor carries out the core's evictions (gang.Effects.Evictions) as
// kube-scheduler's own preemption does (framework/preemption): the pod
// gets the DisruptionTarget condition, reason PreemptionByScheduler,
// through its status subresource, so that its controller (a Job's pod
// failure policy, say) knows why it goes; then it is deleted with its own
// grace period, never forced. The writes run on a work queue keyed by
// pod, off the core's lock, each retried (rate-limited) up to five times.
// A pod already gone, or replaced by a pod of the same name, is left
// alone: both writes carry the pod's UID.
type evictor struct {
	client  kubernetes.Interface
	pods    corelisters.PodLister
	log     klog.Logger
	metrics profileMetrics
	queue   workqueue.TypedRateLimitingInterface[types.UID]

	// pending holds the evictions queued and not yet taken up.
	mu      sync.Mutex
	pending map[types.UID]gang.Eviction
}

// newEvictor returns an evictor writing through client and reading pods
// from lister; with no client it evicts nothing.
func newEvictor(client kubernetes.Interface, lister corelisters.PodLister, m profileMetrics, log klog.Logger) *evictor {
	return &evictor{client: client, pods: lister, log: log, metrics: m, pending: map[types.UID]gang.Eviction{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.UID](),
			workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: "fluence-evictions"})}
}

// add queues an eviction.
func (e *evictor) add(ev gang.Eviction) {
	if e == nil || e.client == nil {
		return
	}
	uid := types.UID(ev.Pod.UID)
	e.mu.Lock()
	e.pending[uid] = ev
	e.mu.Unlock()
	e.queue.Add(uid)
}

// Run carries out queued evictions until ctx ends.
func (e *evictor) Run(ctx context.Context) {
	if e == nil || e.client == nil {
		return
	}
	go func() {
		<-ctx.Done()
		e.queue.ShutDown()
	}()
	var wg sync.WaitGroup
	for range evictWorkers {
		wg.Go(func() {
			for e.next(ctx) {
			}
		})
	}
	wg.Wait()
}

// next takes one eviction from the queue and carries it out; false when
// the queue is shut down.
func (e *evictor) next(ctx context.Context) bool {
	uid, stop := e.queue.Get()
	if stop {
		return false
	}
	defer e.queue.Done(uid)
	e.mu.Lock()
	ev, ok := e.pending[uid]
	delete(e.pending, uid)
	e.mu.Unlock()
	if !ok {
		return true
	}
	err := e.evict(ctx, ev)
	switch {
	case err == nil:
		e.queue.Forget(uid)
	case e.queue.NumRequeues(uid) < 5 && ctx.Err() == nil:
		e.mu.Lock()
		if _, newer := e.pending[uid]; !newer {
			e.pending[uid] = ev
		}
		e.mu.Unlock()
		e.queue.AddRateLimited(uid)
	default:
		e.log.Error(err, "fluence: cannot evict a preempted pod", "pod", klog.KRef(ev.Pod.Namespace, ev.Pod.Name), "group", ev.Group, "preemptor", ev.By)
		e.queue.Forget(uid)
	}
	return true
}

// evict marks the pod DisruptionTarget and deletes it. A pod gone, ended
// or already being deleted needs nothing.
func (e *evictor) evict(ctx context.Context, ev gang.Eviction) error {
	uid := types.UID(ev.Pod.UID)
	pod, err := e.pods.Pods(ev.Pod.Namespace).Get(ev.Pod.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pod.UID != uid || pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	pods := e.client.CoreV1().Pods(pod.Namespace)
	cond := &corev1.PodCondition{
		Type:               corev1.DisruptionTarget,
		ObservedGeneration: apipod.CalculatePodConditionObservedGeneration(&pod.Status, pod.Generation, corev1.DisruptionTarget),
		Status:             corev1.ConditionTrue,
		Reason:             corev1.PodReasonPreemptionByScheduler,
		Message:            ev.Message,
	}
	status := pod.Status.DeepCopy()
	if apipod.UpdatePodCondition(status, cond) {
		patch, err := statusPatch(pod, status)
		if err != nil {
			return err
		}
		if _, err := pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			if gone, gerr := e.gone(ctx, pod); gone || gerr != nil {
				return gerr
			}
			return fmt.Errorf("setting the DisruptionTarget condition: %w", err)
		}
	}
	err = pods.Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	switch {
	case err == nil:
		e.metrics.evicted()
		e.log.V(2).Info("fluence: evicted a preempted pod", "pod", klog.KObj(pod), "group", ev.Group, "preemptor", ev.By)
		return nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		// Gone, or the UID precondition failed: a new pod of the name.
		return nil
	}
	return fmt.Errorf("deleting the pod: %w", err)
}

// gone reports whether the pod no longer exists as the one the eviction
// names (deleted, or replaced by a pod of the same name).
func (e *evictor) gone(ctx context.Context, pod *corev1.Pod) (bool, error) {
	cur, err := e.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return cur.UID != pod.UID, nil
}

// statusPatch is the strategic merge patch from the pod's status to
// status (as kube-scheduler's PatchPodStatus makes it), with the pod's
// UID: the API server refuses it for another pod of the same name, as
// the UID cannot change.
func statusPatch(pod *corev1.Pod, status *corev1.PodStatus) ([]byte, error) {
	oldData, err := json.Marshal(corev1.Pod{Status: pod.Status})
	if err != nil {
		return nil, err
	}
	newData, err := json.Marshal(corev1.Pod{Status: *status})
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, &corev1.Pod{})
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, err
	}
	m["metadata"] = map[string]any{"uid": string(pod.UID)}
	return json.Marshal(m)
}
