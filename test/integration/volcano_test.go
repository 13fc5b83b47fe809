package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// volcanoPodGroupCRD stands in for Volcano's PodGroup CRD (its group,
// version, kind and plural; fluence reads spec.minMember).
var volcanoPodGroupCRD = workloadCRD{schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}, "PodGroup"}

// A Volcano PodGroup is a group source where its CRD is installed: pods
// annotated scheduling.k8s.io/group-name bind whole once minMember of
// them exist, and fewer bind not at all; the fields fluence does not act
// on (a queue other than default) are named in a FluenceUnsupported event.
func TestVolcanoPodGroup(t *testing.T) {
	c := newCluster(t)
	c.installWorkloadCRD(volcanoPodGroupCRD)
	c.addNodes("node", 5, "2", "8Gi")
	inv := startInvariants(c)
	c.startScheduler(fluenceConfig(t, nil), inv.registry())
	c.createCR(volcanoPodGroupCRD, "solver", map[string]any{"minMember": int64(3), "queue": "research"})
	c.createCR(volcanoPodGroupCRD, "half", map[string]any{"minMember": int64(2)})

	pod := func(name, group string) *corev1.Pod {
		p := newTestPod(name, "fluence", "2", "", 0, nil)
		p.Annotations = map[string]string{"scheduling.k8s.io/group-name": group}
		return p
	}
	var solver []*corev1.Pod
	for i := range 3 {
		solver = append(solver, pod(fmt.Sprintf("solver-%d", i), "solver"))
	}
	half := pod("half-0", "half")
	c.createPods(append(solver, half)...)
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return c.boundCount(names(solver)...) == 3, nil
	})
	if err != nil {
		t.Fatalf("the Volcano PodGroup's 3 pods: %d bound after a minute", c.boundCount(names(solver)...))
	}
	c.waitForEvent(30*time.Second, "solver-0", "FluenceUnsupported", "Volcano's spec.queue")
	c.waitForEvent(30*time.Second, "half-0", "FailedScheduling", "volcano-podgroup:half: 1 of 2 exist")
	if n := c.boundCount(half.Name); n != 0 {
		t.Fatalf("half-0 bound alone; its PodGroup's minMember is 2")
	}
	second := pod("half-1", "half")
	c.createPods(second)
	err = wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return c.boundCount(half.Name, second.Name) == 2, nil
	})
	if err != nil {
		t.Fatalf("half: %d of 2 bound after a minute", c.boundCount(half.Name, second.Name))
	}
	c.checkInvariants(inv)
}
