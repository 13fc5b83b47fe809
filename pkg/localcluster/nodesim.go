package localcluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/utils/ptr"
)

// NodeSimOptions tune the node simulator. The zero value is usable.
type NodeSimOptions struct {
	// Workers is the number of goroutines writing pod status; default 16.
	Workers int
	// StartDelay is how long a bound pod stays Pending before it runs
	// (image pull, container start); default 0.
	StartDelay time.Duration
	// Namespace limits the simulator to one namespace; "" is all.
	Namespace string
}

// PodRecord is what the simulator saw of one pod (one UID). Times are
// wall-clock times with monotonic readings; zero means "not yet".
type PodRecord struct {
	UID      types.UID
	Node     string
	Bound    time.Time // first seen with spec.nodeName
	Started  time.Time // set Running
	Finished time.Time // set Succeeded, or first seen terminal
	Deleted  time.Time // seen deleted
}

// NodeSim stands in for the kubelets of all nodes: a pod bound to a node
// runs, then succeeds after its run time (PodRuntime); a bound pod being
// deleted gracefully is stopped at once (or, with DrainAnnotation, when
// its grace period ends), set Failed, and removed, as a kubelet does. A
// finalizer keeps it, ended, until its owner removes it. Schedulers thus
// see capacity freed by finished and deleted pods. A pod someone else
// moved to a terminal phase is left alone.
type NodeSim struct {
	client kubernetes.Interface
	lister corelisters.PodLister
	queue  workqueue.TypedRateLimitingInterface[string]
	opts   NodeSimOptions

	mu   sync.Mutex
	recs map[string]*PodRecord // namespace/name
}

// StartNodeSim starts the simulator; it stops when ctx ends. It returns
// once its pod informer has synced.
func StartNodeSim(ctx context.Context, client kubernetes.Interface, opts NodeSimOptions) (*NodeSim, error) {
	if opts.Workers <= 0 {
		opts.Workers = 16
	}
	s := &NodeSim{
		client: client,
		queue: workqueue.NewTypedRateLimitingQueue(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Second)),
		opts: opts,
		recs: map[string]*PodRecord{},
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(opts.Namespace))
	podInformer := factory.Core().V1().Pods()
	s.lister = podInformer.Lister()
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.observe(obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { s.observe(obj.(*corev1.Pod)) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				s.observeDelete(pod)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("node simulator: %w", err)
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			s.queue.ShutDown()
			factory.Shutdown()
			return nil, fmt.Errorf("node simulator: informer for %v did not sync", typ)
		}
	}
	var workers sync.WaitGroup
	for range opts.Workers {
		workers.Go(func() { s.work(ctx) })
	}
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
		workers.Wait()
		factory.Shutdown()
	}()
	return s, nil
}

// Records returns a copy of the records, keyed by namespace/name. A pod
// deleted and re-created under the same name has only its newest record.
func (s *NodeSim) Records() map[string]PodRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]PodRecord, len(s.recs))
	for k, r := range s.recs {
		out[k] = *r
	}
	return out
}

// record returns the record of the pod's UID, creating it; s.mu is held.
func (s *NodeSim) record(key string, uid types.UID) *PodRecord {
	r := s.recs[key]
	if r == nil || r.UID != uid {
		r = &PodRecord{UID: uid}
		s.recs[key] = r
	}
	return r
}

func (s *NodeSim) observe(pod *corev1.Pod) {
	if pod.Spec.NodeName == "" {
		return // not on a node yet
	}
	now := time.Now()
	key := cache.MetaObjectToName(pod).String()
	s.mu.Lock()
	r := s.record(key, pod.UID)
	if r.Bound.IsZero() {
		r.Bound = now
		r.Node = pod.Spec.NodeName
	}
	if podutil.IsPodTerminal(pod) && r.Finished.IsZero() {
		r.Finished = now
	}
	s.mu.Unlock()
	s.queue.Add(key)
}

func (s *NodeSim) observeDelete(pod *corev1.Pod) {
	key := cache.MetaObjectToName(pod).String()
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.recs[key]; r != nil && r.UID == pod.UID && r.Deleted.IsZero() {
		r.Deleted = time.Now()
	}
}

func (s *NodeSim) work(ctx context.Context) {
	for {
		key, quit := s.queue.Get()
		if quit {
			return
		}
		retry, after, err := s.sync(ctx, key)
		switch {
		case err != nil && ctx.Err() == nil:
			klog.FromContext(ctx).V(2).Info("node simulator: retrying", "pod", key, "err", err)
			s.queue.AddRateLimited(key)
		case retry:
			s.queue.Forget(key)
			s.queue.AddAfter(key, after)
		default:
			s.queue.Forget(key)
		}
		s.queue.Done(key)
	}
}

// sync moves one pod along Pending → Running → Succeeded. It returns
// retry with a delay when the pod must be looked at again later.
func (s *NodeSim) sync(ctx context.Context, key string) (retry bool, after time.Duration, err error) {
	name, err := cache.ParseObjectName(key)
	if err != nil {
		return false, 0, nil
	}
	pod, err := s.lister.Pods(name.Namespace).Get(name.Name)
	if apierrors.IsNotFound(err) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	if pod.Spec.NodeName == "" {
		return false, 0, nil
	}

	if pod.DeletionTimestamp != nil {
		// The kubelet's part of graceful deletion: stop the containers
		// (at once, or at the end of the grace period for a pod that
		// drains), record the pod's end, then remove it. A finalizer
		// (the Job controller's, Kueue's) keeps it, ended, until its
		// owner has counted it, as on a real node.
		if left := time.Until(pod.DeletionTimestamp.Time); left > 0 && pod.Annotations[DrainAnnotation] == "true" {
			return true, left, nil
		}
		if p := pod.Status.Phase; p != corev1.PodSucceeded && p != corev1.PodFailed {
			err := s.setStopped(ctx, pod)
			if apierrors.IsNotFound(err) {
				return false, 0, nil
			}
			if err != nil {
				return false, 0, err // a conflict: the next sync reads it again
			}
		}
		err := s.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &pod.UID},
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return false, 0, nil
		}
		return false, 0, err
	}

	s.mu.Lock()
	r := *s.record(key, pod.UID)
	s.mu.Unlock()

	runtime, finite, rtErr := PodRuntime(pod)
	if rtErr != nil && pod.Status.Phase == corev1.PodPending {
		klog.FromContext(ctx).Error(rtErr, "node simulator: the pod runs until deleted")
	}

	switch pod.Status.Phase {
	case corev1.PodPending:
		if wait := s.opts.StartDelay - time.Since(r.Bound); wait > 0 {
			return true, wait, nil
		}
		if err := s.setRunning(ctx, pod); err != nil {
			return false, 0, err
		}
		now := time.Now()
		s.mu.Lock()
		if rec := s.record(key, pod.UID); rec.Started.IsZero() {
			rec.Started = now
		}
		s.mu.Unlock()
		if finite {
			return true, runtime, nil
		}
		return false, 0, nil

	case corev1.PodRunning:
		if !finite {
			return false, 0, nil
		}
		started := r.Started
		if started.IsZero() { // started by an earlier simulator
			if pod.Status.StartTime == nil {
				return false, 0, nil
			}
			started = pod.Status.StartTime.Time
		}
		if left := time.Until(started.Add(runtime)); left > 0 {
			return true, left, nil
		}
		if err := s.setSucceeded(ctx, pod); err != nil {
			return false, 0, err
		}
		now := time.Now()
		s.mu.Lock()
		if rec := s.record(key, pod.UID); rec.Finished.IsZero() {
			rec.Finished = now
		}
		s.mu.Unlock()
		return false, 0, nil
	}
	return false, 0, nil
}

func (s *NodeSim) setRunning(ctx context.Context, pod *corev1.Pod) error {
	now := metav1.Now()
	pod = pod.DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &now
	for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		setCondition(&pod.Status, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	pod.Status.ContainerStatuses = nil
	for _, ctr := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name:    ctr.Name,
			Image:   ctr.Image,
			Ready:   true,
			Started: ptr.To(true),
			State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	_, err := s.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

// MarkSucceeded ends a running pod as its kubelet would when all its
// containers exit 0: for workloads whose pods finish on a signal from
// outside (a launcher), not after a fixed time.
func (s *NodeSim) MarkSucceeded(ctx context.Context, pod *corev1.Pod) error {
	return s.setSucceeded(ctx, pod)
}

func (s *NodeSim) setSucceeded(ctx context.Context, pod *corev1.Pod) error {
	return s.setEnded(ctx, pod, corev1.PodSucceeded, 0, "Completed", "PodCompleted")
}

// setStopped ends a pod being deleted as a kubelet does once it has
// stopped the containers: Failed, each container terminated by the
// signal (exit code 143, SIGTERM), so its owner counts it as failed, and
// a Job replaces it.
func (s *NodeSim) setStopped(ctx context.Context, pod *corev1.Pod) error {
	return s.setEnded(ctx, pod, corev1.PodFailed, 143, "Error", "PodFailed")
}

func (s *NodeSim) setEnded(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase, code int32, reason, condReason string) error {
	now := metav1.Now()
	pod = pod.DeepCopy()
	pod.Status.Phase = phase
	for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		setCondition(&pod.Status, corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: condReason, LastTransitionTime: now})
	}
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		started := now
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.Ready = false
		cs.Started = ptr.To(false)
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, StartedAt: started, FinishedAt: now,
		}}
	}
	_, err := s.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

func setCondition(status *corev1.PodStatus, cond corev1.PodCondition) {
	for i := range status.Conditions {
		if status.Conditions[i].Type == cond.Type {
			if status.Conditions[i].Status == cond.Status {
				return
			}
			status.Conditions[i] = cond
			return
		}
	}
	status.Conditions = append(status.Conditions, cond)
}
