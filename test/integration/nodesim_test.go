package integration

import (
	"context"
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
	"k8s.io/utils/ptr"
)

// runtimeAnnotation gives a pod's run time as a Go duration ("1500ms"). A pod
// without it runs until it is deleted.
const runtimeAnnotation = "fluence.test/runtime"

// simOptions tune the node simulator. The zero value is usable.
type simOptions struct {
	// Workers is the number of goroutines writing pod status; default 16.
	Workers int
	// StartDelay is how long a bound pod stays Pending before it runs
	// (image pull, container start); default 0.
	StartDelay time.Duration
	// Namespace limits the simulator to one namespace; "" is all namespaces.
	Namespace string
}

// podRecord is what the simulator saw of one pod (one UID). Times are local
// wall-clock times with monotonic readings; zero means "not yet".
type podRecord struct {
	UID      types.UID
	Node     string
	Bound    time.Time // first seen with spec.nodeName
	Started  time.Time // set Running
	Finished time.Time // set Succeeded (or seen terminal)
	Deleted  time.Time // seen deleted
}

// nodeSim stands in for the kubelets of all nodes: a pod bound to a node
// (any node name) runs, then succeeds after its runtimeAnnotation; a bound
// pod being deleted gracefully is removed (grace period 0), as a kubelet
// would once its containers stopped. The scheduler thus sees capacity freed
// by finished or deleted pods.
type nodeSim struct {
	client kubernetes.Interface
	lister corelisters.PodLister
	queue  workqueue.TypedRateLimitingInterface[string]
	opts   simOptions

	mu   sync.Mutex
	recs map[string]*podRecord // namespace/name
}

// startNodeSim starts the simulator; it stops with c.Ctx. It returns once its
// pod informer has synced.
func startNodeSim(c *cluster, opts simOptions) *nodeSim {
	c.t.Helper()
	if opts.Workers <= 0 {
		opts.Workers = 16
	}
	s := &nodeSim{
		client: c.newClient("fluence-it-nodesim"),
		queue: workqueue.NewTypedRateLimitingQueue(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Second)),
		opts: opts,
		recs: map[string]*podRecord{},
	}
	factory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithNamespace(opts.Namespace))
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
		c.t.Fatalf("node simulator: %v", err)
	}
	ctx := c.Ctx
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			c.t.Fatalf("node simulator: informer for %v did not sync", typ)
		}
	}
	for range opts.Workers {
		go s.work(ctx)
	}
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
		factory.Shutdown()
	}()
	return s
}

// records returns a copy of the records, keyed by namespace/name. A pod
// deleted and re-created under the same name has only its newest record.
func (s *nodeSim) records() map[string]podRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]podRecord, len(s.recs))
	for k, r := range s.recs {
		out[k] = *r
	}
	return out
}

// record returns the record of pod's UID, creating it; s.mu must be held.
func (s *nodeSim) record(key string, uid types.UID) *podRecord {
	r := s.recs[key]
	if r == nil || r.UID != uid {
		r = &podRecord{UID: uid}
		s.recs[key] = r
	}
	return r
}

func (s *nodeSim) observe(pod *corev1.Pod) {
	if pod.Spec.NodeName == "" {
		return // not ours (yet)
	}
	now := time.Now()
	key := cache.MetaObjectToName(pod).String()
	s.mu.Lock()
	r := s.record(key, pod.UID)
	if r.Bound.IsZero() {
		r.Bound = now
		r.Node = pod.Spec.NodeName
	}
	if isTerminal(pod) && r.Finished.IsZero() {
		r.Finished = now
	}
	s.mu.Unlock()
	s.queue.Add(key)
}

func (s *nodeSim) observeDelete(pod *corev1.Pod) {
	key := cache.MetaObjectToName(pod).String()
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.recs[key]; r != nil && r.UID == pod.UID && r.Deleted.IsZero() {
		r.Deleted = time.Now()
	}
}

func (s *nodeSim) work(ctx context.Context) {
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
// retry=true with a delay when the pod must be looked at again later.
func (s *nodeSim) sync(ctx context.Context, key string) (retry bool, after time.Duration, err error) {
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
		// The kubelet's part of graceful deletion: stop and remove.
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
		if d, ok := podRuntime(ctx, pod); ok {
			return true, d, nil
		}
		return false, 0, nil

	case corev1.PodRunning:
		d, ok := podRuntime(ctx, pod)
		if !ok {
			return false, 0, nil
		}
		started := r.Started
		if started.IsZero() { // started by an earlier simulator
			if pod.Status.StartTime == nil {
				return false, 0, nil
			}
			started = pod.Status.StartTime.Time
		}
		if left := time.Until(started.Add(d)); left > 0 {
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

// podRuntime parses the runtime annotation; ok is false when the pod runs
// forever.
func podRuntime(ctx context.Context, pod *corev1.Pod) (time.Duration, bool) {
	v, ok := pod.Annotations[runtimeAnnotation]
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		klog.FromContext(ctx).Error(err, "node simulator: bad runtime annotation; the pod runs forever", "pod", klog.KObj(pod))
		return 0, false
	}
	return d, true
}

func (s *nodeSim) setRunning(ctx context.Context, pod *corev1.Pod) error {
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

func (s *nodeSim) setSucceeded(ctx context.Context, pod *corev1.Pod) error {
	now := metav1.Now()
	pod = pod.DeepCopy()
	pod.Status.Phase = corev1.PodSucceeded
	for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		setCondition(&pod.Status, corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: now})
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
			ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: now,
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

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
