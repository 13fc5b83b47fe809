package replay

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// The ClusterQueue's quota is the nodes' allocatable summed, for exactly
// the resources some node offers: a GPU quota on a cluster without GPUs
// would be harmless, a missing one would leave GPU Jobs inadmissible.
func TestKueueQueues(t *testing.T) {
	node := func(cpu, mem, gpu string) corev1.Node {
		n := corev1.Node{Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
			corev1.ResourcePods: resource.MustParse("110"),
		}}}
		if gpu != "" {
			n.Status.Allocatable[localcluster.GPUResource] = resource.MustParse(gpu)
		}
		return n
	}
	for _, tc := range []struct {
		name        string
		nodes       []corev1.Node
		wantCovered []any
		wantQuota   []any
	}{
		{
			name:        "run8: 8 nodes of 3 CPUs",
			nodes:       []corev1.Node{node("3", "8Gi", ""), node("3", "8Gi", ""), node("3", "8Gi", ""), node("3", "8Gi", ""), node("3", "8Gi", ""), node("3", "8Gi", ""), node("3", "8Gi", ""), node("3", "8Gi", "")},
			wantCovered: []any{"cpu", "memory"},
			wantQuota:   []any{map[string]any{"name": "cpu", "nominalQuota": "24"}, map[string]any{"name": "memory", "nominalQuota": "64Gi"}},
		},
		{
			name:        "millicores and GPUs",
			nodes:       []corev1.Node{node("2500m", "1Gi", "4"), node("3", "1Gi", "")},
			wantCovered: []any{"cpu", "memory", string(localcluster.GPUResource)},
			wantQuota: []any{map[string]any{"name": "cpu", "nominalQuota": "5500m"}, map[string]any{"name": "memory", "nominalQuota": "2Gi"},
				map[string]any{"name": string(localcluster.GPUResource), "nominalQuota": "4"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := kueueQueues(allocatable(tc.nodes), "demo")
			kinds := map[string]*unstructured.Unstructured{}
			for _, o := range objs {
				kinds[o.GetKind()] = o
				if o.GetName() != kueueQueue {
					t.Errorf("%s named %q, want %q", o.GetKind(), o.GetName(), kueueQueue)
				}
			}
			if len(kinds) != 3 || kinds["ResourceFlavor"] == nil || kinds["ClusterQueue"] == nil || kinds["LocalQueue"] == nil {
				t.Fatalf("objects %v, want a ResourceFlavor, a ClusterQueue and a LocalQueue", kinds)
			}
			if lq := kinds["LocalQueue"]; lq.GetNamespace() != "demo" || lq.Object["spec"].(map[string]any)["clusterQueue"] != kueueQueue {
				t.Errorf("LocalQueue %v, want one in demo for ClusterQueue %s", lq.Object, kueueQueue)
			}
			groups, _, _ := unstructured.NestedSlice(kinds["ClusterQueue"].Object, "spec", "resourceGroups")
			if len(groups) != 1 {
				t.Fatalf("resource groups %v, want one", groups)
			}
			g := groups[0].(map[string]any)
			if !reflect.DeepEqual(g["coveredResources"], tc.wantCovered) {
				t.Errorf("covered %v, want %v", g["coveredResources"], tc.wantCovered)
			}
			flavors := g["flavors"].([]any)
			if len(flavors) != 1 || !reflect.DeepEqual(flavors[0].(map[string]any)["resources"], tc.wantQuota) {
				t.Errorf("flavors %v, want one with quota %v", flavors, tc.wantQuota)
			}
		})
	}
}
