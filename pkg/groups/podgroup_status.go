package groups

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

// The phases of a scheduler-plugins PodGroup (status.phase), as its
// coscheduling controller names them.
const (
	PhasePending    = "Pending"    // fewer than minMember pods exist
	PhaseScheduling = "Scheduling" // minMember pods exist, not all of them placed
	PhaseScheduled  = "Scheduled"  // minMember pods have a node
	PhaseRunning    = "Running"    // minMember pods run (or ran and succeeded)
	PhaseFinished   = "Finished"   // minMember pods succeeded
	PhaseFailed     = "Failed"     // a pod of the group failed
)

// PodGroupStatus is the part of a scheduler-plugins PodGroup's status
// fluence keeps current, so that `kubectl get podgroups` answers as it does
// under the coscheduling controller.
type PodGroupStatus struct {
	Phase             string
	OccupiedBy        string // namespace/name of the pods' controller, if they share one
	Scheduled         int32  // pods with a node, finished ones included
	Running           int32
	Succeeded         int32
	Failed            int32
	ScheduleStartTime *metav1.Time // when the group first left Pending
}

// NextPodGroupStatus computes a PodGroup's status from its pods and its
// previous status. Finished and Failed are final: pods of a finished group
// are deleted by their owners, and the group must not appear to go back to
// Pending when they are. ScheduleStartTime is set once, at now.
func NextPodGroupStatus(prev PodGroupStatus, minMember int32, pods []*corev1.Pod, now metav1.Time) PodGroupStatus {
	if prev.Phase == PhaseFinished || prev.Phase == PhaseFailed {
		return prev
	}
	next := PodGroupStatus{ScheduleStartTime: prev.ScheduleStartTime, OccupiedBy: prev.OccupiedBy}
	var live int32
	owners := map[string]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			live++
		}
		if p.Spec.NodeName != "" {
			next.Scheduled++
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			next.Running++
		case corev1.PodSucceeded:
			next.Succeeded++
		case corev1.PodFailed:
			next.Failed++
		}
		if ref := metav1.GetControllerOf(p); ref != nil {
			owners[p.Namespace+"/"+ref.Name] = true
		}
	}
	if len(owners) == 1 {
		for o := range owners {
			next.OccupiedBy = o
		}
	}
	if minMember < 1 {
		minMember = 1
	}
	switch {
	case next.Failed > 0:
		next.Phase = PhaseFailed
	case next.Succeeded >= minMember:
		next.Phase = PhaseFinished
	case next.Running > 0 && next.Running+next.Succeeded >= minMember:
		next.Phase = PhaseRunning
	case next.Scheduled >= minMember:
		next.Phase = PhaseScheduled
	case live >= minMember:
		next.Phase = PhaseScheduling
	default:
		next.Phase = PhasePending
	}
	if next.Phase != PhasePending && next.ScheduleStartTime == nil {
		t := now
		next.ScheduleStartTime = &t
	}
	return next
}

// PodGroupStatusWriter keeps the status of scheduler-plugins PodGroups
// current from their pods, one PodGroup at a time through a work queue (so
// two writes for one group never race, and a burst of pod changes makes
// one write).
//
// It watches the pods labelled scheduling.x-k8s.io/pod-group itself: the
// scheduler's own pod informer drops pods once they succeed or fail, and
// those are the counts that say a group finished.
type PodGroupStatusWriter struct {
	dyn     dynamic.Interface
	factory informers.SharedInformerFactory
	pods    corelisters.PodLister
	owns    func(*corev1.Pod) bool
	log     klog.Logger
	now     func() time.Time
	queue   workqueue.TypedRateLimitingInterface[string]
}

// NewPodGroupStatusWriter returns a writer watching pods through client and
// writing PodGroups through dyn; owns says which pods this scheduler places
// (only their PodGroups are written). With a nil dyn or client it writes
// nothing.
func NewPodGroupStatusWriter(dyn dynamic.Interface, client kubernetes.Interface, owns func(*corev1.Pod) bool, log klog.Logger) *PodGroupStatusWriter {
	w := &PodGroupStatusWriter{dyn: dyn, owns: owns, log: log, now: time.Now,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "fluence-podgroup-status"})}
	if client == nil {
		w.dyn = nil
		return w
	}
	w.factory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = k8sadapter.SchedulingGroupKey
	}))
	inf := w.factory.Core().V1().Pods()
	w.pods = inf.Lister()
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.podChanged(o) },
		UpdateFunc: func(_, o any) { w.podChanged(o) },
		DeleteFunc: func(o any) { w.podChanged(o) },
	})
	return w
}

func (w *PodGroupStatusWriter) podChanged(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	if pod, ok := o.(*corev1.Pod); ok {
		w.PodChanged(pod)
	}
}

// PodChanged queues the PodGroup pod names with scheduling.x-k8s.io/pod-group,
// if this scheduler places the pod.
func (w *PodGroupStatusWriter) PodChanged(pod *corev1.Pod) {
	if w == nil || w.dyn == nil || (w.owns != nil && !w.owns(pod)) {
		return
	}
	if name := pod.Labels[k8sadapter.SchedulingGroupKey]; name != "" {
		w.queue.Add(pod.Namespace + "/" + name)
	}
}

// PodGroupAdded queues a PodGroup just created, so that it shows Pending
// before any of its pods exist.
func (w *PodGroupStatusWriter) PodGroupAdded(ns, name string) {
	if w != nil && w.dyn != nil {
		w.queue.Add(ns + "/" + name)
	}
}

// Run watches pods and writes queued statuses until ctx ends; a failed
// write is retried, rate-limited, up to five times.
func (w *PodGroupStatusWriter) Run(ctx context.Context) {
	if w == nil || w.dyn == nil {
		return
	}
	w.factory.Start(ctx.Done())
	defer w.factory.Shutdown()
	w.factory.WaitForCacheSync(ctx.Done())
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	for {
		key, stop := w.queue.Get()
		if stop {
			return
		}
		if err := w.write(ctx, key); err != nil && w.queue.NumRequeues(key) < 5 {
			w.queue.AddRateLimited(key)
		} else {
			if err != nil {
				w.log.Info("fluence: cannot write the PodGroup status", "podGroup", key, "err", err)
			}
			w.queue.Forget(key)
		}
		w.queue.Done(key)
	}
}

func (w *PodGroupStatusWriter) write(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	res := w.dyn.Resource(PodGroupResource).Namespace(ns)
	pg, err := res.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // deleted, or the CRD is not installed: nothing to keep
	}
	if err != nil {
		return err
	}
	minMember, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
	pods, err := w.pods.Pods(ns).List(labels.SelectorFromSet(labels.Set{k8sadapter.SchedulingGroupKey: name}))
	if err != nil {
		return err
	}
	if len(pods) > 0 && w.owns != nil && !slices.ContainsFunc(pods, w.owns) {
		return nil // another scheduler's group
	}
	prev := readPodGroupStatus(pg)
	next := NextPodGroupStatus(prev, int32(minMember), pods, metav1.NewTime(w.now().Truncate(time.Second)))
	if samePodGroupStatus(prev, next) {
		return nil
	}
	status, _, _ := unstructured.NestedMap(pg.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	status["phase"] = next.Phase
	status["scheduled"] = int64(next.Scheduled)
	status["running"] = int64(next.Running)
	status["succeeded"] = int64(next.Succeeded)
	status["failed"] = int64(next.Failed)
	if next.OccupiedBy != "" {
		status["occupiedBy"] = next.OccupiedBy
	}
	if next.ScheduleStartTime != nil {
		status["scheduleStartTime"] = next.ScheduleStartTime.UTC().Format(time.RFC3339)
	}
	if err := unstructured.SetNestedMap(pg.Object, status, "status"); err != nil {
		return err
	}
	_, err = res.UpdateStatus(ctx, pg, metav1.UpdateOptions{})
	return err
}

// samePodGroupStatus compares everything but the start time's pointer.
func samePodGroupStatus(a, b PodGroupStatus) bool {
	if (a.ScheduleStartTime == nil) != (b.ScheduleStartTime == nil) {
		return false
	}
	if a.ScheduleStartTime != nil && !a.ScheduleStartTime.Equal(b.ScheduleStartTime) {
		return false
	}
	a.ScheduleStartTime, b.ScheduleStartTime = nil, nil
	return a == b
}

func readPodGroupStatus(pg *unstructured.Unstructured) PodGroupStatus {
	var s PodGroupStatus
	s.Phase, _, _ = unstructured.NestedString(pg.Object, "status", "phase")
	s.OccupiedBy, _, _ = unstructured.NestedString(pg.Object, "status", "occupiedBy")
	count := func(field string) int32 {
		v, _, _ := unstructured.NestedInt64(pg.Object, "status", field)
		return int32(v)
	}
	s.Scheduled, s.Running, s.Succeeded, s.Failed = count("scheduled"), count("running"), count("succeeded"), count("failed")
	if v, _, _ := unstructured.NestedString(pg.Object, "status", "scheduleStartTime"); v != "" {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			mt := metav1.NewTime(t)
			s.ScheduleStartTime = &mt
		}
	}
	return s
}
