package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

const rackKey = "example.com/rack"

// A v1beta1 PodGroup's topology key (schedulingConstraints.topology, gate
// TopologyAwareWorkloadScheduling) keeps the whole group on nodes sharing
// one value of that node label; a group no single value can hold is
// rejected with the largest domain named, and its PodGroup says so.
func TestNativeTopology(t *testing.T) {
	c := startCluster(t, localcluster.Options{FeatureGates: map[string]bool{"GenericWorkload": true, "TopologyAwareWorkloadScheduling": true}})
	for i, rack := range []string{"r1", "r1", "r2", "r2"} {
		c.addNode(fmt.Sprintf("node-%d", i), "2", "8Gi", 0, map[string]string{rackKey: rack})
	}
	startNodeSim(c, simOptions{})
	c.startFluenceProcess(t)

	// One rack holds 4 CPUs. Five 1-CPU pods fit the cluster but no rack.
	c.createTopologyPodGroup("near", 3, rackKey)
	c.createTopologyPodGroup("far", 5, rackKey)
	if pg, err := c.Client.SchedulingV1beta1().PodGroups(c.NS).Get(c.Ctx, "near", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if sc := pg.Spec.SchedulingConstraints; sc == nil || len(sc.Topology) != 1 {
		t.Fatal("the API server dropped schedulingConstraints.topology: TopologyAwareWorkloadScheduling is off")
	}
	near := nativePods("near", 3, "1")
	for _, p := range near {
		p.Annotations[runtimeAnnotation] = "30s"
	}
	c.createPods(near...)
	c.createPods(nativePods("far", 5, "1")...)

	pods, err := c.waitPodsBound(time.Minute, 3, metav1.ListOptions{}, func(p *corev1.Pod) bool { return strings.HasPrefix(p.Name, "near-") })
	if err != nil {
		t.Fatalf("near was not bound: %v", err)
	}
	racks := map[string]bool{}
	for _, p := range pods {
		n, err := c.Client.CoreV1().Nodes().Get(c.Ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		racks[n.Labels[rackKey]] = true
	}
	if len(racks) != 1 {
		t.Errorf("near's pods span racks %v, want one", racks)
	}
	c.nativeCondition("near", metav1.ConditionTrue)
	cond := c.nativeCondition("far", metav1.ConditionFalse)
	if cond.Reason != schedulingv1beta1.PodGroupReasonUnschedulable || !strings.Contains(cond.Message, "no single domain of topology key "+rackKey) {
		t.Errorf("far's condition does not say no rack holds it: %+v", cond)
	}
	c.waitForEvent(30*time.Second, "far-0", "FluenceGroupRejected", "the largest, "+rackKey+"=")
	if n := c.boundCount(names(nativePods("far", 5, "1"))...); n != 0 {
		t.Errorf("%d pods of a group no rack can hold were bound", n)
	}
}

// A group whose definition changes while it waits follows it: a PodGroup
// whose minCount drops to the pods that exist binds at the new size; one
// whose minCount rises waits for the new pods; a scheduler-plugins
// PodGroup whose minMember drops, and an Indexed Job whose parallelism and
// completions drop, bind at the new size. None wedges.
func TestGroupResize(t *testing.T) {
	c := startCluster(t, localcluster.Options{FeatureGates: map[string]bool{"GenericWorkload": true}, JobController: true})
	c.addNodes("node", 2, "4", "8Gi")
	// Installed before the scheduler starts, which then watches PodGroups
	// from its first discovery check on (a CRD installed later is found
	// at a later check).
	c.installPodGroupCRD()
	startNodeSim(c, simOptions{})
	c.startFluenceProcess(t)

	// minCount 6, four pods: waiting; then minCount 4.
	c.createNativePodGroup("shrink", 6)
	shrink := nativePods("shrink", 4, "1")
	c.createPods(shrink...)
	c.waitForEvent(30*time.Second, "shrink-0", "FailedScheduling", "of 6 exist")
	c.setMinCount("shrink", 4)
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(shrink)...)
	c.nativeCondition("shrink", metav1.ConditionTrue)

	// minCount 2, two pods not yet created; raised to 3 before they come:
	// the group waits for its third.
	c.createNativePodGroup("grow", 2)
	c.setMinCount("grow", 3)
	grow := nativePods("grow", 3, "1")
	c.createPods(grow[:2]...)
	c.waitForEvent(30*time.Second, "grow-0", "FailedScheduling", "of 3 exist")
	if n := c.boundCount(names(grow[:2])...); n != 0 {
		t.Fatalf("%d pods of a group grown to 3 bound with 2 pods", n)
	}
	c.createPods(grow[2])
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(grow)...)

	// A scheduler-plugins PodGroup of minMember 3 with two pods waits;
	// minMember 2 lets them bind.
	c.createPodGroup("members", 3)
	members := podGroupMembers("members", 2, "1")
	c.createPods(members...)
	c.waitForEvent(30*time.Second, "members-0", "FailedScheduling", "of 3 exist")
	if _, err := dynamic.NewForConfigOrDie(c.Config).Resource(podGroupGVR).Namespace(c.NS).Patch(c.Ctx, "members", types.MergePatchType,
		[]byte(`{"spec":{"minMember":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("PodGroup members: setting minMember 2: %v", err)
	}
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(members)...)

	// An Indexed Job of 12 one-CPU pods on 8 CPUs is rejected; shrunk to
	// 6, it runs whole.
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "elastic", Namespace: c.NS},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Completions:    ptr.To[int32](12),
			Parallelism:    ptr.To[int32](12),
			BackoffLimit:   ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{runtimeAnnotation: "1s"}},
				Spec: corev1.PodSpec{
					SchedulerName: plugin.Name,
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
				}},
		},
	}
	if _, err := c.Client.BatchV1().Jobs(c.NS).Create(c.Ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitForEvent(time.Minute, "", "FluenceGroupRejected", "job:elastic")
	patch := []byte(`{"spec":{"parallelism":6,"completions":6}}`)
	if _, err := c.Client.BatchV1().Jobs(c.NS).Patch(c.Ctx, "elastic", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("shrinking the Job: %v", err)
	}
	c.waitJobSucceeded("elastic", 6)
}

func (c *cluster) createTopologyPodGroup(name string, minCount int32, key string) {
	c.t.Helper()
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.NS},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy:      schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}},
			SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: key}}},
		},
	}
	if _, err := c.Client.SchedulingV1beta1().PodGroups(c.NS).Create(c.Ctx, pg, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("creating PodGroup %s: %v", name, err)
	}
}

// setMinCount changes a PodGroup's gang minCount (mutable in v1beta1).
func (c *cluster) setMinCount(name string, n int32) {
	c.t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"schedulingPolicy":{"gang":{"minCount":%d}}}}`, n)
	if _, err := c.Client.SchedulingV1beta1().PodGroups(c.NS).Patch(c.Ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		c.t.Fatalf("PodGroup %s: setting minCount %d: %v", name, n, err)
	}
}

// waitJobSucceeded waits until the Job counts n succeeded pods.
func (c *cluster) waitJobSucceeded(name string, n int32) {
	c.t.Helper()
	var last int32
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		j, err := c.Client.BatchV1().Jobs(c.NS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = j.Status.Succeeded
		return last >= n, nil
	})
	if err != nil {
		c.t.Fatalf("Job %s: %d pods succeeded, want %d", name, last, n)
	}
}
