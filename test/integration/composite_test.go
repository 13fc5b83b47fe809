package integration

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// A CompositePodGroup (v1alpha3, gate CompositePodGroup, which needs
// TopologyAwareWorkloadScheduling) of two children,
// a launcher PodGroup of minCount 1 (1 CPU pods) and a workers PodGroup of
// minCount 8 (4 CPU pods), is one gang: on five nodes of 8 CPUs, one held
// by another scheduler's pod, it does not fit and nothing of it binds;
// once that pod goes, the launcher and the workers bind together.
func TestCompositePodGroupBindsWhole(t *testing.T) {
	c := startCluster(t, localcluster.Options{FeatureGates: map[string]bool{"GenericWorkload": true, "TopologyAwareWorkloadScheduling": true, "CompositePodGroup": true}})
	c.addNodes("node", 5, "8", "16Gi")
	startNodeSim(c, simOptions{})
	c.startFluenceProcess(t)

	blocker := newTestPod("blocker", "other-scheduler", "8", "", 0, nil)
	blocker.Spec.NodeName = "node-0"
	c.createPods(blocker)
	c.waitForPodPhase(30*time.Second, corev1.PodRunning, "blocker")

	cpg := &schedulingv1alpha3.CompositePodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "mpi", Namespace: c.NS},
		Spec: schedulingv1alpha3.CompositePodGroupSpec{
			WorkloadRef:      &schedulingv1alpha3.WorkloadReference{WorkloadName: "mpi", TemplateName: "mpi"},
			SchedulingPolicy: schedulingv1alpha3.CompositePodGroupSchedulingPolicy{Gang: &schedulingv1alpha3.CompositeGangSchedulingPolicy{MinGroupCount: 2}},
		},
	}
	if _, err := c.Client.SchedulingV1alpha3().CompositePodGroups(c.NS).Create(c.Ctx, cpg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CompositePodGroup mpi: %v", err)
	}
	parent := "mpi"
	for _, child := range []struct {
		name string
		min  int32
	}{{"mpi-launcher", 1}, {"mpi-workers", 8}} {
		pg := &schedulingv1beta1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: child.name, Namespace: c.NS},
			Spec: schedulingv1beta1.PodGroupSpec{
				ParentCompositePodGroupName: &parent,
				WorkloadRef:                 &schedulingv1beta1.WorkloadReference{WorkloadName: "mpi", TemplateName: child.name},
				SchedulingPolicy:            schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: child.min}},
			},
		}
		got, err := c.Client.SchedulingV1beta1().PodGroups(c.NS).Create(c.Ctx, pg, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating PodGroup %s: %v", child.name, err)
		}
		if p := got.Spec.ParentCompositePodGroupName; p == nil || *p != parent {
			t.Fatal("the API server dropped spec.parentCompositePodGroupName: CompositePodGroup is off")
		}
	}
	launcher := nativePods("mpi-launcher", 1, "1")
	workers := nativePods("mpi-workers", 8, "4")
	c.createPods(launcher...)
	c.createPods(workers...)
	all := append(names(launcher), names(workers)...)

	c.waitForEvent(30*time.Second, "", "FluenceGroupWaiting", "cpu: needs")
	time.Sleep(2 * time.Second)
	if n := c.boundCount(all...); n != 0 {
		t.Fatalf("%d of the composite gang's 9 pods bound while it does not fit", n)
	}

	if err := c.Client.CoreV1().Pods(c.NS).Delete(c.Ctx, "blocker", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pods, err := c.waitPodsBound(time.Minute, 9, metav1.ListOptions{}, func(p *corev1.Pod) bool { return strings.HasPrefix(p.Name, "mpi-") })
	if err != nil {
		t.Fatalf("the composite gang was not bound: %v", err)
	}
	if len(pods) != 9 {
		t.Errorf("%d pods bound, want the launcher and 8 workers", len(pods))
	}
}
