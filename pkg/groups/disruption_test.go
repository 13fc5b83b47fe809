package groups

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/klog/v2"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// A preempted group's PodGroup gets DisruptionTarget, True, reason
// PreemptionByScheduler, with the core's message: in a Kubernetes
// PodGroup's status.conditions, beside the scheduling condition (which it
// never touches, even when kube-scheduler owns that one); in its own
// annotation on a scheduler-plugins PodGroup.
func TestConditionWriterDisrupted(t *testing.T) {
	ctx := context.Background()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, testNativePodGroup(t, "pg", 2), testPodGroup("sp", 2))
	w := NewConditionWriter(dyn, nil, klog.Background())
	w.LeaveNativeConditions()
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return at }

	nid := gang.NewGroupID(testNS, "pg", 2, gang.SourceNativePodGroup)
	sid := gang.NewGroupID(testNS, "sp", 2, gang.SourcePodGroup)
	const msg = "preempted by pod group ns/h (priority 100000), which needs its nodes to start; pod group ns/pg (priority 10) is evicted whole"
	for _, id := range []gang.GroupID{nid, sid} {
		if err := w.write(ctx, gang.Condition{Group: id, Status: gang.Disrupted, Message: msg}); err != nil {
			t.Fatalf("%s: %v", id.Key, err)
		}
	}
	got := nativeConditions(t, dyn, "pg")
	c := meta.FindStatusCondition(got, "DisruptionTarget")
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "PreemptionByScheduler" || c.Message != "fluence: "+msg || !c.LastTransitionTime.Time.Equal(at) {
		t.Errorf("native: DisruptionTarget %+v, want True/PreemptionByScheduler with the core's message", c)
	}
	if len(got) != 1 {
		t.Errorf("native: conditions %+v, want only DisruptionTarget (kube-scheduler owns the scheduling one here)", got)
	}
	sp, err := dyn.Resource(PodGroupResource).Namespace(testNS).Get(ctx, "sp", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var a condition
	if err := json.Unmarshal([]byte(sp.GetAnnotations()[DisruptionConditionKey]), &a); err != nil {
		t.Fatalf("annotation %s: %v", DisruptionConditionKey, err)
	}
	if a.Type != "DisruptionTarget" || a.Status != "True" || a.Reason != "PreemptionByScheduler" || a.Message != msg {
		t.Errorf("scheduler-plugins: %+v, want DisruptionTarget True/PreemptionByScheduler", a)
	}
	for _, k := range []string{ConditionKey, WholeConditionKey} {
		if _, ok := sp.GetAnnotations()[k]; ok {
			t.Errorf("scheduler-plugins: %s was written too", k)
		}
	}

	// A second preemption, later: the message follows, the time of the
	// transition stays.
	w.now = func() time.Time { return at.Add(time.Hour) }
	if err := w.write(ctx, gang.Condition{Group: nid, Status: gang.Disrupted, Message: "preempted again"}); err != nil {
		t.Fatal(err)
	}
	c = meta.FindStatusCondition(nativeConditions(t, dyn, "pg"), "DisruptionTarget")
	if c == nil || c.Message != "fluence: preempted again" || !c.LastTransitionTime.Time.Equal(at) {
		t.Errorf("native, preempted again: %+v, want the new message and the first transition time", c)
	}

	// The scheduling condition written after it leaves it alone.
	w2 := NewConditionWriter(dyn, nil, klog.Background())
	if err := w2.write(ctx, gang.Condition{Group: nid, Status: gang.Waiting, Message: "waiting for resources"}); err != nil {
		t.Fatal(err)
	}
	got = nativeConditions(t, dyn, "pg")
	if c := meta.FindStatusCondition(got, "DisruptionTarget"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("the scheduling condition replaced DisruptionTarget: %+v", got)
	}
	if c := meta.FindStatusCondition(got, "PodGroupInitiallyScheduled"); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("no scheduling condition beside DisruptionTarget: %+v", got)
	}

	// Each of a group's three conditions has its own queue key: none
	// supersedes another while it waits to be written.
	keys := map[string]bool{}
	for _, st := range []gang.ConditionStatus{gang.Scheduled, gang.Whole, gang.Disrupted} {
		keys[queueKey(gang.Condition{Group: nid, Status: st})] = true
	}
	if len(keys) != 3 {
		t.Errorf("queue keys %v: a group's conditions share one", keys)
	}
}

// Set queues a Disrupted condition apart from the scheduling condition
// set right after it: both are written.
func TestConditionWriterDisruptedNotSuperseded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, testNativePodGroup(t, "pg", 2))
	w := NewConditionWriter(dyn, nil, klog.Background())
	id := gang.NewGroupID(testNS, "pg", 2, gang.SourceNativePodGroup)
	w.Set(gang.Condition{Group: id, Status: gang.Disrupted, Message: "preempted"})
	w.Set(gang.Condition{Group: id, Status: gang.Waiting, Message: "waiting for its pods"})
	go w.Run(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := nativeConditions(t, dyn, "pg")
		if meta.FindStatusCondition(got, "DisruptionTarget") != nil && meta.FindStatusCondition(got, "PodGroupInitiallyScheduled") != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("conditions %+v, want DisruptionTarget and PodGroupInitiallyScheduled", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
