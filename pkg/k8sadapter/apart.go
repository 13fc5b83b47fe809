package k8sadapter

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// RepelsItself reports whether a pod may not share a node with another pod
// like it (its group's pods come from one template): it asks for a host
// port, which a node gives one pod (kube-scheduler's NodePorts filter), or
// one of its required pod anti-affinity terms, on the hostname topology,
// selects pods of its own namespace with its own labels. The engine can
// then place its group's pods on distinct nodes at once (gang.Pod.Apart)
// instead of learning it from kube-scheduler's filters, one refusal at a
// time. A term it cannot judge without more than the pod (a namespace
// selector, mismatchLabelKeys) does not count: the filter still enforces
// it.
func RepelsItself(p *corev1.Pod) bool {
	return asksHostPort(p) || repelledByItsLabels(p)
}

// asksHostPort reports whether a container that runs as long as the pod
// (a container, or a restartable init container) asks for a host port; a
// hostNetwork pod's container ports are host ports (the API server sets
// hostPort to containerPort).
func asksHostPort(p *corev1.Pod) bool {
	hostPort := func(cp corev1.ContainerPort) bool { return cp.HostPort > 0 }
	for _, c := range p.Spec.InitContainers {
		always := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if always && slices.ContainsFunc(c.Ports, hostPort) {
			return true
		}
	}
	for _, c := range p.Spec.Containers {
		if slices.ContainsFunc(c.Ports, hostPort) {
			return true
		}
	}
	return false
}

// repelledByItsLabels reports whether a required anti-affinity term on the
// hostname selects the pod's own labels in its own namespace.
func repelledByItsLabels(p *corev1.Pod) bool {
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
		return false
	}
	for _, term := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if term.TopologyKey != corev1.LabelHostname || term.LabelSelector == nil || term.NamespaceSelector != nil || len(term.MismatchLabelKeys) > 0 {
			continue
		}
		if len(term.Namespaces) > 0 && !slices.Contains(term.Namespaces, p.Namespace) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil {
			continue
		}
		// matchLabelKeys adds the pod's own values: it still selects itself.
		if sel.Matches(labels.Set(p.Labels)) {
			return true
		}
	}
	return false
}
