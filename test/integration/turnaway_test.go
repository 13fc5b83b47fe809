package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// What the engine does not model, kube-scheduler's own filters still
// check: here a group whose pods may not share a node (required pod
// anti-affinity on the hostname, as MPI jobs ask for one rank per node).
// The engine packs both pods onto one node, which turns the second away;
// the group must then be placed elsewhere, not on the same node again and
// again.
func TestTurnedAwayGroupAvoidsTheNode(t *testing.T) {
	c := newCluster(t)
	c.addNodes("node", 3, "4", "8Gi")
	inv, _, _ := c.runFluence(nil)

	pods := groupPods("spread", 3, "1", 0, 0)
	for _, p := range pods {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fluence.flux-framework.org/pod-group": "spread"}},
				TopologyKey:   "kubernetes.io/hostname",
			}},
		}}
	}
	c.createPods(pods...)

	err := wait.PollUntilContextTimeout(c.Ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return c.boundCount(names(pods)...) == len(pods), nil
	})
	if err != nil {
		t.Fatalf("%d of the group's %d pods bound after 2 minutes", c.boundCount(names(pods)...), len(pods))
	}
	nodes := map[string]bool{}
	for _, p := range pods {
		got, err := c.Client.CoreV1().Pods(c.NS).Get(c.Ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes[got.Spec.NodeName] = true
	}
	if len(nodes) != len(pods) {
		t.Errorf("the group's pods share nodes: %v", nodes)
	}
	c.checkInvariants(inv)
}
