package replay

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fluence-sched/fluence/pkg/sim"
)

// jobPod is pod index of group gi as the Job controller creates it, on
// node ("" = pending) in phase.
func jobPod(gi, index int, node string, phase corev1.PodPhase) *corev1.Pod {
	name := fmt.Sprintf("g%d-%d", gi, index)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "demo", UID: types.UID(name),
			Labels:      map[string]string{GroupLabel: strconv.Itoa(gi), batchv1.JobNameLabel: fmt.Sprintf("g%d", gi)},
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: strconv.Itoa(index), HoldAnnotation: "1s", SizeAnnotation: "2"},
		},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// A group completes when its pods have all finished; one bound partly
// holds its CPUs; the result says so in the workload's terms.
func TestRecorder(t *testing.T) {
	w := workload(group("a", 2, 1000, 0, 1, 0), group("b", 2, 2000, 0.5, 1, 0))
	r := NewRecorder(w)
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

	r.Submitted(0, at(0))
	r.Observe(jobPod(0, 0, "", corev1.PodPending), at(0.1))
	r.Observe(jobPod(0, 1, "", corev1.PodPending), at(0.1))
	r.Submitted(1, at(0.5))
	r.Observe(jobPod(0, 1, "node1", corev1.PodPending), at(1))
	r.Observe(jobPod(0, 0, "node0", corev1.PodPending), at(1.5)) // a starts
	r.Observe(jobPod(0, 0, "node0", corev1.PodRunning), at(1.6))
	r.Observe(jobPod(1, 0, "node0", corev1.PodPending), at(2)) // b: one of two
	if st := r.Status(at(2)); st.PodsBound != 3 || st.PodsPending != 1 || st.PodsRunning != 3 || st.JobsSubmitted != 2 || st.SinceChange != 0 {
		t.Errorf("status at 2 s: %+v", st)
	}
	r.Observe(jobPod(0, 1, "node1", corev1.PodRunning), at(1.7)) // a runs whole
	r.Observe(jobPod(0, 0, "node0", corev1.PodSucceeded), at(3))
	r.Observe(jobPod(0, 1, "node1", corev1.PodSucceeded), at(3.5)) // a ends
	r.Observe(jobPod(0, 1, "node1", corev1.PodSucceeded), at(3.6)) // seen again: nothing changes
	if l := r.Lags(); len(l.Restart) != 0 {
		t.Errorf("restart lags %v before any group started after a completion", l.Restart)
	}

	st := r.Status(at(10))
	if st.Done() || st.JobsCompleted != 1 || st.PodsPending != 1 || st.PodsRunning != 1 || st.SinceChange != 6500*time.Millisecond || st.Elapsed != 10*time.Second {
		t.Errorf("status at 10 s: %+v", st)
	}
	res := r.Result("stock", "cfg", true, at(10))
	a, b := res.Jobs[0], res.Jobs[1]
	if !a.Completed || a.Submit != 0 || a.Start != 1.5 || a.End != 3.5 || a.Wait != 1.5 || a.Turnaround != 3.5 || a.Nodes[0] != "node0" || a.Nodes[1] != "node1" {
		t.Errorf("job a: %+v", a)
	}
	if b.Completed || b.Submit != 0.5 || b.Start != -1 || !math.IsNaN(b.Turnaround) || b.Nodes[0] != "node0" || b.Nodes[1] != "" {
		t.Errorf("job b: %+v", b)
	}
	if res.JobsCompleted != 1 || res.Makespan != 3.5 || res.MeanTurnaround != 3.5 || res.MeanWait != 1.5 || res.MaxWait != 1.5 || res.TotalCPU != 6000 {
		t.Errorf("result: %+v", res)
	}
	// The bounds are the replayed workload's, as the simulator reports them.
	if want := sim.BoundsOf(w); res.Bounds != want || res.LowerBound != want.Runtime || want.Runtime <= 0 {
		t.Errorf("bounds %+v (runtime %v), want %+v", res.Bounds, res.LowerBound, want)
	}
	if !res.Stalled || res.StalledAt != 3.5 || res.PendingAtStall != 1 || res.RunningAtStall != 1 || res.JobsHoldingAtStall != 1 || res.SimulatedUntil != 10 {
		t.Errorf("stall: at %v, %d pending, %d running, %d jobs holding, until %v", res.StalledAt, res.PendingAtStall, res.RunningAtStall, res.JobsHoldingAtStall, res.SimulatedUntil)
	}
	if spreads := r.BindSpreads(); spreads[0] != 500*time.Millisecond || spreads[1] != -1 {
		t.Errorf("bind spreads %v, want 500ms for a and -1 for b (bound partly)", spreads)
	}
	lags := r.Lags()
	if len(lags.Create) != 1 || lags.Create[0] != 100*time.Millisecond || len(lags.Run) != 1 || lags.Run[0] != 200*time.Millisecond ||
		len(lags.End) != 1 || lags.End[0] != 800*time.Millisecond {
		t.Errorf("lags %+v: want a created 100ms after its Job, Running 200ms after its last bind, ended 800ms after its 1 s hold", lags)
	}
	if s := lags.String(); !strings.Contains(s, "created after their Job 100/100 ms") {
		t.Errorf("lags read %q", s)
	}
	last := res.Timeline[len(res.Timeline)-1]
	if last.T != 3.5 || last.Pending != 1 || last.Running != 1 || last.UsedCPU != 2000 || last.RunningJobs != 0 || last.Completed != 1 {
		t.Errorf("last sample %+v", last)
	}
}

// Pods of other groups or not yet submitted ones are not counted.
func TestRecorderIgnores(t *testing.T) {
	r := NewRecorder(workload(group("a", 2, 1000, 0, 1, 0)))
	now := time.Unix(1000, 0)
	r.Observe(jobPod(0, 0, "node0", corev1.PodRunning), now) // not submitted yet
	stranger := jobPod(5, 0, "node0", corev1.PodRunning)
	r.Submitted(0, now)
	r.Observe(stranger, now)
	unlabelled := jobPod(0, 1, "node0", corev1.PodRunning)
	delete(unlabelled.Labels, GroupLabel)
	r.Observe(unlabelled, now)
	if st := r.Status(now); st.PodsBound != 0 || st.PodsPending != 2 {
		t.Errorf("status %+v: foreign pods counted", st)
	}
}

// A group waiting when another completes counts the time to its own
// start; one submitted after the completion does not.
func TestRecorderRestartLag(t *testing.T) {
	w := workload(group("a", 1, 1000, 0, 1, 0), group("b", 1, 1000, 0, 1, 0), group("c", 1, 1000, 0, 1, 0))
	r := NewRecorder(w)
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	one := func(gi int, node string, phase corev1.PodPhase) *corev1.Pod {
		p := jobPod(gi, 0, node, phase)
		p.Annotations[SizeAnnotation] = "1"
		return p
	}
	r.Submitted(0, at(0))
	r.Submitted(1, at(1))
	r.Observe(one(0, "n0", corev1.PodRunning), at(0.5))
	r.Observe(one(0, "n0", corev1.PodSucceeded), at(2))
	r.Observe(one(1, "n0", corev1.PodPending), at(2.3))
	r.Submitted(2, at(2.5))
	r.Observe(one(2, "n1", corev1.PodPending), at(3))
	l := r.Lags()
	if len(l.Restart) != 1 || l.Restart[0] != 300*time.Millisecond {
		t.Errorf("restart lags %v, want only b's 300ms", l.Restart)
	}
}
