package integration

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// pgStatus is one status a PodGroup was seen with.
type pgStatus struct {
	Phase                               string
	Scheduled, Running, Succeeded, Fail int64
	Started                             bool // scheduleStartTime set
}

func (s pgStatus) String() string {
	return fmt.Sprintf("%s(scheduled %d, running %d, succeeded %d, failed %d)", s.Phase, s.Scheduled, s.Running, s.Succeeded, s.Fail)
}

// A scheduler-plugins PodGroup's status follows its pods as the
// coscheduling controller keeps it: Pending, Scheduling once its pods
// exist, Scheduled once they are bound, Running, Finished; with the counts
// kubectl shows, and scheduleStartTime from the first step on.
func TestSchedulerPluginsPodGroupStatus(t *testing.T) {
	c := newFullCluster(t)
	c.installPodGroupCRD()
	c.addNodes("node", 3, "2", "8Gi")
	inv := startInvariants(c)
	// Bound pods stay Pending a moment, so Scheduled is a state of its own.
	startNodeSim(c, simOptions{StartDelay: 2 * time.Second})
	c.startScheduler(fluenceConfig(t, nil), inv.registry())

	w, err := dynamic.NewForConfigOrDie(c.Config).Resource(podGroupGVR).Namespace(c.NS).Watch(c.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	c.createPodGroup("solver", 3)

	var seen []pgStatus
	var pods []*corev1.Pod
	deadline := time.After(90 * time.Second)
	for len(seen) == 0 || seen[len(seen)-1].Phase != "Finished" {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed; statuses seen: %v", seen)
			}
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			pg := ev.Object.(*unstructured.Unstructured)
			var s pgStatus
			s.Phase, _, _ = unstructured.NestedString(pg.Object, "status", "phase")
			s.Scheduled, _, _ = unstructured.NestedInt64(pg.Object, "status", "scheduled")
			s.Running, _, _ = unstructured.NestedInt64(pg.Object, "status", "running")
			s.Succeeded, _, _ = unstructured.NestedInt64(pg.Object, "status", "succeeded")
			s.Fail, _, _ = unstructured.NestedInt64(pg.Object, "status", "failed")
			start, _, _ := unstructured.NestedString(pg.Object, "status", "scheduleStartTime")
			s.Started = start != ""
			if s.Phase == "" {
				continue
			}
			if len(seen) == 0 || seen[len(seen)-1] != s {
				seen = append(seen, s)
			}
			// The pods come once the group shows Pending, as an MPIJob's would after its PodGroup.
			if s.Phase == "Pending" && pods == nil {
				for i := range 3 {
					pods = append(pods, newTestPod(fmt.Sprintf("solver-%d", i), "fluence", "2", "", 2*time.Second,
						map[string]string{"scheduling.x-k8s.io/pod-group": "solver"}))
				}
				c.createPods(pods...)
			}
		case <-deadline:
			t.Fatalf("PodGroup not Finished in time; statuses seen: %v", seen)
		}
	}

	var phases []string
	for _, s := range seen {
		if len(phases) == 0 || phases[len(phases)-1] != s.Phase {
			phases = append(phases, s.Phase)
		}
		if s.Phase != "Pending" && !s.Started {
			t.Errorf("%v without scheduleStartTime", s)
		}
	}
	// Scheduling lasts from the third pod's creation to the group's
	// binding, a few milliseconds: the writer may not see it.
	want := []string{"Pending", "Scheduling", "Scheduled", "Running", "Finished"}
	if !slices.Equal(phases, want) && !slices.Equal(phases, slices.Delete(slices.Clone(want), 1, 2)) {
		t.Errorf("phases %v, want %v (statuses %v)", phases, want, seen)
	}
	for _, w := range []pgStatus{
		{Phase: "Scheduled", Scheduled: 3, Started: true},
		{Phase: "Running", Scheduled: 3, Running: 3, Started: true},
		{Phase: "Finished", Scheduled: 3, Succeeded: 3, Started: true},
	} {
		if !slices.Contains(seen, w) {
			t.Errorf("no status %v among %v", w, seen)
		}
	}
	c.checkInvariants(inv)
}
