package groups

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// pending is the number of groups the writer still holds a condition for.
func (w *ConditionWriter) pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.latest)
}

// The writer forgets a group once its condition is written, its PodGroup
// is found deleted, or its retries are spent: a scheduler that sees groups
// come and go for months holds none of them for good.
func TestConditionWriterForgetsGroups(t *testing.T) {
	tests := []struct {
		name   string
		groups []string // PodGroups that exist
		set    []string // groups a condition is set for
		fail   bool     // every read of a PodGroup fails
	}{
		{name: "written", groups: []string{"a", "b"}, set: []string{"a", "b", "a"}},
		{name: "deleted", set: []string{"gone", "also-gone"}},
		{name: "retries spent", groups: []string{"a"}, set: []string{"a"}, fail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, g := range tt.groups {
				objs = append(objs, testPodGroup(g, 2))
			}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
			if tt.fail {
				dyn.PrependReactor("get", "podgroups", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("the API server is away")
				})
			}
			w := NewConditionWriter(dyn, nil, klog.Background())
			for _, g := range tt.set {
				w.Set(gang.Condition{Group: gang.NewGroupID(testNS, g, 2, gang.SourcePodGroup), Status: gang.Waiting, Message: g})
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { w.Run(ctx); close(done) }()
			defer func() { cancel(); <-done }()

			deadline := time.Now().Add(10 * time.Second)
			for w.pending() > 0 || w.queue.Len() > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("after 10s the writer still holds %d groups", w.pending())
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}

// A condition that failed to be written is kept for its retry, unless a
// newer one for the group arrived meanwhile.
func TestConditionWriterPutBack(t *testing.T) {
	id := gang.NewGroupID(testNS, "pg", 2, gang.SourcePodGroup)
	old := gang.Condition{Group: id, Status: gang.Waiting, Message: "old"}
	newer := gang.Condition{Group: id, Status: gang.Scheduled, Message: "newer"}
	tests := []struct {
		name string
		set  []gang.Condition // Set while the old condition was being written
		want string
	}{
		{name: "kept for its retry", want: "old"},
		{name: "superseded", set: []gang.Condition{newer}, want: "newer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
			w := NewConditionWriter(dyn, nil, klog.Background())
			w.Set(old)
			c, ok := w.take(id.Key)
			if !ok || c != old || w.pending() != 0 {
				t.Fatalf("take: %+v %v, %d pending", c, ok, w.pending())
			}
			for _, c := range tt.set {
				w.Set(c)
			}
			w.putBack(old)
			got, ok := w.take(id.Key)
			if !ok || got.Message != tt.want {
				t.Errorf("after putBack: %+v %v, want %q", got, ok, tt.want)
			}
		})
	}
}
