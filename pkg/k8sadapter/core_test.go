package k8sadapter

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// CorePod keeps a malformed requirement as the pod's Invalid reason,
// without naming the pod twice (the core names it), and reads the group
// a pod's own labels give.
func TestCorePod(t *testing.T) {
	bad := GraphOptions{}.CorePod(makePod("p").annotate(DurationKey, "soon").obj(), true)
	if want := `annotation fluence.flux-framework.org/duration: "soon" is neither a duration (like 10m) nor a number of seconds`; bad.Invalid != want {
		t.Errorf("Invalid = %q, want %q", bad.Invalid, want)
	}
	badReq := GraphOptions{}.CorePod(makePod("p").annotate(RequiresKey, "arch").obj(), true)
	if want := `annotation fluence.flux-framework.org/requires: clause "arch": no operator (use key=value, key!=value, key>=v, key<=v, key>v or key<v)`; badReq.Invalid != want {
		t.Errorf("Invalid = %q, want %q", badReq.Invalid, want)
	}
	labelled := GraphOptions{}.CorePod(makePod("p").label(PodGroupKey, "g").label(GroupSizeKey, "4").obj(), true)
	if want := gang.NewGroupID("default", "g", 4, gang.SourceLabel); labelled.Labeled != want {
		t.Errorf("Labeled = %+v, want %+v", labelled.Labeled, want)
	}
	native := makePod("p").label(PodGroupKey, "g").label(GroupSizeKey, "4").obj()
	pg := "train"
	native.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &pg}
	if got := (GraphOptions{}).CorePod(native, true).Labeled; got != (gang.GroupID{}) {
		t.Errorf("a pod naming a Kubernetes PodGroup counted in its labels' group: %+v", got)
	}
	if labelled.Filter == nil || labelled.Invalid != "" {
		t.Errorf("a well-formed pod should have a filter and no error: %+v", labelled)
	}
	if foreign := (GraphOptions{}).CorePod(makePod("q").annotate(DurationKey, "soon").obj(), false); foreign.Invalid != "" || foreign.Filter != nil {
		t.Errorf("another scheduler's pod is read for its requests only: %+v", foreign)
	}
	if labelled.Gated {
		t.Error("a pod without scheduling gates is Gated")
	}
	gated := makePod("p").label(PodGroupKey, "g").label(GroupSizeKey, "4").obj()
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}
	if !(GraphOptions{}).CorePod(gated, true).Gated {
		t.Error("a pod with scheduling gates is not Gated")
	}
}

// A pod's preemptionPolicy Never (copied from its PriorityClass) is kept
// for the core, bound or not; unset or PreemptLowerPriority is not Never.
func TestCorePodPreemptNever(t *testing.T) {
	never, lower := corev1.PreemptNever, corev1.PreemptLowerPriority
	for _, tc := range []struct {
		name   string
		policy *corev1.PreemptionPolicy
		node   string
		owned  bool
		want   bool
	}{
		{"unset", nil, "", true, false},
		{"lower", &lower, "", true, false},
		{"never", &never, "", true, true},
		{"never bound", &never, "n1", true, true},
		{"never foreign", &never, "", false, true},
	} {
		pod := makePod("p").obj()
		pod.Spec.PreemptionPolicy = tc.policy
		pod.Spec.NodeName = tc.node
		if got := (GraphOptions{}).CorePod(pod, tc.owned).PreemptNever; got != tc.want {
			t.Errorf("%s: PreemptNever = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A pod a scheduler's preemption is taking (DisruptionTarget True, reason
// PreemptionByScheduler) is Preempted, bound or not; another disruption
// or a False condition is not.
func TestCorePodPreempted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cond  *corev1.PodCondition
		node  string
		owned bool
		want  bool
	}{
		{"none", nil, "n1", true, false},
		{"preempted", &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler, Message: "preempted by pod group ns/h (priority 9)"}, "n1", true, true},
		{"preempted, another scheduler's pod", &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler}, "n1", false, true},
		{"preempted, unbound", &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler}, "", true, true},
		{"terminated by the kubelet", &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonTerminationByKubelet}, "n1", true, false},
		{"condition false", &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse, Reason: corev1.PodReasonPreemptionByScheduler}, "n1", true, false},
	} {
		pod := makePod("p").obj()
		pod.Spec.NodeName = tc.node
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if tc.cond != nil {
			pod.Status.Conditions = append(pod.Status.Conditions, *tc.cond)
		}
		cp := (GraphOptions{}).CorePod(pod, tc.owned)
		if cp.Preempted != tc.want {
			t.Errorf("%s: Preempted = %v, want %v", tc.name, cp.Preempted, tc.want)
		}
		// The condition's message goes with it: a restarted core reads the
		// preemptor from it.
		if want := ""; tc.want && tc.cond != nil {
			want = tc.cond.Message
			if cp.PreemptedNote != want {
				t.Errorf("%s: PreemptedNote = %q, want %q", tc.name, cp.PreemptedNote, want)
			}
		} else if cp.PreemptedNote != "" {
			t.Errorf("%s: PreemptedNote = %q for a pod not preempted", tc.name, cp.PreemptedNote)
		}
	}
}

// Another scheduler's unbound pod carries the node its preemption
// nominated it for; a pod of this scheduler, a bound pod and a pod being
// deleted carry none.
func TestCorePodNominated(t *testing.T) {
	for _, tc := range []struct {
		name     string
		node     string
		owned    bool
		deleting bool
		want     string
	}{
		{"foreign, unbound", "", false, false, "n2"},
		{"foreign, bound", "n1", false, false, ""},
		{"foreign, being deleted", "", false, true, ""},
		{"own", "", true, false, ""},
	} {
		pod := makePod("p").obj()
		pod.Spec.NodeName = tc.node
		pod.Status.NominatedNodeName = "n2"
		if tc.deleting {
			now := metav1.Now()
			pod.DeletionTimestamp = &now
		}
		if got := (GraphOptions{}).CorePod(pod, tc.owned).Nominated; got != tc.want {
			t.Errorf("%s: Nominated = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// HoldPod gives what CorePod gives for every field Core.Hold reads, for
// pods in each state it looks at.
func TestHoldPodAgreesWithCorePod(t *testing.T) {
	labelled := func() *corev1.Pod { return makePod("p").label(PodGroupKey, "g").label(GroupSizeKey, "4").obj() }
	pg := "train"
	for name, p := range map[string]*corev1.Pod{
		"labelled":          labelled(),
		"no group":          makePod("p").obj(),
		"malformed size":    makePod("p").label(PodGroupKey, "g").label(GroupSizeKey, "four").obj(),
		"scheduler-plugins": makePod("p").label(SchedulingGroupKey, "g").label(LegacySizeKey, "2").obj(),
		"gated": func() *corev1.Pod {
			p := labelled()
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "x"}}
			return p
		}(),
		"deleting": func() *corev1.Pod { p := labelled(); now := metav1.Now(); p.DeletionTimestamp = &now; return p }(),
		"ended":    func() *corev1.Pod { p := labelled(); p.Status.Phase = corev1.PodFailed; return p }(),
		"bound":    func() *corev1.Pod { p := labelled(); p.Spec.NodeName = "n1"; return p }(),
		"native podgroup": func() *corev1.Pod {
			p := labelled()
			p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &pg}
			return p
		}(),
	} {
		full, hold := GraphOptions{}.CorePod(p, true), HoldPod(p)
		full.Created, full.Requests, full.Priority, full.PreemptNever, full.Preempted, full.Succeeded, full.Allocation = 0, gang.Resources{}, 0, false, false, false, ""
		full.FailReason, full.Nominated, full.Invalid, full.Duration, full.Filter, full.Apart = "", "", "", 0, nil, false
		// Devices are added by the plugin from the pod's claims; CorePod
		// leaves them empty.
		if full.Devices != nil || hold.Devices != nil {
			t.Errorf("%s: devices set by CorePod or HoldPod", name)
		}
		if !reflect.DeepEqual(full, hold) {
			t.Errorf("%s: HoldPod = %+v, CorePod's = %+v", name, hold, full)
		}
	}
}
