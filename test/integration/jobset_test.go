package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// jobSetYAML is a JobSet of a driver (one Job of one pod of 1 CPU) and
// workers (two Jobs of two pods each, 3 CPUs a pod), every pod for
// fluence and running 3 s. No restart policy is given: JobSet's webhook
// defaults it.
func jobSetYAML(name string) string {
	return fmt.Sprintf(`apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: %s}
spec:
  replicatedJobs:
  - name: driver
    replicas: 1
    template:
      spec:
        parallelism: 1
        completions: 1
        template:
          spec:
            schedulerName: fluence
            containers:
            - name: driver
              image: registry.k8s.io/pause:3.10
              command: [sleep, "3"]
              resources: {requests: {cpu: "1", memory: 256Mi}}
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 2
        completions: 2
        template:
          spec:
            schedulerName: fluence
            containers:
            - name: worker
              image: registry.k8s.io/pause:3.10
              command: [sleep, "3"]
              resources: {requests: {cpu: "3", memory: 512Mi}}`, name)
}

// JobSet's own manager (sigs.k8s.io/jobset, a process of its own, its
// webhooks called by the API server) runs a JobSet whose Jobs' pods
// fluence places. fluence makes one group per replicated job, across its
// Jobs: the driver's pod, and the workers' 4 pods of two Jobs, which need
// 4 of the 4 nodes (3 of their 4 CPUs each) and are bound all together.
// No pod is seen bound in part of its group, the JobSet completes, and a
// JobSet that JobSet's validation refuses is refused by the API server.
// Then docs/examples/jobset.yaml, as written: its 4 pods bound whole.
func TestJobSetPlacedWhole(t *testing.T) {
	c := startCluster(t, localcluster.Options{JobController: true, GarbageCollector: true, NodeSim: &localcluster.NodeSimOptions{}})
	c.addNodes("node", 4, "4", "16Gi")
	inv := startInvariants(c)
	c.startJobSet() // installs the JobSet CRD before fluence starts
	c.startScheduler(fluenceConfig(t, nil), inv.registry())

	const name = "train"
	sel := func(rj string) string {
		return "jobset.sigs.k8s.io/jobset-name=" + name + ",jobset.sigs.k8s.io/replicatedjob-name=" + rj
	}
	example := "jobset.sigs.k8s.io/jobset-name=training" // docs/examples/jobset.yaml
	stop := c.watchWhole(map[string]int{sel("driver"): 1, sel("workers"): 4, example: 4})
	c.createYAML(jobSetYAML(name))

	js, err := dynamic.NewForConfigOrDie(c.Config).Resource(localcluster.JobSetResource).Namespace(c.NS).Get(c.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rjs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	for _, rj := range rjs {
		policy, _, _ := unstructured.NestedString(rj.(map[string]any), "template", "spec", "template", "spec", "restartPolicy")
		if policy != "OnFailure" {
			t.Errorf("replicated job %v: restart policy %q, want JobSet's default OnFailure", rj.(map[string]any)["name"], policy)
		}
	}

	pods, err := c.waitPodsBound(time.Minute, 5, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=" + name}, nil)
	if err != nil {
		var state []string
		for _, p := range pods {
			state = append(state, fmt.Sprintf("%s node=%q", p.Name, p.Spec.NodeName))
		}
		t.Fatalf("JobSet %s: pods not bound: %v\n%s", name, err, strings.Join(state, "\n"))
	}
	jobs, workerNodes := map[string]int{}, map[string]bool{}
	for _, p := range pods {
		if p.Spec.SchedulerName != "fluence" {
			t.Errorf("pod %s: scheduler %q", p.Name, p.Spec.SchedulerName)
		}
		jobs[p.Labels["batch.kubernetes.io/job-name"]]++
		if p.Labels["jobset.sigs.k8s.io/replicatedjob-name"] == "workers" {
			workerNodes[p.Spec.NodeName] = true
		}
	}
	want := map[string]int{name + "-driver-0": 1, name + "-workers-0": 2, name + "-workers-1": 2}
	if fmt.Sprint(jobs) != fmt.Sprint(want) {
		t.Errorf("pods by Job %v, want %v", jobs, want)
	}
	if len(workerNodes) != 4 {
		t.Errorf("the 4 workers share nodes: %v", workerNodes)
	}

	c.waitCondition(localcluster.JobSetResource, "JobSet", name, time.Minute, "Completed")

	file, err := os.ReadFile(filepath.Join(examplesDir, "jobset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c.createYAML(string(file))
	if _, err := c.waitPodsBound(time.Minute, 4, metav1.ListOptions{LabelSelector: example}, nil); err != nil {
		t.Fatalf("docs/examples/jobset.yaml: pods not bound: %v", err)
	}
	if partial := stop(); len(partial) > 0 {
		t.Errorf("seen bound in part:\n%s", strings.Join(partial, "\n"))
	}

	// JobSet's validating webhook: the first replicated job may not
	// depend on another.
	bad := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(jobSetYAML("bad")), &bad.Object); err != nil {
		t.Fatal(err)
	}
	rjs, _, _ = unstructured.NestedSlice(bad.Object, "spec", "replicatedJobs")
	rjs[0].(map[string]any)["dependsOn"] = []any{map[string]any{"name": "workers", "status": "Ready"}}
	_ = unstructured.SetNestedSlice(bad.Object, rjs, "spec", "replicatedJobs")
	_, err = dynamic.NewForConfigOrDie(c.Config).Resource(localcluster.JobSetResource).Namespace(c.NS).Create(c.Ctx, bad, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "DependsOn") {
		t.Errorf("a JobSet whose first replicated job depends on another: %v, want JobSet's webhook to refuse it", err)
	}
	c.checkInvariants(inv)
}
