package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// With the WorkloadWithJob gate, the Job controller gives an Indexed Job of
// completions = parallelism = 4 a PodGroup (scheduling.k8s.io/v1beta1,
// gang minCount 4) and names it in every pod it makes; fluence places the
// four pods as that group, whole. The control plane is localcluster's (the
// real Job controller, in this process) with the gates on for the API
// server, the Job controller and the scheduler alike.
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

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: c.NS},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Completions:    ptr.To[int32](4),
			Parallelism:    ptr.To[int32](4),
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
	created, err := c.Client.BatchV1().Jobs(c.NS).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The Job controller's PodGroup: controlled by the Job, gang of 4.
	var pgName string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pgs, err := c.Client.SchedulingV1beta1().PodGroups(c.NS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, pg := range pgs.Items {
			if ref := metav1.GetControllerOf(&pg); ref != nil && ref.Kind == "Job" && ref.UID == created.UID {
				pgName = pg.Name
				if g := pg.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 4 {
					t.Errorf("PodGroup %s: policy %+v, want gang minCount 4", pg.Name, pg.Spec.SchedulingPolicy)
				}
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no PodGroup controlled by Job %s: %v", job.Name, err)
	}

	// Its four pods name it, and one allocation of that group holds them.
	pods, err := c.waitPodsBound(time.Minute, 4, metav1.ListOptions{LabelSelector: "job-name=" + job.Name}, nil)
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
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		j, err := c.Client.BatchV1().Jobs(c.NS).Get(ctx, job.Name, metav1.GetOptions{})
		return err == nil && j.Status.Succeeded == 4, nil
	})
	if err != nil {
		t.Errorf("the Job did not complete: %v", err)
	}
	c.checkInvariants(inv)
}
