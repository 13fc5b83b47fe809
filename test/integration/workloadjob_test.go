package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// With the WorkloadWithJob gate, the Job controller gives an Indexed Job of
// completions = parallelism = 4 a PodGroup (scheduling.k8s.io/v1beta1) and
// names it in every pod it makes. A Job whose spec.scheduling asks for a
// gang gets a gang PodGroup of minCount 4, and fluence places the four pods
// as that group, whole. A Job that asks for nothing gets the controller's
// default, a basic PodGroup, which would make each pod a lone pod: fluence
// groups those pods by their Job instead, whole as before the gate. The
// control plane is localcluster's (the real Job controller, in this
// process) with the gates on for the API server, the Job controller and the
// scheduler alike.
func TestWorkloadWithJob(t *testing.T) {
	c := startCluster(t, localcluster.Options{
		// The next cluster of the suite turns them off again.
		FeatureGates:  map[string]bool{"GenericWorkload": true, "WorkloadWithJob": true},
		JobController: true,
		NodeSim:       &localcluster.NodeSimOptions{},
	})
	c.addNodes("node", 3, "2", "8Gi")
	ctx := c.Ctx
	inv := startInvariants(c)
	c.startScheduler(fluenceConfig(t, nil), inv.registry())

	job := indexedJob(c.NS, "train", 4)
	job.Spec.Scheduling = &batchv1.JobSchedulingConfiguration{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{}}}
	train, err := c.Client.BatchV1().Jobs(c.NS).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := c.Client.BatchV1().Jobs(c.NS).Create(ctx, indexedJob(c.NS, "plain", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The Job controller's PodGroups, controlled by their Jobs: train's a
	// gang of 4, plain's basic.
	var pgName string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pgs, err := c.Client.SchedulingV1beta1().PodGroups(c.NS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		seen := 0
		for _, pg := range pgs.Items {
			ref := metav1.GetControllerOf(&pg)
			switch {
			case ref == nil || ref.Kind != "Job":
			case ref.UID == train.UID:
				pgName = pg.Name
				if g := pg.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 4 {
					t.Errorf("PodGroup %s: policy %+v, want gang minCount 4", pg.Name, pg.Spec.SchedulingPolicy)
				}
				seen++
			case ref.UID == plain.UID:
				if pg.Spec.SchedulingPolicy.Basic == nil {
					t.Errorf("PodGroup %s of a Job without spec.scheduling: policy %+v, want the controller's default, basic", pg.Name, pg.Spec.SchedulingPolicy)
				}
				seen++
			}
		}
		return seen == 2, nil
	})
	if err != nil {
		t.Fatalf("no PodGroups controlled by the Jobs train and plain: %v", err)
	}

	// train's four pods name its PodGroup, and one allocation of that
	// group holds them.
	pods, err := c.waitPodsBound(time.Minute, 4, metav1.ListOptions{LabelSelector: "job-name=train"}, nil)
	if err != nil || len(pods) != 4 {
		t.Fatalf("the Job's 4 pods were not all bound: %d pods", len(pods))
	}
	records := map[string]int{}
	for _, p := range pods {
		if sg := p.Spec.SchedulingGroup; sg == nil || ptr.Deref(sg.PodGroupName, "") != pgName {
			t.Errorf("pod %s: schedulingGroup %+v, want PodGroup %s", p.Name, sg, pgName)
		}
		records[p.Annotations[plugin.AllocationKey]]++
	}
	if len(records) != 1 {
		t.Errorf("the Job's pods are in %d allocations, want one: %v", len(records), records)
	}
	for rec := range records {
		if !strings.HasPrefix(rec, c.NS+"/native-podgroup:"+pgName+"@") {
			t.Errorf("allocation %q: not the PodGroup's group %s/native-podgroup:%s", rec, c.NS, pgName)
		}
	}

	// plain's pods are one group, keyed by their Job.
	pods, err = c.waitPodsBound(time.Minute, 2, metav1.ListOptions{LabelSelector: "job-name=plain"}, nil)
	if err != nil || len(pods) != 2 {
		t.Fatalf("the Job plain's 2 pods were not all bound: %d pods", len(pods))
	}
	for _, p := range pods {
		if rec := p.Annotations[plugin.AllocationKey]; !strings.HasPrefix(rec, c.NS+"/job:plain@") {
			t.Errorf("pod %s of a Job with the default PodGroup: allocation %q, want the Job's group %s/job:plain", p.Name, rec, c.NS)
		}
	}
	for _, name := range []string{"train", "plain"} {
		c.waitJobSucceeded(name, map[string]int32{"train": 4, "plain": 2}[name])
	}
	c.checkInvariants(inv)
}

// indexedJob is an Indexed Job of n one-CPU fluence pods, completions =
// parallelism = n, each sleeping 2 s.
func indexedJob(ns, name string, n int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Completions:    ptr.To(n),
			Parallelism:    ptr.To(n),
			BackoffLimit:   ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				SchedulerName: plugin.Name,
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "main", Image: "busybox:1.36", Command: []string{"sleep", "2"},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
				}},
			}},
		},
	}
}
