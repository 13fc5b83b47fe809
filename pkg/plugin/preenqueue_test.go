package plugin_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

// TestPreEnqueueHoldsUntilWhole: the pods of a labelled group stay out of
// the scheduling queue while the group lacks pods, each counting itself;
// the pod that completes the group passes, and the plugin activates the
// held ones, which pass too and are placed with it.
func TestPreEnqueueHoldsUntilWhole(t *testing.T) {
	pods := groupPods("g", 3, "3", "1")
	h := newHarness(t, nodes(2, "4"), pods[:2])
	h.awaitReady()
	for _, p := range pods[:2] {
		s := h.preEnqueue(p)
		if s.Code() != fwk.UnschedulableAndUnresolvable || s.Message() != "fluence: waiting for the pods of group ns/g: 2 of 3 exist" {
			t.Fatalf("PreEnqueue(%s) = %v, want held, waiting for 2 of 3", p.Name, s)
		}
	}
	h.act.reset()
	h.create(pods[2])
	eventually(t, "the held pods activated", func() bool { return slices.Equal(h.act.activated(), names(pods[:2]...)) })
	for _, p := range pods {
		if s := h.preEnqueue(p); !s.IsSuccess() {
			t.Fatalf("PreEnqueue(%s) after the group is whole = %v, want success", p.Name, s)
		}
	}
	for _, p := range pods {
		h.place(p)
	}
}

// TestPreEnqueueLetsThrough: pods whose cycle answers something else than
// "wait for the others" are never held: no group, a group of one, a
// malformed size (its cycle says what is wrong), and a pod that completes
// its group before the informer showed it to the plugin (it counts
// itself).
func TestPreEnqueueLetsThrough(t *testing.T) {
	two := groupPods("pair", 2, "2", "1")
	for _, tc := range []struct {
		name  string
		known []*corev1.Pod
		pod   *corev1.Pod
	}{
		{name: "no group", pod: pod("lone", 0, "1").Obj()},
		{name: "a group of one", pod: groupPods("one", 1, "1", "1")[0]},
		{name: "malformed size", pod: groupPods("bad", 1, "three", "1")[0]},
		{name: "the last pod, not yet seen", known: two[:1], pod: two[1]},
		// Its status says what the API server wrote while it had gates:
		// one cycle replaces that with what it waits for.
		{name: "gates lifted, status still SchedulingGated", pod: withPodScheduled(groupPods("trio", 1, "3", "1")[0], corev1.PodReasonSchedulingGated)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nodes(1, "4"), tc.known)
			h.awaitReady()
			if s := h.preEnqueue(tc.pod); !s.IsSuccess() {
				t.Errorf("PreEnqueue(%s) = %v, want success", tc.pod.Name, s)
			}
		})
	}
}

// TestPreEnqueueHoldsAfterOneCycle: a pod whose status a failed cycle
// already set (reason Unschedulable) is held like a new one.
func TestPreEnqueueHoldsAfterOneCycle(t *testing.T) {
	p := withPodScheduled(groupPods("trio", 1, "3", "1")[0], corev1.PodReasonUnschedulable)
	h := newHarness(t, nodes(1, "4"), []*corev1.Pod{p})
	h.awaitReady()
	if s := h.preEnqueue(p); s.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("PreEnqueue = %v, want held", s)
	}
}

// withPodScheduled gives the pod a PodScheduled=False condition with the
// reason.
func withPodScheduled(p *corev1.Pod, reason string) *corev1.Pod {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason}}
	return p
}

// TestPreEnqueueReleasesRejected: a held group that can no longer fit
// (nodes went away) is judged by the plugin's loop while its pods are held;
// they are activated and pass, so their cycle says why.
func TestPreEnqueueReleasesRejected(t *testing.T) {
	pods := groupPods("big", 8, "8", "1")
	h := newHarness(t, nodes(3, "4"), pods[:1])
	h.awaitReady()
	if s := h.preEnqueue(pods[0]); s.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("PreEnqueue = %v, want held (8 CPUs of 12 fit)", s)
	}
	for _, n := range []string{"n2", "n3"} {
		if err := h.cs.CoreV1().Nodes().Delete(h.ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the held pod activated", func() bool { return slices.Contains(h.act.activated(), "ns/big-0") })
	if s := h.preEnqueue(pods[0]); !s.IsSuccess() {
		t.Fatalf("PreEnqueue after the group was rejected = %v, want success", s)
	}
	_, _, s := h.preFilter(pods[0])
	if s.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(s.Message(), "cannot be placed on this cluster") {
		t.Errorf("PreFilter = %v, want the group rejected", s)
	}
}

// TestPreEnqueueSizeChanged: a held pod whose size label changes (its
// update sends it through PreEnqueue again) is let through to its cycle,
// which takes the new size; the pods still held are activated once the
// group takes it.
func TestPreEnqueueSizeChanged(t *testing.T) {
	pods := groupPods("g", 2, "3", "1")
	h := newHarness(t, nodes(1, "4"), pods)
	h.awaitReady()
	for _, p := range pods {
		if s := h.preEnqueue(p); s.Code() != fwk.UnschedulableAndUnresolvable {
			t.Fatalf("PreEnqueue(%s) = %v, want held", p.Name, s)
		}
	}
	var resized []*corev1.Pod
	for _, p := range pods {
		q := p.DeepCopy()
		q.Labels[k8sadapter.GroupSizeKey] = "2"
		if _, err := h.cs.CoreV1().Pods(ns).Update(h.ctx, q, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		resized = append(resized, q)
	}
	if s := h.preEnqueue(resized[0]); !s.IsSuccess() {
		t.Fatalf("PreEnqueue after the size label changed = %v, want success", s)
	}
	h.act.reset()
	// Its cycle may come before the informer shows the other pod's new
	// label (the group is then invalid until it does, and tried again).
	eventually(t, "g-0 placed", func() bool { _, _, s := h.preFilter(resized[0]); return s.IsSuccess() })
	eventually(t, "the other pod activated", func() bool { return slices.Contains(h.act.activated(), "ns/g-1") })
	h.place(resized[1])
}
