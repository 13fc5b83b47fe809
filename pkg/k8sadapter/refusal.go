package k8sadapter

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// nodeResourcesFit is the name of kube-scheduler's resource filter.
const nodeResourcesFit = "NodeResourcesFit"

// CountedRefusal reports whether a node's refusal of a pod was only about
// resources the engine counts itself: kube-scheduler's resource filter
// (plugin) finding too little CPU, memory, GPUs or room for pods (its
// reasons). Then the two disagree only for a moment (the framework still
// counts a pod that ended), and the node need not be avoided; any other
// refusal is about something the engine does not model.
func (o GraphOptions) CountedRefusal(plugin string, reasons []string) bool {
	if plugin != nodeResourcesFit || len(reasons) == 0 {
		return false
	}
	counted := []string{string(corev1.ResourceCPU), string(corev1.ResourceMemory), string(corev1.ResourcePods)}
	for _, r := range o.gpuResources() {
		counted = append(counted, string(r))
	}
	for _, r := range reasons {
		name, ok := strings.CutPrefix(r, "Insufficient ")
		if r == "Too many pods" || (ok && slices.Contains(counted, name)) {
			continue
		}
		return false
	}
	return true
}
