package groups

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// A scheduler-plugins PodGroup's spec.minResources becomes the group's
// minimum (cpu in millicores, memory in bytes, pods, GPUs summed over the
// names counted as GPUs), resources fluence does not count are named as
// not checked, and spec.scheduleTimeoutSeconds becomes the group's Permit
// wait, 0 leaving the scheduler's (the MPI Operator writes 0 when the
// MPIJob asks none). A malformed value is an error naming the PodGroup
// and the field, not retried: it does not pass by itself.
func TestResolvePodGroupSpec(t *testing.T) {
	const label = "scheduling.x-k8s.io/pod-group"
	spec := func(fields map[string]any) map[string]any {
		out := map[string]any{"minMember": int64(2)}
		for k, v := range fields {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name string
		spec map[string]any
		// gpus are the names counted as GPUs besides nvidia.com/gpu.
		gpus        []string
		min         gang.Resources
		timeout     int64
		unsupported string
		err         string
	}{
		{name: "neither field", spec: spec(nil)},
		{name: "null fields", spec: spec(map[string]any{"minResources": nil, "scheduleTimeoutSeconds": nil})},
		{
			name: "minimum resources",
			spec: spec(map[string]any{"minResources": map[string]any{
				"cpu": "1500m", "memory": "4Gi", "pods": "3", "nvidia.com/gpu": "2",
			}}),
			min: gang.Resources{MilliCPU: 1500, MemoryBytes: 4 << 30, Pods: 3, GPU: 2},
		},
		{
			// The API server keeps an integer as a JSON number.
			name: "numbers",
			spec: spec(map[string]any{"minResources": map[string]any{"cpu": int64(8), "memory": float64(1 << 20), "pods": 0.5}}),
			min:  gang.Resources{MilliCPU: 8000, MemoryBytes: 1 << 20, Pods: 1},
		},
		{
			name: "GPU names sum",
			spec: spec(map[string]any{"minResources": map[string]any{"nvidia.com/gpu": "2", "amd.com/gpu": "3"}}),
			gpus: []string{"amd.com/gpu"},
			min:  gang.Resources{GPU: 5},
		},
		{
			name:        "a GPU name not counted as GPUs",
			spec:        spec(map[string]any{"minResources": map[string]any{"nvidia.com/gpu": "2", "amd.com/gpu": "3"}}),
			min:         gang.Resources{GPU: 2},
			unsupported: "amd.com/gpu in spec.minResources (not checked: fluence counts cpu, memory, pods and GPUs)",
		},
		{
			name: "resources fluence does not count",
			spec: spec(map[string]any{"minResources": map[string]any{
				"cpu": "2", "ephemeral-storage": "10Gi", "hugepages-2Mi": "1Gi", "example.com/fpga": "1", "example.com/none": "0",
			}}),
			min:         gang.Resources{MilliCPU: 2000},
			unsupported: "ephemeral-storage, example.com/fpga and hugepages-2Mi in spec.minResources (not checked: fluence counts cpu, memory, pods and GPUs)",
		},
		{
			name: "more than int64",
			spec: spec(map[string]any{"minResources": map[string]any{"memory": "100Ei", "cpu": "1e30"}}),
			min:  gang.Resources{MilliCPU: scaledLimit, MemoryBytes: scaledLimit},
		},
		{name: "timeout", spec: spec(map[string]any{"scheduleTimeoutSeconds": int64(10)}), timeout: 10},
		{name: "timeout as a float", spec: spec(map[string]any{"scheduleTimeoutSeconds": float64(30)}), timeout: 30},
		{
			name: "both",
			spec: spec(map[string]any{"scheduleTimeoutSeconds": int64(5), "minResources": map[string]any{"cpu": "4"}}),
			min:  gang.Resources{MilliCPU: 4000}, timeout: 5,
		},
		{
			name: "malformed quantity",
			spec: spec(map[string]any{"minResources": map[string]any{"cpu": "four"}}),
			err:  `PodGroup ns1/pg: spec.minResources.cpu: "four" is not a quantity such as 500m, 2 or 4Gi`,
		},
		{
			name: "a quantity of another type",
			spec: spec(map[string]any{"minResources": map[string]any{"memory": true}}),
			err:  "PodGroup ns1/pg: spec.minResources.memory: true is not a quantity",
		},
		{
			name: "negative quantity",
			spec: spec(map[string]any{"minResources": map[string]any{"memory": "-1Gi"}}),
			err:  "PodGroup ns1/pg: spec.minResources.memory: -1Gi is negative",
		},
		{
			name: "not a map",
			spec: spec(map[string]any{"minResources": "4 cpus"}),
			err:  "PodGroup ns1/pg: spec.minResources is not a map of resource names to quantities",
		},
		{
			// What the MPI Operator writes when the MPIJob asks no timeout.
			name:    "zero timeout: the scheduler's",
			spec:    spec(map[string]any{"scheduleTimeoutSeconds": int64(0), "minResources": map[string]any{"cpu": "2"}}),
			min:     gang.Resources{MilliCPU: 2000},
			timeout: 0,
		},
		{
			name: "negative timeout",
			spec: spec(map[string]any{"scheduleTimeoutSeconds": int64(-5)}),
			err:  "PodGroup ns1/pg: spec.scheduleTimeoutSeconds -5 is negative",
		},
		{
			name: "timeout not an integer",
			spec: spec(map[string]any{"scheduleTimeoutSeconds": "10s"}),
			err:  "PodGroup ns1/pg: spec.scheduleTimeoutSeconds 10s is not an integer",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := unstructuredObj("scheduling.x-k8s.io/v1alpha1", "PodGroup", "pg", tc.spec)
			custom, _ := customResources(t, fakeDiscovery(watched...), []runtime.Object{pg}...)
			r := NewResolver(Sources{Custom: custom, ExtraGPUResources: tc.gpus})
			got, err := r.Resolve(context.Background(), testPod("p", podLabels(label, "pg")))
			if tc.err != "" {
				var re *ResolveError
				if !errors.As(err, &re) || re.Retryable || !strings.Contains(re.Reason, tc.err) {
					t.Fatalf("got %+v, %v; want an error that is not retried, containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Key != "ns1/pg" || got.Size != 2 || got.Source != gang.SourcePodGroup {
				t.Errorf("group %s size %d source %s, want ns1/pg size 2 from the PodGroup", got.Key, got.Size, got.Source)
			}
			if got.MinResources != tc.min || got.PermitTimeout != tc.timeout || got.Unsupported != tc.unsupported {
				t.Errorf("minimum %+v, timeout %d, unsupported %q; want %+v, %d, %q",
					got.MinResources, got.PermitTimeout, got.Unsupported, tc.min, tc.timeout, tc.unsupported)
			}
		})
	}
}

// A group size on the pod's labels (fluence.group-size beside
// scheduling.x-k8s.io/pod-group) is used as is: the PodGroup is not read,
// so neither its minimum nor its timeout applies, nor a malformed one.
func TestResolvePodGroupSpecWithSizeLabel(t *testing.T) {
	pg := unstructuredObj("scheduling.x-k8s.io/v1alpha1", "PodGroup", "pg", map[string]any{
		"minMember": int64(2), "scheduleTimeoutSeconds": int64(-1), "minResources": map[string]any{"cpu": "100"},
	})
	custom, _ := customResources(t, fakeDiscovery(watched...), pg)
	r := NewResolver(Sources{Custom: custom})
	got, err := r.Resolve(context.Background(), testPod("p", podLabels("scheduling.x-k8s.io/pod-group", "pg", "fluence.group-size", "3")))
	if err != nil || got.Source != gang.SourceLabel || got.Size != 3 || got.MinResources != (gang.Resources{}) || got.PermitTimeout != 0 {
		t.Fatalf("got %+v, %v; want a labelled group of 3 asking nothing of its PodGroup", got, err)
	}
}
