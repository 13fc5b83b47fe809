package groups

import (
	"context"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/klog/v2"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// The whole condition is a type of its own: on a Kubernetes PodGroup
// beside PodGroupInitiallyScheduled, which it never touches, even when
// kube-scheduler owns that one; on a scheduler-plugins PodGroup in its own
// annotation. Broken is False, Whole and Elastic True.
func TestConditionWriterWhole(t *testing.T) {
	ctx := context.Background()
	native := testNativePodGroup(t, "pg", 2)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, native, testPodGroup("sp", 2))
	w := NewConditionWriter(dyn, nil, klog.Background())
	w.LeaveNativeConditions()

	nid := gang.NewGroupID(testNS, "pg", 2, gang.SourceNativePodGroup)
	sid := gang.NewGroupID(testNS, "sp", 2, gang.SourcePodGroup)
	for _, tc := range []struct {
		status     gang.ConditionStatus
		want       metav1.ConditionStatus
		wantReason string
	}{
		{gang.Whole, metav1.ConditionTrue, "Whole"},
		{gang.Broken, metav1.ConditionFalse, "MembersMissing"},
		{gang.Elastic, metav1.ConditionTrue, "Elastic"},
	} {
		for _, id := range []gang.GroupID{nid, sid} {
			if err := w.write(ctx, gang.Condition{Group: id, Status: tc.status, Message: tc.wantReason}); err != nil {
				t.Fatalf("%s %s: %v", id.Key, tc.status, err)
			}
		}
		got := nativeConditions(t, dyn, "pg")
		c := meta.FindStatusCondition(got, WholeConditionType)
		if c == nil || c.Status != tc.want || c.Reason != tc.wantReason || c.Message != "fluence: "+tc.wantReason {
			t.Errorf("native %s: condition %+v, want %s/%s", tc.status, c, tc.want, tc.wantReason)
		}
		if len(got) != 1 {
			t.Errorf("native %s: conditions %+v, want only %s", tc.status, got, WholeConditionType)
		}
		sp, err := dyn.Resource(PodGroupResource).Namespace(testNS).Get(ctx, "sp", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var a condition
		if err := json.Unmarshal([]byte(sp.GetAnnotations()[WholeConditionKey]), &a); err != nil {
			t.Fatalf("annotation: %v", err)
		}
		if a.Type != WholeConditionType || a.Status != string(tc.want) || a.Reason != tc.wantReason {
			t.Errorf("scheduler-plugins %s: condition %+v, want %s/%s", tc.status, a, tc.want, tc.wantReason)
		}
		if _, ok := sp.GetAnnotations()[ConditionKey]; ok {
			t.Errorf("scheduler-plugins %s: the scheduling condition was written too", tc.status)
		}
	}
	if queueKey(gang.Condition{Group: nid, Status: gang.Whole}) == queueKey(gang.Condition{Group: nid, Status: gang.Scheduled}) {
		t.Error("a group's two conditions share a queue key: one would supersede the other")
	}
}

func nativeConditions(t *testing.T, dyn *dynamicfake.FakeDynamicClient, name string) []metav1.Condition {
	t.Helper()
	pg, err := dyn.Resource(nativeVersions[0].gvr).Namespace(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _, _ := unstructured.NestedSlice(pg.Object, "status", "conditions")
	var out []metav1.Condition
	for _, item := range raw {
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.(map[string]any), &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}
