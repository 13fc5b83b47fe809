package integration

import (
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// `fluence up --with kueue,mpi-operator,jobset --mpi-gang-scheduling
// fluence`, as its own process: it prints the "with:" line, Kueue suspends
// a Job with the queue label, JobSet's webhook defaults a JobSet, an MPIJob
// becomes 5 pods bound whole with the operator's PodGroup, and on SIGINT it
// stops the three with the rest and exits 0.
func TestUpWithNeighbours(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	// Built here first (once per run), so that fluence up only starts them.
	for _, name := range localcluster.Neighbours {
		if _, err := localcluster.BuildNeighbour(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	proc := startProcess(t, buildFluence(t), "up", "--nodes", "4", "--with", "kueue,mpi-operator,jobset", "--mpi-gang-scheduling", "fluence")
	ready := waitUpReady(t, proc)
	if ready["with"] != "kueue mpi-operator jobset" {
		t.Errorf("with: %q, want %q", ready["with"], "kueue mpi-operator jobset")
	}
	c := upCluster(t, ready["kubeconfig"])
	job := kueueJob(c.NS, "queued", "team-a", 2, "1", 1)
	got, err := c.Client.BatchV1().Jobs(c.NS).Create(c.Ctx, job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	if !jobSuspended(got) {
		t.Errorf("a Job for a LocalQueue was not suspended by Kueue's webhook")
	}
	js := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(jobSetYAML("defaulted")), &js.Object); err != nil {
		t.Fatal(err)
	}
	gotJS, err := dynamic.NewForConfigOrDie(c.Config).Resource(localcluster.JobSetResource).Namespace(c.NS).Create(c.Ctx, js, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedMap(gotJS.Object, "spec", "successPolicy"); !found {
		t.Errorf("a JobSet came back without the success policy JobSet's webhook defaults")
	}
	c.createYAML(mpiJobYAML("pi", 4))
	if _, err := c.waitPodsBound(time.Minute, 5, metav1.ListOptions{LabelSelector: "training.kubeflow.org/job-name=pi,scheduling.x-k8s.io/pod-group=pi"}, nil); err != nil {
		t.Fatalf("the MPIJob's pods, in the operator's PodGroup, not bound: %v", err)
	}
	c.waitMPIJob("pi", time.Minute, "Succeeded")

	if err := proc.interrupt(syscall.SIGINT, time.Minute); err != nil {
		t.Fatalf("fluence up did not stop: %v", err)
	}
	if code := proc.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("fluence up exited %d", code)
	}
	if out := proc.logs.String(); !strings.Contains(out, "fluence up: stopped") {
		t.Errorf("no stop line:\n%s", tail(out, 20))
	}
}
