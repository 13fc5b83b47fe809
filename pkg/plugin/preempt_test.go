package plugin_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/fluence-sched/fluence/pkg/k8sadapter"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// TestPreemptsOnlyItsOwnPods: fluence evicts only groups it placed, never
// another scheduler's pods. n1 is held by a default-scheduler pod, n2 by
// a fluence group of priority 0 (adopted from its allocation record). A
// group of priority 1000 needing both nodes evicts nothing (only the
// fluence group could go, and that is not enough); a group of the same
// priority needing one node evicts the fluence group: its pod is marked
// DisruptionTarget and deleted, with the pod's own grace period.
func TestPreemptsOnlyItsOwnPods(t *testing.T) {
	stock := pod("stock", 0, "4").SchedulerName("default-scheduler").Node("n1").Obj()
	low := pod("low-0", 0, "4").Node("n2").Label(k8sadapter.PodGroupKey, "low").Label(k8sadapter.GroupSizeKey, "1").
		Annotation(plugin.AllocationKey, "ns/low@old-1").Obj()
	wide := groupPods("wide", 2, "2", "4")
	for _, p := range wide {
		p.Spec.Priority = new(int32(1000))
	}
	h := newHarness(t, nodes(2, "4"), append([]*corev1.Pod{stock, low}, wide...))

	for _, p := range wide {
		if _, _, s := h.preFilter(p); s.Code() != fwk.Unschedulable {
			t.Fatalf("PreFilter(%s) = %v, want Unschedulable", p.Name, s)
		}
	}
	// The loop runs once a second; a preemption would be decided in it.
	time.Sleep(2500 * time.Millisecond)
	if w := podWrites(h); len(w) > 0 {
		t.Fatalf("writes %q for a group that cannot fit even with fluence's groups gone", w)
	}

	narrow := pod("narrow-0", 5, "4").Label(k8sadapter.PodGroupKey, "narrow").Label(k8sadapter.GroupSizeKey, "1").Priority(1000).Obj()
	h.create(narrow)
	if _, _, s := h.preFilter(narrow); s.Code() != fwk.Unschedulable {
		t.Fatalf("PreFilter(narrow-0) = %v, want Unschedulable while low-0 holds n2", s)
	}
	eventually(t, "low-0 deleted", func() bool {
		_, err := h.cs.CoreV1().Pods(ns).Get(h.ctx, "low-0", metav1.GetOptions{})
		return errors.IsNotFound(err)
	})
	if got, want := podWrites(h), []string{"patch status low-0", "delete low-0"}; !slices.Equal(got, want) {
		t.Errorf("writes %q, want %q", got, want)
	}
	if _, err := h.cs.CoreV1().Pods(ns).Get(h.ctx, "stock", metav1.GetOptions{}); err != nil {
		t.Errorf("the default-scheduler pod: %v", err)
	}
	evs := h.rec.withReason("FluencePreempting")
	if len(evs) != 1 || evs[0].Object != "ns/narrow-0" || !strings.Contains(evs[0].Note, "pod group ns/narrow (priority 1000) evicts ns/low (priority 0, 1 pod, ") {
		t.Errorf("FluencePreempting events %+v, want one on narrow-0 naming ns/low", evs)
	}
	if evs := h.rec.withReason("FluencePreempted"); len(evs) != 1 || evs[0].Object != "ns/low-0" {
		t.Errorf("FluencePreempted events %+v, want one on low-0", evs)
	}
	// Once low-0 is gone, narrow starts on its node.
	eventually(t, "narrow-0 placed on n2", func() bool {
		_, r, _ := h.preFilter(narrow)
		return r != nil && r.NodeNames.Has("n2")
	})
}

// podWrites lists the pod writes other than creates and bindings, as
// "verb subresource name".
func podWrites(h *harness) []string {
	var out []string
	for _, a := range h.cs.Actions() {
		if a.GetResource().Resource != "pods" || a.GetSubresource() == "binding" {
			continue
		}
		switch a := a.(type) {
		case clienttesting.PatchAction:
			out = append(out, strings.TrimSpace("patch "+a.GetSubresource()+" "+a.GetName()))
		case clienttesting.DeleteAction:
			out = append(out, "delete "+a.GetName())
		}
	}
	return out
}
