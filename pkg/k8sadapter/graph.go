package k8sadapter

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// DefaultGPUResource is the extended resource always counted as GPUs.
const DefaultGPUResource corev1.ResourceName = "nvidia.com/gpu"

// GraphOptions tune how Nodes and pods are translated. The zero value is
// ready to use.
type GraphOptions struct {
	// RackLabel is the node label naming a node's rack. Empty (the
	// default) omits the rack level; when set, nodes without the label go
	// under the rack "default" of their zone.
	RackLabel string
	// TopologyLevels are node label keys, outermost first, each a level
	// of the graph in place of the zone and rack (gang.BuildGraphLevels).
	TopologyLevels []string
	// ExtraGPUResources are extended resource names counted as GPUs in
	// addition to nvidia.com/gpu (say "amd.com/gpu"), both in node
	// allocatable and in pod requests. Default: none.
	ExtraGPUResources []string
}

// gpuResources returns nvidia.com/gpu plus the extra names, without
// duplicates.
func (o GraphOptions) gpuResources() []corev1.ResourceName {
	out := []corev1.ResourceName{DefaultGPUResource}
	for _, n := range o.ExtraGPUResources {
		if r := corev1.ResourceName(n); n != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// IsGPU reports whether the resource is counted as GPUs: nvidia.com/gpu
// or one of the extra names.
func (o GraphOptions) IsGPU(name corev1.ResourceName) bool {
	return slices.Contains(o.gpuResources(), name)
}

func (o GraphOptions) gpuCount(list corev1.ResourceList) int64 {
	var n int64
	for _, r := range o.gpuResources() {
		if q, ok := list[r]; ok {
			n += q.Value()
		}
	}
	return n
}

// NodeDown reports whether nothing may be placed on the node: it is
// cordoned (spec.unschedulable) or its Ready condition is not True.
func NodeDown(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return true
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status != corev1.ConditionTrue
		}
	}
	return true
}
