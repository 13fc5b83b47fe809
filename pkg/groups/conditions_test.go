package groups

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/klog/v2"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// The condition annotation: lastTransitionTime moves only with the status,
// an unchanged condition is not written again, a deleted PodGroup is
// skipped.
func TestConditionWriterWrite(t *testing.T) {
	ctx := context.Background()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, testPodGroup("pg", 2))
	w := NewConditionWriter(dyn, nil, klog.Background())
	now := time.Date(2025, 1, 1, 10, 0, 0, 500, time.UTC)
	w.now = func() time.Time { return now }
	patches := func() int {
		n := 0
		for _, a := range dyn.Actions() {
			if a.GetVerb() == "patch" {
				n++
			}
		}
		return n
	}
	check := func(step string, status gang.ConditionStatus, wantStatus, wantReason string, wantLTT time.Time, wantPatches int) {
		t.Helper()
		id := gang.NewGroupID(testNS, "pg", 2, gang.SourcePodGroup)
		if err := w.write(ctx, gang.Condition{Group: id, Status: status, Message: step}); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		pg, err := dyn.Resource(PodGroupResource).Namespace(testNS).Get(ctx, "pg", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var c condition
		if err := json.Unmarshal([]byte(pg.GetAnnotations()[ConditionKey]), &c); err != nil {
			t.Fatalf("%s: annotation %q: %v", step, pg.GetAnnotations()[ConditionKey], err)
		}
		if c.Type != "Schedulable" || c.Status != wantStatus || c.Reason != wantReason || !c.LastTransitionTime.Time.Equal(wantLTT) {
			t.Errorf("%s: condition %+v, want status %s reason %s lastTransitionTime %s", step, c, wantStatus, wantReason, wantLTT)
		}
		if n := patches(); n != wantPatches {
			t.Errorf("%s: %d patches, want %d", step, n, wantPatches)
		}
	}
	t0 := now.Truncate(time.Second)
	check("waiting", gang.Waiting, "False", "Waiting", t0, 1)
	now = now.Add(time.Minute)
	check("unsatisfiable", gang.Unsatisfiable, "False", "Unsatisfiable", t0, 2)
	check("unsatisfiable", gang.Unsatisfiable, "False", "Unsatisfiable", t0, 2)
	check("placed", gang.Scheduled, "True", "Placed", now.Truncate(time.Second), 3)

	gone := gang.NewGroupID(testNS, "gone", 2, gang.SourcePodGroup)
	if err := w.write(ctx, gang.Condition{Group: gone, Status: gang.Waiting}); err != nil || patches() != 3 {
		t.Errorf("deleted PodGroup: %v, %d patches", err, patches())
	}
}
