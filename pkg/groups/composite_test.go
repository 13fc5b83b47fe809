package groups

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// testComposite builds a scheduling.k8s.io/v1alpha3 CompositePodGroup: a
// gang of minGroupCount children, or basic when it is 0, within one domain
// of topology when not "".
func testComposite(t *testing.T, name string, minGroupCount int32, topology string) *unstructured.Unstructured {
	t.Helper()
	c := &schedulingv1alpha3.CompositePodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1alpha3", Kind: "CompositePodGroup"},
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, UID: types.UID("uid-composite-" + name)},
	}
	if minGroupCount > 0 {
		c.Spec.SchedulingPolicy.Gang = &schedulingv1alpha3.CompositeGangSchedulingPolicy{MinGroupCount: minGroupCount}
	} else {
		c.Spec.SchedulingPolicy.Basic = &schedulingv1alpha3.CompositeBasicSchedulingPolicy{}
	}
	if topology != "" {
		c.Spec.SchedulingConstraints = &schedulingv1alpha3.CompositePodGroupSchedulingConstraints{Topology: []schedulingv1alpha3.TopologyConstraint{{Key: topology}}}
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// testChild is a v1beta1 PodGroup of minCount (basic when 0) naming its
// parent composite, within one domain of topology when not "".
func testChild(t *testing.T, name, parent string, minCount int32, topology string) *unstructured.Unstructured {
	t.Helper()
	pg := testNativePodGroup(t, name, minCount)
	if err := unstructured.SetNestedField(pg.Object, parent, "spec", "parentCompositePodGroupName"); err != nil {
		t.Fatal(err)
	}
	if topology != "" {
		if err := unstructured.SetNestedField(pg.Object, []any{map[string]any{"key": topology}}, "spec", "schedulingConstraints", "topology"); err != nil {
			t.Fatal(err)
		}
	}
	return pg
}

func compositeID(name string, size int32, roles, topology, unsupported string) gang.GroupID {
	id := want(name, size, gang.SourceCompositePodGroup)
	id.Roles, id.TopologyKey, id.Unsupported = roles, topology, unsupported
	return id
}

// A pod whose PodGroup has a parent CompositePodGroup joins one gang
// spanning the composite's children, each child a role counting its
// minCount; what cannot be read or placed so is an error naming the
// object, waiting where it may pass by itself.
func TestResolveCompositePodGroup(t *testing.T) {
	r, _ := fixture{crs: []runtime.Object{
		// A launcher and eight workers; the workers ask for one rack.
		testComposite(t, "mpi", 2, ""),
		testChild(t, "mpi-launcher", "mpi", 1, ""),
		testChild(t, "mpi-workers", "mpi", 8, "example.com/rack"),
		// Prefill and decode within one zone, the composite's.
		testComposite(t, "serve", 2, "example.com/zone"),
		testChild(t, "serve-prefill", "serve", 2, ""),
		testChild(t, "serve-decode", "serve", 6, "example.com/zone"),
		// A gang of 3 children, 2 of which exist.
		testComposite(t, "short", 3, ""),
		testChild(t, "short-a", "short", 1, ""),
		testChild(t, "short-b", "short", 1, ""),
		// A gang of 1 of 2 children: fluence places both.
		testComposite(t, "any", 1, ""),
		testChild(t, "any-a", "any", 2, ""),
		testChild(t, "any-b", "any", 2, ""),
		// A basic composite: its children are groups of their own.
		testComposite(t, "loose", 0, ""),
		testChild(t, "loose-a", "loose", 3, ""),
		// A basic child of a gang composite.
		testComposite(t, "mixed", 2, ""),
		testChild(t, "mixed-a", "mixed", 0, ""),
		testChild(t, "mixed-b", "mixed", 2, ""),
		// Children asking for different domains.
		testComposite(t, "split", 2, ""),
		testChild(t, "split-a", "split", 2, "example.com/rack"),
		testChild(t, "split-b", "split", 2, "example.com/zone"),
		// A child whose parent does not exist.
		testChild(t, "orphan", "gone", 2, ""),
	}}.resolver(t)
	tests := []struct {
		group     string
		want      gang.GroupID
		errHas    []string
		retryable bool
	}{
		{group: "mpi-workers", want: compositeID("mpi", 9, "mpi-launcher=1,mpi-workers=8", "example.com/rack", "")},
		{group: "mpi-launcher", want: compositeID("mpi", 9, "mpi-launcher=1,mpi-workers=8", "example.com/rack", "")},
		{group: "serve-prefill", want: compositeID("serve", 8, "serve-decode=6,serve-prefill=2", "example.com/zone", "")},
		{group: "short-a", retryable: true, errHas: []string{"CompositePodGroup ns1/short gangs 3 child PodGroups", "2 exist (short-a, short-b)"}},
		{group: "any-a", want: compositeID("any", 4, "any-a=2,any-b=2", "", "a gang of 1 of its 2 child PodGroups (minGroupCount): fluence places all 2 together")},
		{group: "loose-a", want: want("loose-a", 3, gang.SourceNativePodGroup)},
		{group: "mixed-b", errHas: []string{"PodGroup ns1/mixed-a is basic, a child of the gang CompositePodGroup ns1/mixed"}},
		{group: "split-a", errHas: []string{"CompositePodGroup ns1/split: its children ask for different topology domains (split-a: example.com/rack; split-b: example.com/zone)"}},
		{group: "orphan", retryable: true, errHas: []string{"PodGroup ns1/orphan names its parent", "CompositePodGroup ns1/gone not found"}},
	}
	for _, tc := range tests {
		t.Run(tc.group, func(t *testing.T) {
			pod := testPod("p-"+tc.group, podInGroup(tc.group))
			got, err := r.Resolve(context.Background(), pod)
			if tc.errHas == nil {
				if err != nil || got != tc.want {
					t.Fatalf("Resolve = %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			var re *ResolveError
			if !errors.As(err, &re) || re.Retryable != tc.retryable {
				t.Fatalf("Resolve = %+v, %v; want a *ResolveError, retryable %v", got, err, tc.retryable)
			}
			for _, s := range tc.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err.Error(), s)
				}
			}
		})
	}
}

// Where the API server does not serve CompositePodGroups, a child is
// placed on its own, and its parent named as unsupported.
func TestResolveCompositeNotServed(t *testing.T) {
	served := slices.DeleteFunc(slices.Clone(watched), func(g schema.GroupVersionResource) bool { return g == CompositePodGroupV1alpha3 })
	c, _ := customResources(t, fakeDiscovery(served...), testChild(t, "mpi-workers", "mpi", 8, ""))
	r := NewResolver(Sources{Custom: c})
	got, err := r.Resolve(context.Background(), testPod("w", podInGroup("mpi-workers")))
	if err != nil || got.Key != testNS+"/native-podgroup:mpi-workers" || got.Size != 8 || got.Roles != "" ||
		!strings.Contains(got.Unsupported, "a parent CompositePodGroup mpi (spec.parentCompositePodGroupName), which the API server does not serve as scheduling.k8s.io/v1alpha3") {
		t.Fatalf("Resolve = %+v, %v; want the child alone, its parent named unsupported", got, err)
	}
}

// A CompositePodGroup's common fields are read as a PodGroup's are
// (spec_shared.go): preemption policy, parent, priority, one topology key.
func TestCompositePolicySharedSpec(t *testing.T) {
	set := func(u *unstructured.Unstructured, v any, path ...string) *unstructured.Unstructured {
		t.Helper()
		if err := unstructured.SetNestedField(u.Object, v, path...); err != nil {
			t.Fatal(err)
		}
		return u
	}
	full := testComposite(t, "full", 2, "example.com/rack")
	set(full, "Never", "spec", "preemptionPolicy")
	set(full, "outer", "spec", "parentCompositePodGroupName")
	set(full, int64(700), "spec", "priority")
	two := set(testComposite(t, "two", 2, ""), []any{map[string]any{"key": "a"}, map[string]any{"key": "b"}}, "spec", "schedulingConstraints", "topology")

	got, err := compositePolicyV1alpha3(full)
	if err != nil || got.TopologyKey != "example.com/rack" || got.PreemptionPolicy != "Never" || got.Parent != "outer" ||
		got.Priority == nil || *got.Priority != 700 || got.MinGroupCount != 2 || got.Basic {
		t.Errorf("full: got %+v, %v; want rack, Never, parent outer, priority 700, gang of 2", got, err)
	}
	if _, err := compositePolicyV1alpha3(two); err == nil || !strings.Contains(err.Error(), "topology has 2 entries") {
		t.Errorf("two topology entries: got %v; want an error naming the count", err)
	}
	got, err = compositePolicyV1alpha3(testComposite(t, "basic", 0, ""))
	if err != nil || !got.Basic || got.TopologyKey != "" || got.Parent != "" || got.Priority != nil {
		t.Errorf("basic: got %+v, %v; want basic with nothing else set", got, err)
	}
}
