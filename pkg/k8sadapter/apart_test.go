package k8sadapter

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRepelsItself(t *testing.T) {
	own := map[string]string{"job": "lammps", "rank": "worker"}
	term := func(edit func(*corev1.PodAffinityTerm)) corev1.PodAffinityTerm {
		tm := corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"job": "lammps"}},
			TopologyKey:   corev1.LabelHostname,
		}
		if edit != nil {
			edit(&tm)
		}
		return tm
	}
	pod := func(terms ...corev1.PodAffinityTerm) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "hpc", Name: "w-0", Labels: own}}
		if terms != nil {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"no affinity", pod(), false},
		{"its own labels on the hostname", pod(term(nil)), true},
		{"an expression selecting itself", pod(term(func(tm *corev1.PodAffinityTerm) {
			tm.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "rank", Operator: metav1.LabelSelectorOpIn, Values: []string{"worker"}}}}
		})), true},
		{"an empty selector selects every pod, itself too", pod(term(func(tm *corev1.PodAffinityTerm) { tm.LabelSelector = &metav1.LabelSelector{} })), true},
		{"no selector selects nothing", pod(term(func(tm *corev1.PodAffinityTerm) { tm.LabelSelector = nil })), false},
		{"other pods' labels", pod(term(func(tm *corev1.PodAffinityTerm) { tm.LabelSelector.MatchLabels = map[string]string{"app": "db"} })), false},
		{"a zone, not a node", pod(term(func(tm *corev1.PodAffinityTerm) { tm.TopologyKey = corev1.LabelTopologyZone })), false},
		{"its own namespace listed", pod(term(func(tm *corev1.PodAffinityTerm) { tm.Namespaces = []string{"other", "hpc"} })), true},
		{"other namespaces only", pod(term(func(tm *corev1.PodAffinityTerm) { tm.Namespaces = []string{"other"} })), false},
		{"a namespace selector (not judged here)", pod(term(func(tm *corev1.PodAffinityTerm) { tm.NamespaceSelector = &metav1.LabelSelector{} })), false},
		{"mismatchLabelKeys (not judged here)", pod(term(func(tm *corev1.PodAffinityTerm) { tm.MismatchLabelKeys = []string{"rank"} })), false},
		{"matchLabelKeys adds its own values", pod(term(func(tm *corev1.PodAffinityTerm) { tm.MatchLabelKeys = []string{"rank"} })), true},
		{"a malformed selector", pod(term(func(tm *corev1.PodAffinityTerm) {
			tm.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "rank", Operator: "Bogus"}}}
		})), false},
		{"the second term counts", pod(term(func(tm *corev1.PodAffinityTerm) { tm.TopologyKey = corev1.LabelTopologyZone }), term(nil)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RepelsItself(tc.pod); got != tc.want {
				t.Errorf("RepelsItself = %v, want %v", got, tc.want)
			}
		})
	}
	// Preferred anti-affinity asks, it does not forbid.
	p := pod()
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: term(nil)}},
	}}
	if RepelsItself(p) {
		t.Error("a preferred anti-affinity counts as required")
	}
	// The core sees it.
	p = pod(term(nil))
	if !(GraphOptions{}).CorePod(p, true).Apart {
		t.Error("CorePod does not mark a pod that repels itself Apart")
	}
}
