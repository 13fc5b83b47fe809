package groups

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fluence-sched/fluence/pkg/gang"
)

func testVolcanoPodGroup(name string, spec map[string]any) *unstructured.Unstructured {
	return unstructuredObj("scheduling.volcano.sh/v1beta1", "PodGroup", name, spec)
}

// A pod annotated with a Volcano PodGroup's name belongs to it, its size
// being spec.minMember; the rest of the spec is named as not acted on,
// and a malformed or missing PodGroup is an error naming it.
func TestResolveVolcanoPodGroup(t *testing.T) {
	const key, alt = "scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name"
	r, _ := fixture{crs: []runtime.Object{
		testVolcanoPodGroup("vg", map[string]any{"minMember": int64(3), "queue": "default"}),
		testVolcanoPodGroup("tasks", map[string]any{"minMember": int64(4), "queue": "gpu", "minTaskMember": map[string]any{"worker": int64(4)}}),
		testVolcanoPodGroup("zero", map[string]any{"minMember": int64(0)}),
		testVolcanoPodGroup("nosize", map[string]any{"queue": "default"}),
		testPodGroup("vg", 5), // a scheduler-plugins PodGroup of the same name: another group
	}}.resolver(t)
	for _, tc := range []struct {
		name        string
		pod         podOpt
		want        gang.GroupID
		unsupported string
		err         string
		retryable   bool
	}{
		{name: "annotation", pod: podAnnotations(key, "vg"), want: want("vg", 3, gang.SourceVolcanoPodGroup)},
		{name: "Volcano's own annotation", pod: podAnnotations(alt, "vg"), want: want("vg", 3, gang.SourceVolcanoPodGroup)},
		{name: "fields not acted on", pod: podAnnotations(key, "tasks"), want: want("tasks", 4, gang.SourceVolcanoPodGroup),
			unsupported: "Volcano's spec.minTaskMember, spec.queue"},
		{name: "fluence's labels first", pod: podLabels("fluence.flux-framework.org/pod-group", "mine", "fluence.flux-framework.org/group-size", "2"),
			want: want("mine", 2, gang.SourceLabel)},
		{name: "missing", pod: podAnnotations(key, "nope"), err: "Volcano PodGroup ns1/nope (annotation scheduling.k8s.io/group-name) not found", retryable: true},
		{name: "minMember 0", pod: podAnnotations(key, "zero"), err: "spec.minMember 0 is not a positive integer"},
		{name: "no minMember", pod: podAnnotations(key, "nosize"), err: "has no spec.minMember"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("p", tc.pod)
			if tc.name == "fluence's labels first" {
				podAnnotations(key, "vg")(pod)
			}
			got, err := r.Resolve(context.Background(), pod)
			if tc.err != "" {
				var re *ResolveError
				if !errors.As(err, &re) || !strings.Contains(re.Reason, tc.err) || re.Retryable != tc.retryable {
					t.Fatalf("got %+v, %v; want an error containing %q, retryable %v", got, err, tc.err, tc.retryable)
				}
				return
			}
			if err != nil || got.Key != tc.want.Key || got.Size != tc.want.Size || got.Source != tc.want.Source || got.Unsupported != tc.unsupported {
				t.Fatalf("got %+v, %v; want %+v, unsupported %q", got, err, tc.want, tc.unsupported)
			}
		})
	}
}

// Where Volcano's PodGroups are not served, a pod naming one is told so.
func TestResolveVolcanoNotServed(t *testing.T) {
	custom, _ := customResources(t, fakeDiscovery(PodGroupResource))
	r := NewResolver(Sources{Custom: custom})
	_, err := r.Resolve(context.Background(), testPod("p", podAnnotations("scheduling.k8s.io/group-name", "vg")))
	if err == nil || !strings.Contains(err.Error(), "does not serve podgroups.scheduling.volcano.sh/v1beta1") {
		t.Fatalf("err %v; want one saying Volcano's PodGroups are not served", err)
	}
}
