package integration

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rolePods returns n pods of one role of the multi-role group mpi
// (launcher=1,workers=8), named mpi-<role>-<i>.
func rolePods(role string, n int, cpu string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		p := newTestPod(fmt.Sprintf("mpi-%s-%d", role, i), "fluence", cpu, "", 0, map[string]string{
			"fluence.flux-framework.org/pod-group": "mpi",
			"fluence.flux-framework.org/role":      role,
		})
		p.Annotations = map[string]string{"fluence.flux-framework.org/role-sizes": "launcher=1,workers=8"}
		out = append(out, p)
	}
	return out
}

// A multi-role gang, one launcher (1 CPU) and eight workers (4 CPUs each),
// labelled as one group with a count per role, on five nodes of 8 CPUs.
// Nine workers and no launcher are as many pods as the group's size, and
// would fit, but are not the group: none binds. With the launcher, the
// gang (33 CPUs) does not fit beside another scheduler's pod holding a
// node (32 CPUs free): none binds. Once that pod goes, the launcher and
// eight workers bind together, and the ninth worker joins after.
func TestMultiRoleGangBindsWhole(t *testing.T) {
	c, inv, _, _ := startFluence(t, 5, "8", "16Gi", nil)

	workers := rolePods("workers", 9, "4")
	c.createPods(workers...)
	time.Sleep(3 * time.Second)
	if n := c.boundCount(names(workers)...); n != 0 {
		t.Fatalf("%d of 9 workers bound without their launcher", n)
	}

	blocker := newTestPod("blocker", "other-scheduler", "8", "", 0, nil)
	blocker.Spec.NodeName = "node-0"
	c.createPods(blocker)
	c.waitForPodPhase(30*time.Second, corev1.PodRunning, "blocker")

	launcher := rolePods("launcher", 1, "1")
	c.createPods(launcher...)
	all := append(names(launcher), names(workers)...)
	c.waitForEvent(30*time.Second, "", "FluenceGroupWaiting", "cpu: needs")
	time.Sleep(2 * time.Second)
	if n := c.boundCount(all...); n != 0 {
		t.Fatalf("%d of the gang's pods bound while the gang does not fit", n)
	}

	if err := c.Client.CoreV1().Pods(c.NS).Delete(c.Ctx, "blocker", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitForPodPhase(60*time.Second, corev1.PodRunning, all...)
	c.checkInvariants(inv)
}
