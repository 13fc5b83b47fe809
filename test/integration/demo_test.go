package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/featuregate"

	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/replay"
)

// demoJobs and demoCompress make the reduced demo: the first 20 run8 jobs
// (4 iterations of sizes 2-6, 80 pods) at 20 times real speed.
const (
	demoJobs     = 20
	demoCompress = 20
	// The longest hold is (29.5 s + 5 s) / 20, under 2 s: a 10 s window
	// is no pause of a healthy run.
	demoStall = 10 * time.Second
)

// A reduced `fluence demo` (what CI runs of it): the first 20 run8 jobs,
// compressed 20x, under fluence and under the stock kube-scheduler, each
// on its own local control plane (sharing the suite's etcd), with the
// outcome read from the API server once each run has ended.
//
// fluence completes every Job and binds every group whole. The stock
// scheduler binds pods one by one; a Job with some pods bound holds their
// CPUs and cannot compute until the rest are bound, so the run clogs: it
// stalls with Jobs bound partly, their pods Running, the rest Pending.
func TestDemoReduced(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	full := loadRun8(t)
	w, err := replay.First(full, demoJobs)
	if err != nil {
		t.Fatal(err)
	}
	replayed, err := replay.Compress(w, demoCompress)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fluence", "stock"} {
		t.Run(name, func(t *testing.T) {
			s, err := replay.NewScheduler(name)
			if err != nil {
				t.Fatal(err)
			}
			restoreGates(t, s.FeatureGates())
			var state *demoState
			o, err := replay.Run(context.Background(), s, replay.Options{
				Workload: replayed, Factor: demoCompress, Stall: demoStall,
				EtcdURL:  sharedEtcdURL,
				Progress: testLog{t},
				Inspect: func(ctx context.Context, c *localcluster.Cluster, _ *replay.Outcome) error {
					state, err = settledDemoState(ctx, c.Client, replay.DefaultNamespace)
					return err
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(state.jobs) != demoJobs {
				t.Fatalf("the API server holds %d Jobs, want %d", len(state.jobs), demoJobs)
			}
			switch name {
			case "fluence":
				checkFluenceDemo(t, o, state)
			case "stock":
				checkStockDemo(t, o, state)
			}
		})
	}
}

func checkFluenceDemo(t *testing.T, o *replay.Outcome, st *demoState) {
	if o.Stalled {
		t.Errorf("fluence stalled: %d/%d jobs completed", o.Result.JobsCompleted, o.Result.JobsTotal)
	}
	for _, j := range st.jobs {
		if !j.complete || j.succeeded != j.size {
			t.Errorf("Job %s: complete %v, %d of %d pods succeeded", j.name, j.complete, j.succeeded, j.size)
		}
		for _, p := range j.pods {
			if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodSucceeded {
				t.Errorf("Job %s: pod %s %s on %q", j.name, p.Name, p.Status.Phase, p.Spec.NodeName)
			}
		}
	}
	// fluence releases a group's pods from Permit together; binding them
	// takes milliseconds. A pod bound alone would wait for its group's
	// others for the length of a job at least.
	for i, d := range o.BindSpread {
		if d < 0 || d > time.Second {
			t.Errorf("group %s: %v from its first bind to its last (-1: never bound whole)", groupName(o, i), d)
		}
	}
}

func checkStockDemo(t *testing.T, o *replay.Outcome, st *demoState) {
	completed, partial := 0, 0
	for _, j := range st.jobs {
		if j.complete {
			completed++
		}
		bound, running := 0, 0
		for _, p := range j.pods {
			if p.Spec.NodeName != "" {
				bound++
			}
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if bound > 0 && bound < j.size {
			partial++
			if running != bound {
				t.Errorf("Job %s: %d of %d pods bound but %d Running: a partly bound Job must hold its CPUs", j.name, bound, j.size, running)
			}
		}
	}
	t.Logf("stock: %d/%d Jobs complete, %d bound partly, stalled %v", completed, len(st.jobs), partial, o.Stalled)
	if !o.Stalled || partial == 0 || completed == len(st.jobs) {
		t.Errorf("the stock scheduler did not clog: stalled %v, %d Jobs bound partly, %d/%d complete", o.Stalled, partial, completed, len(st.jobs))
	}
	if completed != o.Result.JobsCompleted {
		t.Errorf("the API server has %d Jobs complete, the recorder %d", completed, o.Result.JobsCompleted)
	}
}

func groupName(o *replay.Outcome, i int) string { return o.Result.Jobs[i].Name }

// demoState is what the API server holds of a replay's Jobs.
type demoState struct {
	jobs []demoJob
}

type demoJob struct {
	name            string
	size, succeeded int
	complete        bool
	pods            []corev1.Pod
}

// settledDemoState reads the Jobs once the Job controller has caught up:
// the run ends when the last pod is seen Succeeded, and the controller
// marks its Job complete a moment later.
func settledDemoState(ctx context.Context, client kubernetes.Interface, ns string) (*demoState, error) {
	var st *demoState
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		if st, err = readDemoState(ctx, client, ns); err != nil {
			return false, nil
		}
		for _, j := range st.jobs {
			succeeded := 0
			for _, p := range j.pods {
				if p.Status.Phase == corev1.PodSucceeded {
					succeeded++
				}
			}
			if succeeded == j.size && !j.complete {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil && st == nil {
		return nil, err
	}
	return st, nil // a Job still not complete fails the checks, with its name
}

func readDemoState(ctx context.Context, client kubernetes.Interface, ns string) (*demoState, error) {
	jobs, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	st := &demoState{}
	for _, j := range jobs.Items {
		dj := demoJob{name: j.Name, size: int(*j.Spec.Completions), succeeded: int(j.Status.Succeeded)}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				dj.complete = true
			}
		}
		for _, p := range pods.Items {
			if p.Labels[batchv1.JobNameLabel] == j.Name {
				dj.pods = append(dj.pods, p)
			}
		}
		st.jobs = append(st.jobs, dj)
	}
	return st, nil
}

// restoreGates puts back, when the test ends, the process-global feature
// gates a replay's cluster sets: the rest of the suite runs with the
// gates TestMain set.
func restoreGates(t *testing.T, gates map[string]bool) {
	before := map[string]bool{}
	for name := range gates {
		before[name] = utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(name))
	}
	t.Cleanup(func() {
		if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(before); err != nil {
			t.Errorf("restoring feature gates: %v", err)
		}
	})
}

// testLog is an io.Writer onto t.Log, one call per line.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l.t.Log(line)
	}
	return len(p), nil
}
