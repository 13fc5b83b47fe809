package localcluster

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GPUResource is the extended resource simulated GPUs are offered as.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// NodeSpec describes one simulated node.
type NodeSpec struct {
	Name string
	// CPU and Memory are quantities ("4", "3500m", "16Gi").
	CPU, Memory string
	// GPUs are offered as nvidia.com/gpu.
	GPUs int
	// Pods caps the pods on the node; 0 is 110, the kubelet's default.
	Pods   int
	Labels map[string]string
	Taints []corev1.Taint
}

// NodeObject builds the Ready Node a spec describes, with capacity equal to
// allocatable and the kubernetes.io/hostname label unless Labels set it.
func NodeObject(spec NodeSpec) (*corev1.Node, error) {
	if spec.Name == "" {
		return nil, fmt.Errorf("node: no name")
	}
	cpu, err := resource.ParseQuantity(spec.CPU)
	if err != nil || cpu.Sign() <= 0 {
		return nil, fmt.Errorf("node %s: cpu %q is not a positive quantity", spec.Name, spec.CPU)
	}
	mem, err := resource.ParseQuantity(spec.Memory)
	if err != nil || mem.Sign() <= 0 {
		return nil, fmt.Errorf("node %s: memory %q is not a positive quantity", spec.Name, spec.Memory)
	}
	if spec.GPUs < 0 || spec.Pods < 0 {
		return nil, fmt.Errorf("node %s: negative GPUs or pods", spec.Name)
	}
	pods := spec.Pods
	if pods == 0 {
		pods = 110
	}
	allocatable := corev1.ResourceList{
		corev1.ResourceCPU:    cpu,
		corev1.ResourceMemory: mem,
		corev1.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
	}
	if spec.GPUs > 0 {
		allocatable[GPUResource] = *resource.NewQuantity(int64(spec.GPUs), resource.DecimalSI)
	}
	labels := map[string]string{corev1.LabelHostname: spec.Name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}
	maps.Copy(labels, spec.Labels)
	now := metav1.Now()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: spec.Taints},
		Status: corev1.NodeStatus{
			Capacity:    allocatable.DeepCopy(),
			Allocatable: allocatable.DeepCopy(),
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{{
				Type:               corev1.NodeReady,
				Status:             corev1.ConditionTrue,
				Reason:             "KubeletReady",
				Message:            "simulated by fluence's local cluster",
				LastHeartbeatTime:  now,
				LastTransitionTime: now,
			}},
		},
	}, nil
}

// AddNode creates a simulated node. The node registry keeps the status
// given on create; should it come back without it, the status is written
// with UpdateStatus.
func (c *Cluster) AddNode(ctx context.Context, spec NodeSpec) (*corev1.Node, error) {
	node, err := NodeObject(spec)
	if err != nil {
		return nil, err
	}
	created, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating node %s: %w", spec.Name, err)
	}
	if !statusMatches(created, node.Status.Allocatable) {
		created.Status = node.Status
		created, err = c.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			return nil, fmt.Errorf("writing status of node %s: %w", spec.Name, err)
		}
		if !statusMatches(created, node.Status.Allocatable) {
			return nil, fmt.Errorf("node %s: the API server did not keep its status", spec.Name)
		}
	}
	return created, nil
}

func statusMatches(node *corev1.Node, allocatable corev1.ResourceList) bool {
	for name, want := range allocatable {
		got, ok := node.Status.Allocatable[name]
		if !ok || got.Cmp(want) != 0 {
			return false
		}
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
