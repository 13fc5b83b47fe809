package replay

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fluence-sched/fluence/pkg/k8sadapter"
	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/sim"
)

func TestJobNames(t *testing.T) {
	w := workload(
		group("lmp-0-1-size-2-2-2-2", 1, 1000, 0, 1, 0),
		group("Solver_A.1", 1, 1000, 0, 1, 0),
		group("solver-a-1", 1, 1000, 0, 1, 0), // taken by the one above
		group("---", 1, 1000, 0, 1, 0),
		group(strings.Repeat("x", 70), 1, 1000, 0, 1, 0),
	)
	want := []string{"lmp-0-1-size-2-2-2-2", "solver-a-1", "job-2", "job-3", strings.Repeat("x", 63)}
	got := JobNames(w)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("group %d (%q): job name %q, want %q", i, w.Groups[i].Name, got[i], want[i])
		}
	}
}

func TestJobFor(t *testing.T) {
	g := group("g", 3, 2000, 0, 2.5, 0)
	for i := range g.Pods {
		g.Pods[i].Memory, g.Pods[i].GPU = 1<<30, 1
	}
	g.Duration = 90
	job := JobFor("ns", "g", 7, &g)
	if *job.Spec.Parallelism != 3 || *job.Spec.Completions != 3 || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("job spec %+v: want an Indexed Job of 3 completions, 3 at once", job.Spec)
	}
	if job.Labels[GroupLabel] != "7" || job.Spec.Template.Labels[GroupLabel] != "7" {
		t.Errorf("group label missing: %v, %v", job.Labels, job.Spec.Template.Labels)
	}
	ann := job.Spec.Template.Annotations
	if ann[HoldAnnotation] != "2.5s" || ann[SizeAnnotation] != "3" || ann[k8sadapter.DurationKey] != "1m30s" {
		t.Errorf("pod annotations %v", ann)
	}
	if _, ok := ann[localcluster.RuntimeAnnotation]; ok {
		t.Error("pods carry a run time of their own: the launcher, not the node simulator, must end them")
	}
	c := job.Spec.Template.Spec.Containers[0]
	for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "2", corev1.ResourceMemory: "1Gi", localcluster.GPUResource: "1"} {
		if q := c.Resources.Requests[name]; q.String() != want {
			t.Errorf("request %s = %s, want %s", name, q.String(), want)
		}
		if q := c.Resources.Limits[name]; q.String() != want {
			t.Errorf("limit %s = %s, want %s", name, q.String(), want)
		}
	}
	if s := job.Spec.Template.Spec.SchedulerName; s != "" {
		t.Errorf("schedulerName %q before Prepare", s)
	}
}

func TestPodHold(t *testing.T) {
	pod := func(ann map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: ann}}
	}
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		hold    time.Duration
		size    int
		ok, err bool
	}{
		{"hold and size", map[string]string{HoldAnnotation: "1.5s", SizeAnnotation: "4"}, 1500 * time.Millisecond, 4, true, false},
		{"none", nil, 0, 0, false, false},
		{"bad hold", map[string]string{HoldAnnotation: "soon", SizeAnnotation: "4"}, 0, 0, false, true},
		{"negative hold", map[string]string{HoldAnnotation: "-1s", SizeAnnotation: "4"}, 0, 0, false, true},
		{"no size", map[string]string{HoldAnnotation: "1s"}, 0, 0, false, true},
		{"zero size", map[string]string{HoldAnnotation: "1s", SizeAnnotation: "0"}, 0, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hold, size, ok, err := PodHold(pod(tc.ann))
			if hold != tc.hold || size != tc.size || ok != tc.ok || (err != nil) != tc.err {
				t.Errorf("PodHold = %v, %d, %v, %v; want %v, %d, %v, error %v", hold, size, ok, err, tc.hold, tc.size, tc.ok, tc.err)
			}
			if err != nil && !strings.Contains(err.Error(), "ns/p") {
				t.Errorf("error %q does not name the pod", err)
			}
		})
	}
}

func TestNodeSpecs(t *testing.T) {
	w := workload(group("a", 1, 1000, 0, 1, 0))
	w.Cluster.Nodes[1].GPU = 2
	nodes, err := NodeSpecs(w)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || nodes[0].CPU != "3000m" || nodes[0].Memory != "8589934592" || nodes[1].GPUs != 2 {
		t.Errorf("nodes %+v", nodes)
	}
	for _, n := range nodes {
		if _, err := localcluster.NodeObject(n); err != nil {
			t.Error(err)
		}
	}
	if _, err := NodeSpecs(&sim.Workload{Name: "empty"}); err == nil {
		t.Error("a workload without nodes accepted")
	}
}
