package groups

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
)

func podPhase(node string, phase corev1.PodPhase) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = node
		p.Status.Phase = phase
	}
}

func podDeleting() podOpt {
	return func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }
}

// groupOf returns pods p0..p(n-1) of PodGroup "pg", each with opts[i] (if any).
func groupOf(n int, opts ...podOpt) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		o := []podOpt{podLabels("scheduling.x-k8s.io/pod-group", "pg"), podOwner("batch/v1", "Job", "solver")}
		if i < len(opts) && opts[i] != nil {
			o = append(o, opts[i])
		}
		pods = append(pods, testPod("p"+string(rune('0'+i)), o...))
	}
	return pods
}

func TestNextPodGroupStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	bound := podPhase("n1", corev1.PodPending)
	running := podPhase("n1", corev1.PodRunning)
	done := podPhase("n1", corev1.PodSucceeded)
	failed := podPhase("n1", corev1.PodFailed)
	tests := []struct {
		name string
		prev PodGroupStatus
		pods []*corev1.Pod
		want PodGroupStatus
	}{
		{"no pods yet", PodGroupStatus{}, nil, PodGroupStatus{Phase: PhasePending}},
		{"two of three", PodGroupStatus{Phase: PhasePending}, groupOf(2),
			PodGroupStatus{Phase: PhasePending, OccupiedBy: testNS + "/solver"}},
		{"all three exist", PodGroupStatus{Phase: PhasePending}, groupOf(3),
			PodGroupStatus{Phase: PhaseScheduling, OccupiedBy: testNS + "/solver", ScheduleStartTime: &t1}},
		{"a deleted pod does not count as waiting", PodGroupStatus{Phase: PhasePending}, groupOf(3, nil, nil, podDeleting()),
			PodGroupStatus{Phase: PhasePending, OccupiedBy: testNS + "/solver"}},
		{"two bound: still scheduling, start time kept", PodGroupStatus{Phase: PhaseScheduling, ScheduleStartTime: &t0}, groupOf(3, bound, bound),
			PodGroupStatus{Phase: PhaseScheduling, OccupiedBy: testNS + "/solver", Scheduled: 2, ScheduleStartTime: &t0}},
		{"all bound", PodGroupStatus{Phase: PhaseScheduling, ScheduleStartTime: &t0}, groupOf(3, bound, bound, bound),
			PodGroupStatus{Phase: PhaseScheduled, OccupiedBy: testNS + "/solver", Scheduled: 3, ScheduleStartTime: &t0}},
		{"one running of three bound is not Running", PodGroupStatus{Phase: PhaseScheduled, ScheduleStartTime: &t0}, groupOf(3, running, bound, bound),
			PodGroupStatus{Phase: PhaseScheduled, OccupiedBy: testNS + "/solver", Scheduled: 3, Running: 1, ScheduleStartTime: &t0}},
		{"running", PodGroupStatus{Phase: PhaseScheduled, ScheduleStartTime: &t0}, groupOf(3, running, running, running),
			PodGroupStatus{Phase: PhaseRunning, OccupiedBy: testNS + "/solver", Scheduled: 3, Running: 3, ScheduleStartTime: &t0}},
		{"some done, the rest running", PodGroupStatus{Phase: PhaseRunning, ScheduleStartTime: &t0}, groupOf(3, done, running, running),
			PodGroupStatus{Phase: PhaseRunning, OccupiedBy: testNS + "/solver", Scheduled: 3, Running: 2, Succeeded: 1, ScheduleStartTime: &t0}},
		{"finished", PodGroupStatus{Phase: PhaseRunning, ScheduleStartTime: &t0}, groupOf(3, done, done, done),
			PodGroupStatus{Phase: PhaseFinished, OccupiedBy: testNS + "/solver", Scheduled: 3, Succeeded: 3, ScheduleStartTime: &t0}},
		{"finished stays finished when the pods go", PodGroupStatus{Phase: PhaseFinished, Succeeded: 3, ScheduleStartTime: &t0}, nil,
			PodGroupStatus{Phase: PhaseFinished, Succeeded: 3, ScheduleStartTime: &t0}},
		{"a failed pod fails the group", PodGroupStatus{Phase: PhaseRunning, ScheduleStartTime: &t0}, groupOf(3, failed, running, running),
			PodGroupStatus{Phase: PhaseFailed, OccupiedBy: testNS + "/solver", Scheduled: 3, Running: 2, Failed: 1, ScheduleStartTime: &t0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NextPodGroupStatus(tc.prev, 3, tc.pods, t1)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

// The writer reads the pods from the lister, writes the status through the
// status subresource, skips unchanged statuses and other schedulers' groups.
func TestPodGroupStatusWriterWrite(t *testing.T) {
	ctx := context.Background()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, testPodGroup("pg", 2))
	ours := func(p *corev1.Pod) bool { return p.Spec.SchedulerName == "fluence" }
	w := NewPodGroupStatusWriter(dyn, fake.NewClientset(), ours, klog.Background())
	podStore := w.factory.Core().V1().Pods().Informer().GetStore() // never started: the test fills it
	now := time.Date(2026, 1, 1, 10, 0, 0, 500, time.UTC)
	startAt := now.Truncate(time.Second) // when the group first leaves Pending
	w.now = func() time.Time { return now }
	updates := func() int {
		n := 0
		for _, a := range dyn.Actions() {
			if a.GetVerb() == "update" && a.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	setPods := func(sched string, opts ...podOpt) {
		for _, o := range podStore.List() {
			_ = podStore.Delete(o)
		}
		for _, p := range groupOf(2, opts...) {
			p.Spec.SchedulerName = sched
			_ = podStore.Add(p)
		}
	}
	check := func(step, wantPhase string, wantScheduled, wantRunning int64, wantUpdates int) {
		t.Helper()
		if err := w.write(ctx, testNS+"/pg"); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		pg, err := dyn.Resource(PodGroupResource).Namespace(testNS).Get(ctx, "pg", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := readPodGroupStatus(pg)
		if got.Phase != wantPhase || int64(got.Scheduled) != wantScheduled || int64(got.Running) != wantRunning {
			t.Errorf("%s: status %+v, want phase %s scheduled %d running %d", step, got, wantPhase, wantScheduled, wantRunning)
		}
		if got.Phase != PhasePending && (got.ScheduleStartTime == nil || !got.ScheduleStartTime.Time.Equal(startAt)) {
			t.Errorf("%s: scheduleStartTime %v, want %v", step, got.ScheduleStartTime, startAt)
		}
		if n := updates(); n != wantUpdates {
			t.Errorf("%s: %d status updates, want %d", step, n, wantUpdates)
		}
	}
	check("created", PhasePending, 0, 0, 1)
	check("unchanged", PhasePending, 0, 0, 1)
	setPods("default-scheduler", podPhase("n1", corev1.PodRunning), podPhase("n1", corev1.PodRunning))
	check("another scheduler's pods", PhasePending, 0, 0, 1)
	setPods("fluence")
	check("pods exist", PhaseScheduling, 0, 0, 2)
	now = now.Add(time.Minute) // the start time must not move
	setPods("fluence", podPhase("n1", corev1.PodPending), podPhase("n2", corev1.PodPending))
	check("bound", PhaseScheduled, 2, 0, 3)
	setPods("fluence", podPhase("n1", corev1.PodRunning), podPhase("n2", corev1.PodRunning))
	check("running", PhaseRunning, 2, 2, 4)
	if err := dyn.Resource(PodGroupResource).Namespace(testNS).Delete(ctx, "pg", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.write(ctx, testNS+"/pg"); err != nil {
		t.Errorf("a deleted PodGroup: %v", err)
	}
}
