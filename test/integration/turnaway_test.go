package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// A group whose pods may not share a node goes on distinct nodes in its
// first placement: the engine reads it from the pods, a required pod
// anti-affinity on the hostname that selects the group's own pods (MPI jobs
// ask for one rank per node so) or a host port (a node gives a port to one
// pod; hostNetwork ranks ask for theirs so). Nodes have room for all three
// pods, so without it the engine would pack them onto one, and
// kube-scheduler's filters would turn them away one at a time.
func TestApartGroupSpreads(t *testing.T) {
	for _, tc := range []struct {
		name  string
		apart func(p *corev1.Pod)
	}{
		{"anti-affinity", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fluence.flux-framework.org/pod-group": "spread"}},
					TopologyKey:   "kubernetes.io/hostname",
				}},
			}}
		}},
		{"host port", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 2222, HostPort: 2222, Protocol: corev1.ProtocolTCP}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, inv, _, _ := startFluence(t, 3, "4", "8Gi", nil)
			pods := groupPods("spread", 3, "1", 0, 0)
			for _, p := range pods {
				tc.apart(p)
			}
			c.createPods(pods...)
			nodes := waitAllBound(c, pods, time.Minute)
			if len(nodes) != len(pods) {
				t.Errorf("the group's pods share nodes: %v", nodes)
			}
			// Events are recorded asynchronously: give a withdrawal, had
			// there been one, time to arrive.
			time.Sleep(time.Second)
			if notes := c.eventNotes(pods[0].Name, "FluenceGroupWithdrawn"); len(notes) > 0 {
				t.Errorf("the group was withdrawn before it spread: %q", notes)
			}
			c.checkInvariants(inv)
		})
	}
}

// What the engine does not model, kube-scheduler's own filters still check:
// here the group's pods repel each other by an anti-affinity term with a
// namespace selector, which the engine does not judge (it would need the
// namespaces' labels), so it packs them onto one node. The node turns the
// second away; the group must then be placed with that pod elsewhere, not
// on the same node again and again.
func TestTurnedAwayGroupAvoidsTheNode(t *testing.T) {
	c, inv, _, _ := startFluence(t, 2, "4", "8Gi", nil)

	pods := repelUnjudged(groupPods("repel", 2, "1", 0, 0), "repel")
	c.createPods(pods...)
	nodes := waitAllBound(c, pods, time.Minute)
	if len(nodes) != len(pods) {
		t.Errorf("the group's pods share nodes: %v", nodes)
	}
	// That a node turned a pod away first, or the test proves nothing.
	c.waitForEvent(10*time.Second, pods[0].Name, "FluenceGroupWithdrawn", "turned pod")
	c.checkInvariants(inv)
}

// repelUnjudged gives the pods of group a required anti-affinity on the
// hostname against each other, with a namespace selector, which the engine
// does not judge (it would need the namespaces' labels): it packs them,
// and kube-scheduler's InterPodAffinity filter turns them away.
func repelUnjudged(pods []*corev1.Pod, group string) []*corev1.Pod {
	for _, p := range pods {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"fluence.flux-framework.org/pod-group": group}},
				NamespaceSelector: &metav1.LabelSelector{},
				TopologyKey:       "kubernetes.io/hostname",
			}},
		}}
	}
	return pods
}

// eventNotes lists the notes of the events on a pod of c.NS with the reason.
func (c *cluster) eventNotes(pod, reason string) []string {
	c.t.Helper()
	list, err := c.Client.EventsV1().Events(c.NS).List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == pod && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

// waitAllBound waits until every pod is bound and returns the nodes they
// are bound to.
func waitAllBound(c *cluster, pods []*corev1.Pod, timeout time.Duration) map[string]bool {
	c.t.Helper()
	err := wait.PollUntilContextTimeout(c.Ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return c.boundCount(names(pods)...) == len(pods), nil
	})
	if err != nil {
		c.t.Fatalf("%d of the group's %d pods bound after %s", c.boundCount(names(pods)...), len(pods), timeout)
	}
	nodes := map[string]bool{}
	for _, p := range pods {
		got, err := c.Client.CoreV1().Pods(c.NS).Get(c.Ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		nodes[got.Spec.NodeName] = true
	}
	return nodes
}
