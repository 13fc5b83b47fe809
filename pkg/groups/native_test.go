package groups

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// testNativePodGroup builds a scheduling.k8s.io/v1beta1 PodGroup: a gang
// of minCount, or basic when minCount is 0.
func testNativePodGroup(t *testing.T, name string, minCount int32) *unstructured.Unstructured {
	t.Helper()
	pg := &schedulingv1beta1.PodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1beta1", Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, UID: types.UID("uid-native-" + name), Generation: 1},
	}
	if minCount > 0 {
		pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}
	} else {
		pg.Spec.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pg)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func podInGroup(group string) podOpt {
	return func(p *corev1.Pod) { p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &group} }
}

func TestResolveNativePodGroup(t *testing.T) {
	noPolicy := testNativePodGroup(t, "nopolicy", 0)
	unstructured.RemoveNestedField(noPolicy.Object, "spec", "schedulingPolicy")
	// A gang of 0, which the API server refuses; made by hand.
	zero := testNativePodGroup(t, "zero", 1)
	if err := unstructured.SetNestedField(zero.Object, int64(0), "spec", "schedulingPolicy", "gang", "minCount"); err != nil {
		t.Fatal(err)
	}
	r, _ := fixture{crs: []runtime.Object{
		testNativePodGroup(t, "pg", 6), testNativePodGroup(t, "solo", 0), zero,
		testNativePodGroup(t, "huge", 1<<30), noPolicy, testPodGroup("pg", 2),
	}}.resolver(t)
	ctx := context.Background()

	got, err := r.Resolve(ctx, testPod("a", podInGroup("pg")))
	if err != nil || got != want("pg", 6, gang.SourceNativePodGroup) || got.Key != testNS+"/native-podgroup:pg" {
		t.Errorf("gang: got %+v, %v; want size 6 under key ns1/native-podgroup:pg", got, err)
	}
	// The scheduler-plugins PodGroup of the same name is another group.
	other, err := r.Resolve(ctx, testPod("b", podLabels("scheduling.x-k8s.io/pod-group", "pg")))
	if err != nil || other.Key == got.Key || other.Source != gang.SourcePodGroup || other.Size != 2 {
		t.Errorf("scheduler-plugins PodGroup pg: got %+v, %v; want its own group of 2", other, err)
	}
	// spec.schedulingGroup wins over group labels.
	got, err = r.Resolve(ctx, testPod("c", podInGroup("pg"), podLabels("fluence.flux-framework.org/pod-group", "x", "fluence.flux-framework.org/group-size", "3")))
	if err != nil || got.Source != gang.SourceNativePodGroup {
		t.Errorf("labels and schedulingGroup: got %+v, %v; want the native PodGroup", got, err)
	}
	// Basic: every pod on its own.
	got, err = r.Resolve(ctx, testPod("d", podInGroup("solo")))
	if err != nil || got != want("d", 1, gang.SourcePod) {
		t.Errorf("basic: got %+v, %v; want the lone pod d", got, err)
	}

	for _, c := range []struct{ group, has string }{
		{"nopolicy", "neither basic nor gang"},
		{"huge", "exceeds the maximum group size"},
		{"zero", "minCount 0 is not a positive integer"},
	} {
		_, err := r.Resolve(ctx, testPod("e", podInGroup(c.group)))
		var re *ResolveError
		if !errors.As(err, &re) || re.Retryable || !strings.Contains(err.Error(), c.has) {
			t.Errorf("PodGroup %s: got %v; want a final error containing %q", c.group, err, c.has)
		}
	}

	wantRetryable(t, r, testPod("f", podInGroup("later")), "PodGroup ns1/later (scheduling.k8s.io) not found")
}

// A native PodGroup's spec.priority (filled by the Priority admission
// plugin from spec.priorityClassName) is the group's priority; without it
// the group has none of its own.
func TestResolveNativePodGroupPriority(t *testing.T) {
	urgent := testNativePodGroup(t, "urgent", 2)
	if err := unstructured.SetNestedField(urgent.Object, int64(1000), "spec", "priority"); err != nil {
		t.Fatal(err)
	}
	r, _ := fixture{crs: []runtime.Object{urgent, testNativePodGroup(t, "plain", 2)}}.resolver(t)
	ctx := context.Background()
	got, err := r.Resolve(ctx, testPod("a", podInGroup("urgent")))
	if err != nil || !got.HasPriority || got.Priority != 1000 {
		t.Errorf("urgent: got %+v, %v; want priority 1000", got, err)
	}
	got, err = r.Resolve(ctx, testPod("b", podInGroup("plain")))
	if err != nil || got.HasPriority {
		t.Errorf("plain: got %+v, %v; want no priority of its own", got, err)
	}
}

// The rest of a v1beta1 PodGroup's spec goes with the group: its
// preemption policy, disruption mode and topology key; a composite parent
// is named as unsupported (resource claims are not: the pods' claims that
// resolve to the group's are placed as shared claims); more than one topology
// entry (which the API server refuses) is a final error.
func TestResolveNativePodGroupPolicy(t *testing.T) {
	set := func(u *unstructured.Unstructured, v any, path ...string) *unstructured.Unstructured {
		t.Helper()
		if err := unstructured.SetNestedField(u.Object, v, path...); err != nil {
			t.Fatal(err)
		}
		return u
	}
	rack := set(testNativePodGroup(t, "rack", 2), []any{map[string]any{"key": "example.com/rack"}}, "spec", "schedulingConstraints", "topology")
	set(rack, "Never", "spec", "preemptionPolicy")
	set(rack, map[string]any{"single": map[string]any{}}, "spec", "disruptionMode")
	claims := set(testNativePodGroup(t, "claims", 2), []any{map[string]any{"name": "gpus", "resourceClaimTemplateName": "tpl"}}, "spec", "resourceClaims")
	set(claims, "parent", "spec", "parentCompositePodGroupName")
	two := set(testNativePodGroup(t, "two", 2), []any{map[string]any{"key": "a"}, map[string]any{"key": "b"}}, "spec", "schedulingConstraints", "topology")
	r, _ := fixture{crs: []runtime.Object{rack, claims, two, testNativePodGroup(t, "plain", 2)}}.resolver(t)
	ctx := context.Background()

	got, err := r.Resolve(ctx, testPod("a", podInGroup("rack")))
	if err != nil || got.TopologyKey != "example.com/rack" || got.PreemptionPolicy != "Never" || !got.DisruptionSingle || got.Unsupported != "" {
		t.Errorf("rack: got %+v, %v; want topology example.com/rack, preemption Never, disruption single", got, err)
	}
	got, err = r.Resolve(ctx, testPod("b", podInGroup("plain")))
	if err != nil || got.TopologyKey != "" || got.PreemptionPolicy != "" || got.DisruptionSingle {
		t.Errorf("plain: got %+v, %v; want no policy beyond its size", got, err)
	}
	// Its parent does not exist (yet): the group waits for it.
	got, err = r.Resolve(ctx, testPod("c", podInGroup("claims")))
	if re := (*ResolveError)(nil); !errors.As(err, &re) || !re.Retryable || !strings.Contains(err.Error(), "CompositePodGroup ns1/parent not found") {
		t.Errorf("claims: got %+v, %v; want to wait for its parent", got, err)
	}
	_, err = r.Resolve(ctx, testPod("d", podInGroup("two")))
	var re *ResolveError
	if !errors.As(err, &re) || re.Retryable || !strings.Contains(err.Error(), "topology has 2 entries") {
		t.Errorf("two topology entries: got %v; want a final error", err)
	}
}

// Kubernetes 1.37's Job controller (WorkloadWithJob) gives every Indexed
// Job a PodGroup, basic unless the Job's spec.scheduling asks for a gang.
// A basic one the controller chose by default leaves the pods grouped by
// their Job, as without the gate; a Job that asks for basic gets lone
// pods; a basic PodGroup of anyone else makes lone pods.
func TestResolveJobDefaultPodGroup(t *testing.T) {
	owned := func(name, job string) *unstructured.Unstructured {
		pg := testNativePodGroup(t, name, 0)
		pg.SetOwnerReferences([]metav1.OwnerReference{controllerRef("batch/v1", "Job", job)})
		return pg
	}
	basic := func(j *batchv1.Job) {
		j.Spec.Scheduling = &batchv1.JobSchedulingConfiguration{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
			Basic: &schedulingv1alpha3.WorkloadPodGroupBasicSchedulingPolicy{}}}
	}
	r, _ := fixture{
		jobs: []*batchv1.Job{testJob("train", 4, completions(4)), testJob("asked", 4, completions(4), basic)},
		crs:  []runtime.Object{owned("train-pg", "train"), owned("asked-pg", "asked"), owned("orphan-pg", "gone"), testNativePodGroup(t, "mine", 0)},
	}.resolver(t)
	ctx := context.Background()
	for _, c := range []struct {
		pod  *corev1.Pod
		want gang.GroupID
	}{
		{testPod("t0", podInGroup("train-pg"), podOwner("batch/v1", "Job", "train")), want("train", 4, gang.SourceJob)},
		{testPod("a0", podInGroup("asked-pg"), podOwner("batch/v1", "Job", "asked")), want("a0", 1, gang.SourcePod)},
		{testPod("m0", podInGroup("mine")), want("m0", 1, gang.SourcePod)},
	} {
		got, err := r.Resolve(ctx, c.pod)
		if err != nil || got != c.want {
			t.Errorf("pod %s: got %+v, %v; want %+v", c.pod.Name, got, err, c.want)
		}
	}
	// The Job not in the cache yet: wait, rather than guess.
	wantRetryable(t, r, testPod("o0", podInGroup("orphan-pg")), "owner job ns1/gone is not in the informer cache yet")
}

// A native PodGroup created after its pods is found once the informer
// sees it; a cluster that does not serve the API is never asked for it.
func TestResolveNativePodGroupInformer(t *testing.T) {
	r, dyn := fixture{}.resolver(t)
	ctx := context.Background()
	pod := testPod("a", podInGroup("late"))
	wantRetryable(t, r, pod, "not found")
	if _, err := dyn.Resource(NativePodGroupV1beta1).Namespace(testNS).Create(ctx, testNativePodGroup(t, "late", 4), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := r.Resolve(ctx, pod)
		if err == nil {
			if got != want("late", 4, gang.SourceNativePodGroup) {
				t.Fatalf("got %+v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the PodGroup created late was never seen: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Not served: not listed or watched, and the pod waits (retryable).
	c, dyn2 := customResources(t, fakeDiscovery(PodGroupResource))
	r2 := resolverOver(t, c)
	wantRetryable(t, r2, pod, "the API server does not serve podgroups.scheduling.k8s.io/v1beta1")
	if touched := resourcesTouched(dyn2); len(touched[NativePodGroupV1beta1]) != 0 {
		t.Errorf("native PodGroups read although not served: %v", touched)
	}

	// Only v1alpha2 served (Kubernetes 1.36 with its gate on): a final
	// error saying so, and nothing read.
	c3, dyn3 := customResources(t, fakeDiscovery(legacyNativeVersions[0]))
	r3 := resolverOver(t, c3)
	_, err := r3.Resolve(ctx, pod)
	var legacy *ResolveError
	if !errors.As(err, &legacy) || legacy.Retryable || !strings.Contains(err.Error(), "serves PodGroups only as scheduling.k8s.io/v1alpha2, which this build of fluence (Kubernetes 1.37) does not read") {
		t.Errorf("v1alpha2 only: got %v; want a final error naming the served version", err)
	}
	if touched := resourcesTouched(dyn3); len(touched[legacyNativeVersions[0]]) != 0 {
		t.Errorf("v1alpha2 PodGroups read: %v", touched)
	}

	// No client at all: a final error.
	_, err = NewResolver(Sources{}).Resolve(ctx, pod)
	var re *ResolveError
	if !errors.As(err, &re) || re.Retryable || !strings.Contains(err.Error(), "no client to read PodGroups") {
		t.Errorf("no client: got %v", err)
	}
}

// status.conditions[PodGroupInitiallyScheduled] is written through the status
// subresource; lastTransitionTime moves only with the status; an
// unchanged condition is not written again; a deleted PodGroup is skipped.
func TestConditionWriterNative(t *testing.T) {
	ctx := context.Background()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, testNativePodGroup(t, "pg", 2))
	w := NewConditionWriter(dyn, nil, klog.Background())
	now := time.Date(2025, 1, 1, 10, 0, 0, 500, time.UTC)
	w.now = func() time.Time { return now }
	writes := func() int {
		n := 0
		for _, a := range dyn.Actions() {
			switch a.GetVerb() {
			case "update":
				if a.GetSubresource() != "status" {
					t.Errorf("update of subresource %q", a.GetSubresource())
				}
				n++
			case "patch", "create":
				t.Errorf("unexpected %s", a.GetVerb())
			}
		}
		return n
	}
	id := gang.NewGroupID(testNS, "pg", 2, gang.SourceNativePodGroup)
	check := func(step string, status gang.ConditionStatus, wantStatus metav1.ConditionStatus, wantReason string, wantLTT time.Time, wantWrites int) {
		t.Helper()
		if err := w.write(ctx, gang.Condition{Group: id, Status: status, Message: step}); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		u, err := dyn.Resource(NativePodGroupV1beta1).Namespace(testNS).Get(ctx, "pg", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var pg schedulingv1beta1.PodGroup
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pg); err != nil {
			t.Fatal(err)
		}
		if len(pg.Status.Conditions) != 1 {
			t.Fatalf("%s: conditions %+v", step, pg.Status.Conditions)
		}
		c := pg.Status.Conditions[0]
		if c.Type != schedulingv1beta1.PodGroupInitiallyScheduled || c.Status != wantStatus || c.Reason != wantReason ||
			c.Message != "fluence: "+step || !c.LastTransitionTime.Time.Equal(wantLTT) || c.ObservedGeneration != 1 {
			t.Errorf("%s: condition %+v, want status %s reason %s lastTransitionTime %s", step, c, wantStatus, wantReason, wantLTT)
		}
		if n := writes(); n != wantWrites {
			t.Errorf("%s: %d status writes, want %d", step, n, wantWrites)
		}
	}
	t0 := now.Truncate(time.Second)
	check("waiting", gang.Waiting, metav1.ConditionFalse, schedulingv1beta1.PodGroupReasonUnschedulable, t0, 1)
	now = now.Add(time.Minute)
	check("unsatisfiable", gang.Unsatisfiable, metav1.ConditionFalse, schedulingv1beta1.PodGroupReasonUnschedulable, t0, 2)
	check("unsatisfiable", gang.Unsatisfiable, metav1.ConditionFalse, schedulingv1beta1.PodGroupReasonUnschedulable, t0, 2)
	check("placed", gang.Scheduled, metav1.ConditionTrue, "Scheduled", now.Truncate(time.Second), 3)
	// Once True, PodGroupInitiallyScheduled stays: a later wait (the group
	// withdrawn, resized) is not written over it.
	placedAt := now.Truncate(time.Second)
	now = now.Add(time.Minute)
	if err := w.write(ctx, gang.Condition{Group: id, Status: gang.Waiting, Message: "waiting again"}); err != nil {
		t.Fatal(err)
	}
	check("placed", gang.Scheduled, metav1.ConditionTrue, "Scheduled", placedAt, 3)

	gone := gang.NewGroupID(testNS, "gone", 2, gang.SourceNativePodGroup)
	if err := w.write(ctx, gang.Condition{Group: gone, Status: gang.Waiting}); err != nil || writes() != 3 {
		t.Errorf("deleted PodGroup: %v, %d writes", err, writes())
	}
	// The scheduler-plugins PodGroup of the same name is not touched.
	for _, a := range dyn.Actions() {
		if a.GetResource() == PodGroupResource {
			t.Errorf("%s on a scheduler-plugins PodGroup", a.GetVerb())
		}
	}
}

// With kube-scheduler writing PodGroupInitiallyScheduled itself (GenericWorkload
// on), the writer leaves the status alone and reports a rejection as an
// event on the PodGroup.
func TestConditionWriterLeavesNativeConditions(t *testing.T) {
	ctx := context.Background()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, testNativePodGroup(t, "pg", 2))
	rec := events.NewFakeRecorder(10)
	w := NewConditionWriter(dyn, rec, klog.Background())
	w.LeaveNativeConditions()
	id := gang.NewGroupID(testNS, "pg", 2, gang.SourceNativePodGroup)
	for _, st := range []gang.ConditionStatus{gang.Waiting, gang.Unsatisfiable, gang.Scheduled} {
		if err := w.write(ctx, gang.Condition{Group: id, Status: st, Message: "needs 50"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range dyn.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("unexpected %s %s", a.GetVerb(), a.GetSubresource())
		}
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if want := []string{"Warning FluenceGroupRejected needs 50"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}
