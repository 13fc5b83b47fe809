package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
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

// A fluence up that is killed (SIGKILL: no time to stop anything) takes
// its neighbours with it: on Linux each is started to die with its
// parent, so none is left running against an API server that is gone.
func TestUpKilledTakesNeighbours(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	if runtime.GOOS != "linux" {
		t.Skip("only Linux kills a child with its parent")
	}
	if _, err := localcluster.BuildNeighbour(t.Context(), localcluster.MPIOperator); err != nil {
		t.Fatal(err)
	}
	proc := startProcess(t, buildFluence(t), "up", "--nodes", "1", "--with", "mpi-operator")
	waitUpReady(t, proc)
	children := childrenOf(t, proc.cmd.Process.Pid)
	if len(children) != 1 {
		t.Fatalf("fluence up --with mpi-operator has children %v, want the operator alone", children)
	}
	if err := proc.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-proc.exited
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", children[0]))
		return os.IsNotExist(err), nil
	})
	if err != nil {
		_ = syscall.Kill(children[0], syscall.SIGKILL)
		t.Fatalf("the MPI Operator (pid %d) still runs 10 s after fluence up was killed", children[0])
	}
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after
		// its closing parenthesis.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}
