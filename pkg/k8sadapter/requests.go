package k8sadapter

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Requests is what one pod asks of a node.
type Requests struct {
	MilliCPU    int64
	MemoryBytes int64
	GPU         int64 // sum over nvidia.com/gpu and the extra GPU names
}

// PodRequests returns the pod's effective requests, counting only
// nvidia.com/gpu as GPUs. See GraphOptions.PodRequests.
func PodRequests(pod *corev1.Pod) Requests { return GraphOptions{}.PodRequests(pod) }

// PodRequests returns the pod's effective requests as kube-scheduler
// computes them (k8s.io/component-helpers/resource.PodRequests): the larger
// of the app containers plus restartable (sidecar) init containers and the
// largest init container, plus pod overhead; pod-level resources when set.
// GPU is the sum of nvidia.com/gpu and o.ExtraGPUResources.
func (o GraphOptions) PodRequests(pod *corev1.Pod) Requests {
	list := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	return Requests{
		MilliCPU:    list.Cpu().MilliValue(),
		MemoryBytes: list.Memory().Value(),
		GPU:         o.gpuCount(list),
	}
}
