package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

const kueueRackLabel = "fluence.flux-framework.org/rack"

// kueueJob is an Indexed Job of n pods of cpu each, running seconds, for
// the LocalQueue queue, scheduled by fluence; it is created unsuspended,
// as a user would write it: Kueue's webhook suspends it.
func kueueJob(ns, name, queue string, n int32, cpu string, seconds int) *batchv1.Job {
	job := indexedJob(ns, name, n)
	job.Labels = map[string]string{localcluster.KueueQueueLabel: queue}
	ctr := &job.Spec.Template.Spec.Containers[0]
	ctr.Command = []string{"sleep", fmt.Sprint(seconds)}
	ctr.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}
	return job
}

// Kueue (sigs.k8s.io/kueue, its manager as a process of its own, webhooks
// and all) decides when, fluence where. A ClusterQueue with the cluster's
// capacity (16 CPUs) and a LocalQueue; Job a (4 pods of 2 CPUs, 8 CPUs) is
// suspended by Kueue's webhook, admitted by Kueue and bound whole by
// fluence; Job b (4 of 3 CPUs, 12 CPUs) exceeds the quota a leaves and
// stays suspended until a finishes, then is admitted and bound whole. Then
// Kueue's topology-aware scheduling: a Topology of racks and hosts, a
// flavor naming it, and a Job that requires one rack; Kueue chooses the
// rack and the nodes (a scheduling gate on each pod, lifted with a node
// selector for its host), and fluence binds the group whole there. Between
// the two, three plain pods go through Kueue's gate (its pod integration)
// and are bound whole once Kueue admits them.
func TestKueueAdmitsFluencePlaces(t *testing.T) {
	c := startCluster(t, localcluster.Options{JobController: true, GarbageCollector: true, NodeSim: &localcluster.NodeSimOptions{}})
	for i := range 4 {
		c.addNode(fmt.Sprintf("node-%d", i), "4", "16Gi", 0, map[string]string{kueueRackLabel: fmt.Sprintf("rack-%d", i/2), "pool": "a"})
	}
	inv := startInvariants(c)
	c.startScheduler(fluenceConfig(t, nil), inv.registry())
	c.startKueue()

	c.createYAML(`apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: research}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 16}
      - {name: memory, nominalQuota: 64Gi}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team-a}
spec: {clusterQueue: research}`)

	stopWatch := c.watchWhole(map[string]int{"job-name=a": 4, "job-name=b": 4})
	jobs := c.Client.BatchV1().Jobs(c.NS)
	// The LocalQueue may take a moment to be known to Kueue's cache; a Job
	// created before is still queued, and admitted once it is.
	if _, err := jobs.Create(c.Ctx, kueueJob(c.NS, "a", "team-a", 4, "2", 6), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a := c.waitJob("a", 10*time.Second, "created", func(*batchv1.Job) bool { return true })
	if !jobSuspended(a) {
		t.Errorf("Job a: created unsuspended, Kueue's webhook left spec.suspend %v", a.Spec.Suspend)
	}
	c.waitJob("a", time.Minute, "admitted (unsuspended) with 4 active pods", func(j *batchv1.Job) bool {
		return !jobSuspended(j) && j.Status.Active == 4
	})
	if _, err := c.waitPodsBound(time.Minute, 4, metav1.ListOptions{LabelSelector: "job-name=a"}, nil); err != nil {
		t.Fatalf("Job a's pods not bound: %v", err)
	}

	if _, err := jobs.Create(c.Ctx, kueueJob(c.NS, "b", "team-a", 4, "3", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// b waits for quota while a runs.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		b, err := jobs.Get(c.Ctx, "b", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		aNow, err := jobs.Get(c.Ctx, "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !jobSuspended(b) && !jobFinished(aNow) {
			t.Fatalf("Job b admitted while a (8 of the 16 CPUs of quota) still runs; b asks for 12")
		}
		if pods := c.podsOf("job-name=b"); len(pods) > 0 && !jobFinished(aNow) {
			t.Fatalf("Job b has %d pods while a runs", len(pods))
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.waitJob("a", time.Minute, "finished", jobFinished)
	c.waitJob("b", time.Minute, "admitted with 4 active pods", func(j *batchv1.Job) bool {
		return !jobSuspended(j) && j.Status.Active == 4
	})
	if _, err := c.waitPodsBound(time.Minute, 4, metav1.ListOptions{LabelSelector: "job-name=b"}, nil); err != nil {
		t.Fatalf("Job b's pods not bound: %v", err)
	}
	c.waitJob("b", time.Minute, "finished", jobFinished)
	if partial := stopWatch(); len(partial) > 0 {
		t.Errorf("Jobs seen bound in part:\n%s", strings.Join(partial, "\n"))
	}

	// Plain pods through Kueue's gate: Kueue's pod integration makes the
	// three pods one workload (its group labels), its webhook gates them
	// on creation, its admission lifts the gates of all three; fluence
	// reads the same labels as one group of 3 (no fluence label on the
	// pods) and binds them whole.
	{
		stop := c.watchWhole(map[string]int{"kueue.x-k8s.io/pod-group-name=sweep": 3})
		var names []string
		for i := range 3 {
			pod := newTestPod(fmt.Sprintf("sweep-%d", i), "fluence", "1", "1Gi", 0, map[string]string{
				localcluster.KueueQueueLabel: "team-a", "kueue.x-k8s.io/pod-group-name": "sweep",
			})
			pod.Annotations = map[string]string{"kueue.x-k8s.io/pod-group-total-count": "3"}
			pod.Spec.Containers[0].Command = []string{"sleep", "2"}
			created, err := c.Client.CoreV1().Pods(c.NS).Create(c.Ctx, pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(created.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == "kueue.x-k8s.io/admission" }) {
				t.Errorf("pod %s: created without Kueue's gate: %v", pod.Name, created.Spec.SchedulingGates)
			}
			names = append(names, pod.Name)
		}
		if _, err := c.waitPodsBound(time.Minute, 3, metav1.ListOptions{LabelSelector: "kueue.x-k8s.io/pod-group-name=sweep"}, nil); err != nil {
			t.Fatalf("the pods admitted by Kueue not bound: %v", err)
		}
		c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names...)
		if partial := stop(); len(partial) > 0 {
			t.Errorf("the pod group seen bound in part:\n%s", strings.Join(partial, "\n"))
		}
	}

	// Topology-aware scheduling.
	{
		c.createYAML(`apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: racks}
spec:
  levels:
  - nodeLabel: ` + kueueRackLabel + `
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: tas-flavor}
spec:
  nodeLabels: {pool: a}
  topologyName: racks
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: tas}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: tas-flavor
      resources:
      - {name: cpu, nominalQuota: 16}
      - {name: memory, nominalQuota: 64Gi}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team-tas}
spec: {clusterQueue: tas}`)
		stop := c.watchWhole(map[string]int{"job-name=rack": 3})
		job := kueueJob(c.NS, "rack", "team-tas", 3, "2", 3)
		job.Spec.Template.Annotations = map[string]string{"kueue.x-k8s.io/podset-required-topology": kueueRackLabel}
		if _, err := jobs.Create(c.Ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		c.waitJob("rack", time.Minute, "admitted with 3 active pods", func(j *batchv1.Job) bool {
			return !jobSuspended(j) && j.Status.Active == 3
		})
		pods, err := c.waitPodsBound(time.Minute, 3, metav1.ListOptions{LabelSelector: "job-name=rack"}, nil)
		if err != nil {
			var state []string
			for _, p := range pods {
				state = append(state, fmt.Sprintf("%s node=%q gates=%v nodeSelector=%v", p.Name, p.Spec.NodeName, p.Spec.SchedulingGates, p.Spec.NodeSelector))
			}
			t.Fatalf("the TAS Job's pods not bound: %v\n%s", err, strings.Join(state, "\n"))
		}
		racks := map[string]bool{}
		for _, p := range pods {
			node, err := c.Client.CoreV1().Nodes().Get(c.Ctx, p.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			racks[node.Labels[kueueRackLabel]] = true
			for k, v := range p.Spec.NodeSelector {
				if node.Labels[k] != v {
					t.Errorf("pod %s on %s, whose %s is %q: Kueue's node selector asks for %q", p.Name, node.Name, k, node.Labels[k], v)
				}
			}
			t.Logf("pod %s: node %s (%s), Kueue's node selector %v", p.Name, node.Name, node.Labels[kueueRackLabel], p.Spec.NodeSelector)
		}
		if len(racks) != 1 {
			t.Errorf("the Job that requires one rack was bound across racks %v", racks)
		}
		c.waitJob("rack", time.Minute, "finished", jobFinished)
		if partial := stop(); len(partial) > 0 {
			t.Errorf("the TAS Job seen bound in part:\n%s", strings.Join(partial, "\n"))
		}
	}
	c.checkInvariants(inv)
}

// Kueue preempts, fluence places: a low-priority Job holds the whole quota
// (4 pods of 4 CPUs, running until stopped); a high-priority Job of 2 pods
// of 4 CPUs arrives. Kueue evicts the low one's workload (it suspends the
// Job, and the Job controller deletes its 4 pods), then admits the high
// one, which fluence binds whole. The low Job's pods go together (none is
// left bound while another of them is gone), and it waits suspended for
// its quota again.
func TestKueuePreemptsWhole(t *testing.T) {
	c := startCluster(t, localcluster.Options{JobController: true, GarbageCollector: true, NodeSim: &localcluster.NodeSimOptions{}})
	c.addNodes("node", 4, "4", "16Gi")
	inv := startInvariants(c)
	c.startScheduler(fluenceConfig(t, nil), inv.registry())
	c.startKueue()
	c.createYAML(kueuePriorityQueues(16, 100, 1000))

	stop := c.watchWhole(map[string]int{"job-name=low": 4, "job-name=high": 2})
	jobs := c.Client.BatchV1().Jobs(c.NS)
	low := kueueJob(c.NS, "low", "team-a", 4, "4", 0)
	low.Labels["kueue.x-k8s.io/priority-class"] = "low"
	low.Spec.Template.Spec.Containers[0].Command = nil // runs until stopped
	if _, err := jobs.Create(c.Ctx, low, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.waitPodsBound(time.Minute, 4, metav1.ListOptions{LabelSelector: "job-name=low"}, nil); err != nil {
		t.Fatalf("the low Job's pods not bound: %v", err)
	}
	high := kueueJob(c.NS, "high", "team-a", 2, "4", 3)
	high.Labels["kueue.x-k8s.io/priority-class"] = "high"
	if _, err := jobs.Create(c.Ctx, high, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitJob("low", time.Minute, "evicted (suspended)", jobSuspended)
	if _, err := c.waitPodsBound(time.Minute, 2, metav1.ListOptions{LabelSelector: "job-name=high"}, nil); err != nil {
		t.Fatalf("the high Job's pods not bound after the preemption: %v", err)
	}
	for _, p := range c.podsOf("job-name=low") {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			t.Errorf("pod %s of the evicted Job is still live on %q", p.Name, p.Spec.NodeName)
		}
	}
	c.waitJob("high", time.Minute, "finished", jobFinished)
	if partial := stop(); len(partial) > 0 {
		t.Errorf("seen bound in part:\n%s", strings.Join(partial, "\n"))
	}
	c.checkInvariants(inv)
}

// kueuePriorityQueues is the YAML of a ClusterQueue research of cpu CPUs
// (and 64Gi) that preempts within itself by workload priority, its
// LocalQueue team-a, and the WorkloadPriorityClasses low and high.
func kueuePriorityQueues(cpu, low, high int) string {
	return fmt.Sprintf(`apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: low}
value: %d
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: %d
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: research}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: %d}
      - {name: memory, nominalQuota: 64Gi}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team-a}
spec: {clusterQueue: research}`, low, high, cpu)
}
