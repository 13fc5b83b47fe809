package k8sadapter

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"
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

// A pod asking for a host port repels its like: a node gives the port to
// one pod. Which containers count is kube-scheduler's NodePorts filter's
// rule (schedutil.GetHostPorts), checked against it here.
func TestRepelsItselfHostPort(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	ports := func(host int32) []corev1.ContainerPort {
		return []corev1.ContainerPort{{ContainerPort: 2222, HostPort: host, Protocol: corev1.ProtocolTCP}}
	}
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want bool
	}{
		{"no ports", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}, false},
		{"a container port only", corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: ports(0)}}}, false},
		{"a host port", corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: ports(2222)}}}, true},
		{"a host port on the second container", corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b", Ports: ports(2222)}}}, true},
		// As the API server stores it: hostNetwork makes container ports host ports.
		{"hostNetwork", corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "c", Ports: ports(2222)}}}, true},
		{"an init container that ends first", corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "i", Ports: ports(2222)}}, Containers: []corev1.Container{{Name: "c"}}}, false},
		{"a sidecar (restartable init container)", corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "i", RestartPolicy: &always, Ports: ports(2222)}}, Containers: []corev1.Container{{Name: "c"}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "hpc", Name: "w-0"}, Spec: tc.spec}
			if got := RepelsItself(p); got != tc.want {
				t.Errorf("RepelsItself = %v, want %v", got, tc.want)
			}
			if filter := len(schedutil.GetHostPorts(p)) > 0; filter != tc.want {
				t.Errorf("kube-scheduler's NodePorts sees host ports: %v; the case says %v", filter, tc.want)
			}
			if got := (GraphOptions{}).CorePod(p, true).Apart; got != tc.want {
				t.Errorf("CorePod's Apart = %v, want %v", got, tc.want)
			}
		})
	}
}
