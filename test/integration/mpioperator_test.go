package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/fluence-sched/fluence/deploy"
	"github.com/fluence-sched/fluence/internal/up"
	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// mpiJobYAML is an MPIJob (v2beta1) of a launcher of 1 CPU that runs 3 s
// and workers of 2 CPUs each that run until the operator removes them
// once the launcher is done (cleanPodPolicy Running), all for fluence.
func mpiJobYAML(name string, workers int) string {
	return fmt.Sprintf(`apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: %s}
spec:
  slotsPerWorker: 1
  runPolicy: {cleanPodPolicy: Running}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          schedulerName: fluence
          containers:
          - name: launcher
            image: registry.k8s.io/pause:3.10
            command: [sleep, "3"]
            resources: {requests: {cpu: "1", memory: 256Mi}}
    Worker:
      replicas: %d
      template:
        spec:
          schedulerName: fluence
          containers:
          - name: worker
            image: registry.k8s.io/pause:3.10
            resources: {requests: {cpu: "2", memory: 512Mi}}`, name, workers)
}

// The MPI Operator (github.com/kubeflow/mpi-operator's v2 controller, a
// process of its own) runs MPIJobs whose pods fluence places: first
// without gang scheduling, where fluence makes one group of the MPIJob's
// launcher and workers by their owner; then with --gang-scheduling=fluence,
// where the operator makes a scheduler-plugins PodGroup of minMember
// workers + 1 and labels the pods with it. Each time the 5 pods (9 of the
// 16 CPUs) are bound whole, the launcher runs and the MPIJob succeeds.
func TestMPIOperatorJobsPlacedWhole(t *testing.T) {
	c := startCluster(t, localcluster.Options{JobController: true, GarbageCollector: true, NodeSim: &localcluster.NodeSimOptions{}})
	c.addNodes("node", 4, "4", "16Gi")
	if err := up.InstallCRD(c.Ctx, c.Config, deploy.PodGroupCRD); err != nil {
		t.Fatal(err)
	}
	inv := startInvariants(c)
	op := c.startMPIOperator("") // installs the MPIJob CRD before fluence starts
	c.startScheduler(fluenceConfig(t, nil), inv.registry())

	run := func(name string, whileRunning func()) {
		t.Helper()
		stop := c.watchWhole(map[string]int{"training.kubeflow.org/job-name=" + name: 5})
		c.createYAML(mpiJobYAML(name, 4))
		pods, err := c.waitPodsBound(time.Minute, 5, metav1.ListOptions{LabelSelector: "training.kubeflow.org/job-name=" + name}, nil)
		if err != nil {
			var state []string
			for _, p := range pods {
				state = append(state, fmt.Sprintf("%s node=%q", p.Name, p.Spec.NodeName))
			}
			t.Fatalf("MPIJob %s: pods not bound: %v\n%s", name, err, strings.Join(state, "\n"))
		}
		roles := map[string]int{}
		for _, p := range pods {
			roles[p.Labels["training.kubeflow.org/job-role"]]++
		}
		if roles["launcher"] != 1 || roles["worker"] != 4 {
			t.Errorf("MPIJob %s: pods by role %v, want 1 launcher and 4 workers", name, roles)
		}
		whileRunning()
		c.waitMPIJob(name, time.Minute, "Succeeded")
		if partial := stop(); len(partial) > 0 {
			t.Errorf("MPIJob %s seen bound in part:\n%s", name, strings.Join(partial, "\n"))
		}
	}
	run("plain", func() {
		if _, err := dynamic.NewForConfigOrDie(c.Config).Resource(podGroupGVR).Namespace(c.NS).Get(c.Ctx, "plain", metav1.GetOptions{}); err == nil {
			t.Errorf("the operator without --gang-scheduling made a PodGroup for MPIJob plain")
		}
	})

	op.Stop()
	c.startMPIOperator("fluence")
	// The operator deletes its PodGroup when the MPIJob is done: look
	// while it runs.
	run("gang", func() {
		pg, err := dynamic.NewForConfigOrDie(c.Config).Resource(podGroupGVR).Namespace(c.NS).Get(c.Ctx, "gang", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the operator made no PodGroup for MPIJob gang: %v", err)
		}
		if n, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember"); n != 5 {
			t.Errorf("PodGroup gang: minMember %d, want 5", n)
		}
		for _, p := range c.podsOf("training.kubeflow.org/job-name=gang") {
			if p.Labels["scheduling.x-k8s.io/pod-group"] != "gang" || p.Spec.SchedulerName != "fluence" {
				t.Errorf("pod %s: labels %v, scheduler %q; want scheduling.x-k8s.io/pod-group=gang and fluence", p.Name, p.Labels, p.Spec.SchedulerName)
			}
		}
	})
	c.checkInvariants(inv)
}

var mpiJobGVR = neighbourResources["kubeflow.org/v2beta1/MPIJob"]

// waitMPIJob waits until the MPIJob has the condition cond True.
func (c *cluster) waitMPIJob(name string, timeout time.Duration, cond string) {
	c.t.Helper()
	c.waitCondition(mpiJobGVR, "MPIJob", name, timeout, cond)
}
