package groups

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// ConditionKey is the PodGroup annotation holding fluence's Schedulable
// condition. The scheduler-plugins PodGroup (v1alpha1) has no
// status.conditions, and its CRD prunes unknown status fields, so the
// condition is kept where any PodGroup can carry it.
const ConditionKey = "fluence.flux-framework.org/condition"

// condition is the annotation's JSON, shaped as a metav1.Condition.
type condition struct {
	Type               string      `json:"type"`
	Status             string      `json:"status"`
	Reason             string      `json:"reason"`
	Message            string      `json:"message"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`
}

var conditionReasons = map[gang.ConditionStatus]string{gang.Scheduled: "Placed", gang.Waiting: "Waiting", gang.Unsatisfiable: "Unsatisfiable"}

// ConditionWriter writes PodGroup conditions one group at a time, latest
// first: a work queue keyed by group, so two writes for one group never
// race and a condition superseded before it was written is never written.
type ConditionWriter struct {
	dyn   dynamic.Interface
	rec   events.EventRecorderLogger
	log   klog.Logger
	now   func() time.Time
	queue workqueue.TypedRateLimitingInterface[string]

	// native is the scheduling.k8s.io PodGroup resource to write.
	native func() schema.GroupVersionResource
	// nativeOwned: kube-scheduler writes the condition itself (see
	// LeaveNativeConditions).
	nativeOwned bool

	// latest holds, per group, the condition queued and not yet written.
	// A group leaves it as soon as its write is taken up, so it holds only
	// groups with a write pending, never every group the scheduler has
	// seen: groups come and go for as long as the scheduler runs.
	mu     sync.Mutex
	latest map[string]gang.Condition
}

// NewConditionWriter returns a writer patching PodGroups through dyn and
// recording rejections with rec (either may be nil: with no dyn, nothing is
// written). Nothing is written before Run.
func NewConditionWriter(dyn dynamic.Interface, rec events.EventRecorderLogger, log klog.Logger) *ConditionWriter {
	return &ConditionWriter{dyn: dyn, rec: rec, log: log, now: time.Now, latest: map[string]gang.Condition{},
		native: func() schema.GroupVersionResource { return nativeVersions[0].gvr },
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "fluence-podgroup-conditions"})}
}

// WriteNativeAs makes the writer write Kubernetes PodGroups in the version
// c reads them in (by default, the preferred version).
func (w *ConditionWriter) WriteNativeAs(c *CustomResources) {
	if w != nil && c != nil {
		w.native = c.NativePodGroupResource
	}
}

// LeaveNativeConditions makes the writer leave the scheduling condition of Kubernetes PodGroups to kube-scheduler. With the
// GenericWorkload gate on, kube-scheduler runs its own pod-group cycle
// around the plugins and writes the condition after every attempt, with a
// message of its own; two writers would only overwrite each other. A
// rejection is still reported as a Warning event on the PodGroup, with
// fluence's reason.
func (w *ConditionWriter) LeaveNativeConditions() {
	if w != nil {
		w.nativeOwned = true
	}
}

// Set queues c for its PodGroup, replacing any condition of the group not
// yet written.
func (w *ConditionWriter) Set(c gang.Condition) {
	if w == nil || w.dyn == nil {
		return
	}
	k := queueKey(c)
	w.mu.Lock()
	w.latest[k] = c
	w.mu.Unlock()
	w.queue.Add(k)
}

// Run writes queued conditions until ctx ends; a write that fails is
// retried, rate-limited, up to five times.
func (w *ConditionWriter) Run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	for {
		key, stop := w.queue.Get()
		if stop {
			return
		}
		c, ok := w.take(key)
		if ok {
			if err := w.write(ctx, c); err != nil && w.queue.NumRequeues(key) < 5 {
				w.putBack(c)
				w.queue.AddRateLimited(key)
			} else {
				if err != nil {
					w.log.Info("fluence: cannot record the PodGroup condition", "podGroup", key, "err", err)
				}
				w.queue.Forget(key)
			}
		}
		w.queue.Done(key)
	}
}

// take removes and returns the condition queued for key.
func (w *ConditionWriter) take(key string) (gang.Condition, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.latest[key]
	delete(w.latest, key)
	return c, ok
}

// putBack queues c again for a retry unless Set superseded it while it was
// being written: the newer condition is the one to write.
func (w *ConditionWriter) putBack(c gang.Condition) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, newer := w.latest[queueKey(c)]; !newer {
		w.latest[queueKey(c)] = c
	}
}

// write records c on its PodGroup. lastTransitionTime moves only when the
// status does; an unchanged condition is not written again. A rejection
// also gets a Warning event on the PodGroup itself.
func (w *ConditionWriter) write(ctx context.Context, c gang.Condition) error {
	if c.Status.Wholeness() {
		return w.writeWhole(ctx, c)
	}
	if c.Status == gang.Disrupted {
		return w.writeDisrupted(ctx, c)
	}
	if c.Group.Source == gang.SourceNativePodGroup {
		return w.writeNative(ctx, c)
	}
	next := condition{Type: "Schedulable", Status: "False", Reason: conditionReasons[c.Status], Message: c.Message}
	if c.Status == gang.Scheduled {
		next.Status = "True"
	}
	pg, err := w.annotate(ctx, c.Group, ConditionKey, next)
	if err != nil || pg == nil {
		return err
	}
	if c.Status == gang.Unsatisfiable && w.rec != nil {
		w.rec.Eventf(pg, nil, corev1.EventTypeWarning, "FluenceGroupRejected", "Scheduling", "%s", c.Message)
	}
	return nil
}

// annotate records next in the scheduler-plugins PodGroup's annotation
// key. lastTransitionTime moves only when the status does; an unchanged
// condition is not written again. It returns the PodGroup patched, nil
// when nothing was written.
func (w *ConditionWriter) annotate(ctx context.Context, id gang.GroupID, key string, next condition) (*unstructured.Unstructured, error) {
	res := w.dyn.Resource(PodGroupResource).Namespace(id.Namespace)
	pg, err := res.Get(ctx, id.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil // deleted: nothing to record
	}
	if err != nil {
		return nil, err
	}
	next.LastTransitionTime = metav1.NewTime(w.now().Truncate(time.Second))
	var old condition
	if v := pg.GetAnnotations()[key]; v != "" && json.Unmarshal([]byte(v), &old) == nil {
		if old.Status == next.Status {
			next.LastTransitionTime = old.LastTransitionTime
		}
		if old == next {
			return nil, nil
		}
	}
	value, err := json.Marshal(next)
	if err != nil {
		return nil, err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: string(value)}}})
	if err != nil {
		return nil, err
	}
	return res.Patch(ctx, id.Name, types.MergePatchType, patch, metav1.PatchOptions{})
}

// writeNative sets the scheduling condition of a Kubernetes PodGroup
// (PodGroupInitiallyScheduled in v1beta1) through its status subresource:
// True/Scheduled when the group is placed, False/Unschedulable with
// fluence's message while it waits or when it is rejected. Once True, it
// is never set back: v1beta1 says the condition records the first
// success. meta.SetStatusCondition keeps lastTransitionTime
// while the status holds; an unchanged condition is not written again. A
// conflict is retried by the caller with the PodGroup read afresh.
func (w *ConditionWriter) writeNative(ctx context.Context, c gang.Condition) error {
	res, pg, conds, err := w.readNative(ctx, c.Group)
	if err != nil || pg == nil {
		return err
	}
	if w.nativeOwned {
		if c.Status == gang.Unsatisfiable && w.rec != nil {
			w.rec.Eventf(pg, nil, corev1.EventTypeWarning, "FluenceGroupRejected", "Scheduling", "%s", c.Message)
		}
		return nil
	}
	v := nativeVersionOf(w.native())
	if v.sticky {
		if old := meta.FindStatusCondition(conds, v.condition); old != nil && old.Status == metav1.ConditionTrue {
			return nil // once scheduled, the condition says so for good
		}
	}
	msg := c.Message
	if !strings.HasPrefix(msg, "fluence:") {
		msg = "fluence: " + msg // the condition is shared with any scheduler of the group
	}
	next := metav1.Condition{Type: v.condition, Status: metav1.ConditionFalse, Reason: NativeReasonUnschedulable, Message: msg}
	if c.Status == gang.Scheduled {
		next.Status, next.Reason = metav1.ConditionTrue, NativeReasonScheduled
	}
	pg, err = w.setNative(ctx, res, pg, conds, next)
	if err != nil || pg == nil {
		return err
	}
	if c.Status == gang.Unsatisfiable && w.rec != nil {
		w.rec.Eventf(pg, nil, corev1.EventTypeWarning, "FluenceGroupRejected", "Scheduling", "%s", c.Message)
	}
	return nil
}

// The reasons fluence writes in a Kubernetes PodGroup's scheduling
// condition, as kube-scheduler does.
const (
	NativeReasonScheduled     = "Scheduled"
	NativeReasonUnschedulable = "Unschedulable"
)

// readNative reads a Kubernetes PodGroup and its conditions; pg is nil
// when it is gone (or its version is not served): nothing to record.
func (w *ConditionWriter) readNative(ctx context.Context, id gang.GroupID) (dynamic.ResourceInterface, *unstructured.Unstructured, []metav1.Condition, error) {
	res := w.dyn.Resource(w.native()).Namespace(id.Namespace)
	pg, err := res.Get(ctx, id.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return res, nil, nil, nil
	}
	if err != nil {
		return res, nil, nil, err
	}
	var conds []metav1.Condition
	if raw, found, _ := unstructured.NestedSlice(pg.Object, "status", "conditions"); found {
		for _, item := range raw {
			m, ok := item.(map[string]any)
			var cond metav1.Condition
			if !ok || runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) != nil {
				return res, nil, nil, fmt.Errorf("PodGroup %s/%s: status.conditions holds %v, not a condition", id.Namespace, id.Name, item)
			}
			conds = append(conds, cond)
		}
	}
	return res, pg, conds, nil
}

// setNative sets next among a Kubernetes PodGroup's conditions through its
// status subresource. meta.SetStatusCondition keeps lastTransitionTime
// while the status holds; an unchanged condition is not written again (pg
// is then nil).
func (w *ConditionWriter) setNative(ctx context.Context, res dynamic.ResourceInterface, pg *unstructured.Unstructured, conds []metav1.Condition, next metav1.Condition) (*unstructured.Unstructured, error) {
	next.ObservedGeneration = pg.GetGeneration()
	next.LastTransitionTime = metav1.NewTime(w.now().Truncate(time.Second))
	if !meta.SetStatusCondition(&conds, next) {
		return nil, nil
	}
	list := make([]any, 0, len(conds))
	for i := range conds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
		if err != nil {
			return nil, err
		}
		list = append(list, m)
	}
	if err := unstructured.SetNestedSlice(pg.Object, list, "status", "conditions"); err != nil {
		return nil, err
	}
	return res.UpdateStatus(ctx, pg, metav1.UpdateOptions{})
}
