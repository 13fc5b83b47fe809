package replay

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// kueueQueue names the replay's ResourceFlavor, ClusterQueue and
// LocalQueue alike.
const kueueQueue = "replay"

// Kueue's kinds, through the dynamic client: Kueue's Go types would bring
// its Kubernetes libraries into this module.
var (
	kueueFlavors       = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"}
	kueueClusterQueues = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
	kueueLocalQueues   = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "localqueues"}
)

// kueueQuotaResources are the resources the ClusterQueue covers: every
// resource a replayed pod can request (JobFor), since Kueue will not
// admit a workload that requests one its ClusterQueue does not cover.
var kueueQuotaResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, localcluster.GPUResource}

// kueueQueues are the replay's queue objects: a ResourceFlavor, a
// ClusterQueue open to every namespace with nominal quota capacity for
// each resource, and a LocalQueue for it in namespace.
func kueueQueues(capacity corev1.ResourceList, namespace string) []*unstructured.Unstructured {
	var covered []any
	var quotas []any
	for _, name := range kueueQuotaResources {
		q, ok := capacity[name]
		if !ok {
			continue
		}
		covered = append(covered, string(name))
		quotas = append(quotas, map[string]any{"name": string(name), "nominalQuota": q.String()})
	}
	obj := func(kind, ns string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "spec": spec}}
		u.SetName(kueueQueue)
		u.SetNamespace(ns)
		return u
	}
	return []*unstructured.Unstructured{
		obj("ResourceFlavor", "", map[string]any{}),
		obj("ClusterQueue", "", map[string]any{
			"namespaceSelector": map[string]any{},
			"queueingStrategy":  "BestEffortFIFO",
			"resourceGroups": []any{map[string]any{
				"coveredResources": covered,
				"flavors":          []any{map[string]any{"name": kueueQueue, "resources": quotas}},
			}},
		}),
		obj("LocalQueue", namespace, map[string]any{"clusterQueue": kueueQueue}),
	}
}

// allocatable sums the nodes' allocatable of the resources Kueue's quota
// covers; a resource no node has is left out.
func allocatable(nodes []corev1.Node) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, n := range nodes {
		for _, name := range kueueQuotaResources {
			q, ok := n.Status.Allocatable[name]
			if !ok || q.IsZero() {
				continue
			}
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	return total
}

// createKueueQueues creates the queue objects with the cluster's
// allocatable as the quota, and waits until Kueue reports the LocalQueue
// active: a Job queued before would wait for Kueue's cache, and the
// replay would count that wait as the scheduler's.
func createKueueQueues(ctx context.Context, c *localcluster.Cluster, namespace string) error {
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	gvrs := []schema.GroupVersionResource{kueueFlavors, kueueClusterQueues, kueueLocalQueues}
	for i, obj := range kueueQueues(allocatable(nodes.Items), namespace) {
		if _, err := dyn.Resource(gvrs[i]).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Kueue's %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	lq := dyn.Resource(kueueLocalQueues).Namespace(namespace)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := lq.Get(ctx, kueueQueue, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		return slices.ContainsFunc(conds, func(c any) bool {
			m, _ := c.(map[string]any)
			return m["type"] == "Active" && m["status"] == "True"
		}), nil
	})
	if err != nil {
		return fmt.Errorf("Kueue's LocalQueue %s/%s is not active: %w", namespace, kueueQueue, err)
	}
	return nil
}
