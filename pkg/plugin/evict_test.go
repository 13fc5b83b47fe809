package plugin

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"

	"github.com/fluence-sched/fluence/pkg/gang"
)

func runningPod(name, uid, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: node, SchedulerName: "fluence"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}},
	}
}

// evictorFor starts an evictor over a fake cluster holding pods.
func evictorFor(t *testing.T, profile string, pods ...*corev1.Pod) (*evictor, *fake.Clientset) {
	t.Helper()
	registerMetrics()
	var objs []runtime.Object
	for _, p := range pods {
		objs = append(objs, p)
	}
	cs := fake.NewClientset(objs...)
	ctx, cancel := context.WithCancel(context.Background())
	f := informers.NewSharedInformerFactory(cs, 0)
	lister := f.Core().V1().Pods().Lister()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	e := newEvictor(cs, lister, profileMetrics{profile: profile}, klog.Background())
	go e.Run(ctx)
	return e, cs
}

// podActions lists the writes to pods, as "verb subresource name".
func podActions(cs *fake.Clientset) []string {
	var out []string
	for _, a := range cs.Actions() {
		if a.GetResource().Resource != "pods" {
			continue
		}
		switch a := a.(type) {
		case clienttesting.PatchAction:
			out = append(out, "patch "+a.GetSubresource()+" "+a.GetName())
		case clienttesting.DeleteAction:
			out = append(out, "delete "+a.GetName())
		}
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An evicted pod gets DisruptionTarget (True, PreemptionByScheduler, the
// core's message) through its status subresource, its other conditions
// kept, and is then deleted with its own grace period and its UID as a
// precondition; a pod gone, replaced by another of its name, ended or
// already being deleted is left alone.
func TestEvictions(t *testing.T) {
	deleting := runningPod("deleting", "u-deleting", "n3")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	deleting.Finalizers = []string{"example.com/keep"}
	done := runningPod("done", "u-done", "n4")
	done.Status.Phase = corev1.PodSucceeded
	e, cs := evictorFor(t, "fluence-evict", runningPod("a0", "u-a0", "n1"), runningPod("replaced", "u-new", "n2"), deleting, done)
	const msg = "preempted by pod group ns/h (priority 100000), which needs its nodes to start; pod group ns/a (priority 10) is evicted whole"
	var deleteOpts []metav1.DeleteOptions
	cs.PrependReactor("delete", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		deleteOpts = append(deleteOpts, a.(clienttesting.DeleteActionImpl).DeleteOptions)
		return false, nil, nil
	})
	for _, p := range [][2]string{{"a0", "u-a0"}, {"missing", "u-missing"}, {"replaced", "u-old"}, {"deleting", "u-deleting"}, {"done", "u-done"}} {
		e.add(gang.Eviction{Pod: gang.Ref{UID: p[1], Namespace: "ns", Name: p[0]}, Group: "ns/a", By: "ns/h", Message: msg})
	}
	waitFor(t, "a0 deleted", func() bool {
		_, err := cs.CoreV1().Pods("ns").Get(context.Background(), "a0", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	// The other four are taken up by then or soon; give them the time.
	waitFor(t, "the queue to drain", func() bool { return e.queue.Len() == 0 })
	time.Sleep(100 * time.Millisecond)
	if got, want := podActions(cs), []string{"patch status a0", "delete a0"}; !slices.Equal(got, want) {
		t.Errorf("writes %q, want %q", got, want)
	}
	var patch []byte
	for _, a := range cs.Actions() {
		if pa, ok := a.(clienttesting.PatchAction); ok && pa.GetName() == "a0" {
			patch = pa.GetPatch()
		}
	}
	// The patch carries the UID and only the new condition.
	if want := `{"metadata":{"uid":"u-a0"},"status":{"$setElementOrder/conditions":[{"type":"Ready"},{"type":"DisruptionTarget"}],"conditions":[{"lastProbeTime":null,"lastTransitionTime":`; len(patch) < len(want) || string(patch[:len(want)]) != want {
		t.Errorf("status patch %s, want it to begin %s", patch, want)
	}
	if len(deleteOpts) != 1 || deleteOpts[0].Preconditions == nil || deleteOpts[0].Preconditions.UID == nil || *deleteOpts[0].Preconditions.UID != "u-a0" || deleteOpts[0].GracePeriodSeconds != nil {
		t.Errorf("delete options %+v, want the UID as precondition and the pod's own grace period", deleteOpts)
	}
	if got, err := testutil.GetCounterMetricValue(evictedPods.WithLabelValues("fluence-evict")); err != nil || got != 1 {
		t.Errorf("fluence_evicted_pods_total = %v (%v), want 1", got, err)
	}
}

// The condition the patch sets, read back from the fake API.
func TestEvictionCondition(t *testing.T) {
	e, cs := evictorFor(t, "fluence-evict-cond", runningPod("a0", "u-a0", "n1"))
	// Keep the pod to read its status: refuse the delete for good.
	cs.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "a0", errors.New("kept for the test"))
	})
	e.add(gang.Eviction{Pod: gang.Ref{UID: "u-a0", Namespace: "ns", Name: "a0"}, Group: "ns/a", By: "ns/h", Message: "preempted by pod group ns/h"})
	var c *corev1.PodCondition
	waitFor(t, "the DisruptionTarget condition", func() bool {
		p, err := cs.CoreV1().Pods("ns").Get(context.Background(), "a0", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.DisruptionTarget {
				c = &p.Status.Conditions[i]
			}
		}
		return c != nil
	})
	if c.Status != corev1.ConditionTrue || c.Reason != "PreemptionByScheduler" || c.Message != "preempted by pod group ns/h" {
		t.Errorf("condition %+v, want True/PreemptionByScheduler with the core's message", c)
	}
}

// A delete that fails is retried; the pod is counted once, when it goes.
func TestEvictionRetried(t *testing.T) {
	e, cs := evictorFor(t, "fluence-evict-retry", runningPod("a0", "u-a0", "n1"))
	var fails atomic.Int32
	cs.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		if fails.Add(1) <= 2 {
			return true, nil, apierrors.NewServiceUnavailable("busy")
		}
		return false, nil, nil
	})
	e.add(gang.Eviction{Pod: gang.Ref{UID: "u-a0", Namespace: "ns", Name: "a0"}, Group: "ns/a", By: "ns/h", Message: "m"})
	waitFor(t, "a0 deleted", func() bool {
		_, err := cs.CoreV1().Pods("ns").Get(context.Background(), "a0", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if got := fails.Load(); got != 3 {
		t.Errorf("%d delete calls, want 3 (two failures, then the delete)", got)
	}
	if got, err := testutil.GetCounterMetricValue(evictedPods.WithLabelValues("fluence-evict-retry")); err != nil || got != 1 {
		t.Errorf("fluence_evicted_pods_total = %v (%v), want 1", got, err)
	}
}

// apply queues every eviction and counts one preemption per preempting
// group.
func TestPreemptionsCounted(t *testing.T) {
	e, cs := evictorFor(t, "fluence-preempt", runningPod("a0", "u-a0", "n1"), runningPod("a1", "u-a1", "n2"), runningPod("b0", "u-b0", "n3"))
	p := &Plugin{h: noEvents{}, metrics: profileMetrics{profile: "fluence-preempt"}, evict: e}
	ev := func(name, group, by string) gang.Eviction {
		return gang.Eviction{Pod: gang.Ref{UID: "u-" + name, Namespace: "ns", Name: name}, Group: group, By: by, Message: "m"}
	}
	// h evicts a and b; k, in the same effects, evicts nothing more.
	p.apply(gang.Effects{Evictions: []gang.Eviction{ev("a0", "ns/a", "ns/h"), ev("a1", "ns/a", "ns/h"), ev("b0", "ns/b", "ns/h")}})
	if got, err := testutil.GetCounterMetricValue(preemptions.WithLabelValues("fluence-preempt")); err != nil || got != 1 {
		t.Errorf("fluence_preemptions_total = %v (%v), want 1", got, err)
	}
	waitFor(t, "the three pods deleted", func() bool {
		l, err := cs.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
		return err == nil && len(l.Items) == 0
	})
	if got, err := testutil.GetCounterMetricValue(evictedPods.WithLabelValues("fluence-preempt")); err != nil || got != 3 {
		t.Errorf("fluence_evicted_pods_total = %v (%v), want 3", got, err)
	}
	p.apply(gang.Effects{Evictions: []gang.Eviction{ev("x0", "ns/x", "ns/h2"), ev("y0", "ns/y", "ns/h3")}})
	if got, err := testutil.GetCounterMetricValue(preemptions.WithLabelValues("fluence-preempt")); err != nil || got != 3 {
		t.Errorf("fluence_preemptions_total = %v (%v), want 3 after two more preemptors", got, err)
	}
	// Without an API client (a plugin built for tests) nothing is queued.
	(&Plugin{h: noEvents{}, metrics: profileMetrics{profile: "fluence-preempt-none"}}).apply(gang.Effects{Evictions: []gang.Eviction{ev("a0", "ns/a", "ns/h")}})
}
