package integration

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// Helpers for the tests that run fluence beside the real Kueue, MPI
// Operator and JobSet (localcluster.StartKueue, StartMPIOperator,
// StartJobSet): each is built from
// its published module (third_party/) once per run and started as a
// process of its own against the test's API server.

// startKueue runs Kueue against c; it stops with the test.
func (c *cluster) startKueue() *localcluster.Process {
	c.t.Helper()
	start := time.Now()
	p, err := localcluster.StartKueue(c.Ctx, c.Config, localcluster.KueueOptions{Dir: c.t.TempDir(), Kubeconfig: c.kubeconfigFile()})
	if err != nil {
		c.t.Fatalf("starting Kueue: %v", err)
	}
	c.t.Logf("Kueue ready in %v (log %s)", time.Since(start).Round(time.Millisecond), p.Log)
	c.t.Cleanup(func() {
		if c.t.Failed() {
			c.t.Logf("the end of Kueue's log:\n%s", p.Tail(40))
		}
		p.Stop()
	})
	return p
}

// startMPIOperator runs the MPI Operator against c (with gang, its
// --gang-scheduling); it stops with the test.
func (c *cluster) startMPIOperator(gang string) *localcluster.Process {
	c.t.Helper()
	start := time.Now()
	p, err := localcluster.StartMPIOperator(c.Ctx, c.Config, localcluster.MPIOperatorOptions{
		Dir: c.t.TempDir(), Kubeconfig: c.kubeconfigFile(), GangScheduling: gang,
	})
	if err != nil {
		c.t.Fatalf("starting the MPI Operator: %v", err)
	}
	c.t.Logf("MPI Operator (--gang-scheduling=%q) ready in %v", gang, time.Since(start).Round(time.Millisecond))
	c.t.Cleanup(func() {
		if c.t.Failed() {
			c.t.Logf("the end of the MPI Operator's log:\n%s", p.Tail(40))
		}
		p.Stop()
	})
	return p
}

// startJobSet runs JobSet's manager against c; it stops with the test.
func (c *cluster) startJobSet() *localcluster.Process {
	c.t.Helper()
	start := time.Now()
	p, err := localcluster.StartJobSet(c.Ctx, c.Config, localcluster.JobSetOptions{Dir: c.t.TempDir(), Kubeconfig: c.kubeconfigFile()})
	if err != nil {
		c.t.Fatalf("starting JobSet: %v", err)
	}
	c.t.Logf("JobSet ready in %v (log %s)", time.Since(start).Round(time.Millisecond), p.Log)
	c.t.Cleanup(func() {
		if c.t.Failed() {
			c.t.Logf("the end of JobSet's log:\n%s", p.Tail(40))
		}
		p.Stop()
	})
	return p
}

// resources maps the kinds the neighbour tests create through the dynamic
// client to their resources.
var neighbourResources = map[string]schema.GroupVersionResource{
	"kueue.x-k8s.io/v1beta2/ResourceFlavor":        {Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"},
	"kueue.x-k8s.io/v1beta2/ClusterQueue":          {Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"},
	"kueue.x-k8s.io/v1beta2/LocalQueue":            {Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "localqueues"},
	"kueue.x-k8s.io/v1beta2/Topology":              {Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "topologies"},
	"kueue.x-k8s.io/v1beta2/Workload":              {Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"},
	"kueue.x-k8s.io/v1beta2/WorkloadPriorityClass": {Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloadpriorityclasses"},
	"kubeflow.org/v2beta1/MPIJob":                  {Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"},
	"jobset.x-k8s.io/v1alpha2/JobSet":              localcluster.JobSetResource,
}

// waitCondition waits until the object (a kind's name, in c.NS) has the
// status condition cond True.
func (c *cluster) waitCondition(gvr schema.GroupVersionResource, kind, name string, timeout time.Duration, cond string) {
	c.t.Helper()
	var last []any
	err := wait.PollUntilContextTimeout(c.Ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		obj, err := dynamic.NewForConfigOrDie(c.Config).Resource(gvr).Namespace(c.NS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last, _, _ = unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, x := range last {
			m, _ := x.(map[string]any)
			if m["type"] == cond && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		c.t.Fatalf("%s %s: no condition %s within %v; conditions %v", kind, name, cond, timeout, last)
	}
}

// createYAML creates each object of the YAML documents (separated by
// "---"), in c.NS when namespaced and without a namespace.
func (c *cluster) createYAML(docs string) {
	c.t.Helper()
	dyn := dynamic.NewForConfigOrDie(c.Config)
	for _, doc := range strings.Split(docs, "\n---\n") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			c.t.Fatalf("%v in:\n%s", err, doc)
		}
		gvr, ok := neighbourResources[obj.GetAPIVersion()+"/"+obj.GetKind()]
		if !ok {
			c.t.Fatalf("no resource known for %s %s", obj.GetAPIVersion(), obj.GetKind())
		}
		var err error
		switch obj.GetKind() {
		case "ResourceFlavor", "ClusterQueue", "Topology", "WorkloadPriorityClass":
			_, err = dyn.Resource(gvr).Create(c.Ctx, obj, metav1.CreateOptions{})
		default:
			if obj.GetNamespace() == "" {
				obj.SetNamespace(c.NS)
			}
			_, err = dyn.Resource(gvr).Namespace(obj.GetNamespace()).Create(c.Ctx, obj, metav1.CreateOptions{})
		}
		if err != nil {
			c.t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// podsOf lists c.NS's pods with the label selector.
func (c *cluster) podsOf(selector string) []corev1.Pod {
	c.t.Helper()
	list, err := c.Client.CoreV1().Pods(c.NS).List(c.Ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		c.t.Fatal(err)
	}
	return list.Items
}

// watchWhole polls the pods each selector picks (n of them) until the
// returned stop is called, and reports every group that stayed bound in
// part for a second or more: some but not all of its live pods bound, or,
// before any of them ended, fewer than n. fluence binds a group's pods one
// API call after another once all are reserved, so a poll may catch a
// group for a few milliseconds between them; a second is far beyond that.
// It is a second check, beside the invariant checker's, for groups the
// checker does not know (it follows fluence's labels).
func (c *cluster) watchWhole(groups map[string]int) (stop func() []string) {
	var partial []string
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		since := map[string]time.Time{}
		reported := map[string]bool{}
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			for sel, n := range groups {
				list, err := c.Client.CoreV1().Pods(c.NS).List(c.Ctx, metav1.ListOptions{LabelSelector: sel})
				if err != nil {
					continue
				}
				live, bound, ended := 0, 0, 0
				for _, p := range list.Items {
					if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
						ended++
						continue
					}
					live++
					if p.Spec.NodeName != "" {
						bound++
					}
				}
				if bound == 0 || (bound == live && (ended > 0 || bound >= n)) {
					delete(since, sel)
					continue
				}
				if since[sel].IsZero() {
					since[sel] = time.Now()
				} else if time.Since(since[sel]) >= time.Second && !reported[sel] {
					reported[sel] = true
					partial = append(partial, fmt.Sprintf("%s: %d of %d bound (%d live, %d ended) for %v", sel, bound, n, live, ended, time.Since(since[sel]).Round(time.Millisecond)))
				}
			}
			select {
			case <-quit:
				return
			case <-c.Ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() []string {
		close(quit)
		<-done
		return partial
	}
}

// waitJob polls until the Job meets cond, failing the test after timeout.
func (c *cluster) waitJob(name string, timeout time.Duration, what string, cond func(*batchv1.Job) bool) *batchv1.Job {
	c.t.Helper()
	var job *batchv1.Job
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		j, err := c.Client.BatchV1().Jobs(c.NS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		job = j
		return cond(j), nil
	})
	if err != nil {
		c.t.Fatalf("Job %s: not %s within %v (status %+v)", name, what, timeout, job.Status)
	}
	return job
}

func jobFinished(j *batchv1.Job) bool {
	for _, cond := range j.Status.Conditions {
		if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func jobSuspended(j *batchv1.Job) bool { return j.Spec.Suspend != nil && *j.Spec.Suspend }
