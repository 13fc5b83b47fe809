package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// A pod with scheduling gates is not ready to be scheduled (Kueue, for one,
// gates pods until their workload is admitted): kube-scheduler never
// tries it, so a group of gated pods must hold nothing meanwhile. Here a
// gated group that would take the whole cluster is created first; an
// ungated group behind it runs anyway, and the gated one runs once its
// gates are lifted.
func TestGatedGroupHoldsNothing(t *testing.T) {
	c, inv, _, _ := startFluence(t, 2, "2", "4Gi", nil)

	gated := groupPods("gated", 2, "2", 2*time.Second, 0)
	for _, p := range gated {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/admission"}}
	}
	c.createPods(gated...)
	// Let the scheduler see them (and, before this was fixed, place them).
	time.Sleep(2 * time.Second)

	free := groupPods("free", 2, "2", 2*time.Second, 0)
	c.createPods(free...)
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(free)...)
	if n := c.boundCount(names(gated)...); n != 0 {
		t.Fatalf("%d gated pods bound", n)
	}

	for _, p := range gated {
		c.liftGates(p)
	}
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(gated)...)
	c.checkInvariants(inv)
}

// liftGates removes a pod's scheduling gates, as Kueue does when it admits
// the pod's workload, retrying on conflicts with the pod's other writers.
func (c *cluster) liftGates(p *corev1.Pod) {
	c.t.Helper()
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		cur, err := c.Client.CoreV1().Pods(c.NS).Get(c.Ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		cur.Spec.SchedulingGates = nil
		_, err = c.Client.CoreV1().Pods(c.NS).Update(c.Ctx, cur, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		c.t.Fatalf("lifting the gates of %s: %v", p.Name, err)
	}
}
