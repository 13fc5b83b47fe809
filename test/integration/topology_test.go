package integration

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

// Groups that ask, by annotation, to run within one rack, on a real API
// server: two racks of three 4-CPU nodes and two nodes in no rack, one
// rack node taken by a lone pod.
//   - two 3-CPU pods that require one rack (fluence's annotation) go to
//     the rack left with the least room (best fit), whole;
//   - three that prefer one (Kueue's annotation) then still find a rack;
//   - two more that prefer one find none and go anywhere, and say so.
func TestTopologyAnnotations(t *testing.T) {
	c := newCluster(t)
	for i := range 6 {
		c.addNode(fmt.Sprintf("node-%d", i), "4", "8Gi", 0, map[string]string{rackKey: fmt.Sprintf("r%d", 1+i/3)})
	}
	c.addNodes("spare", 2, "4", "8Gi")
	inv, _, _ := c.runFluence(nil)

	lone := newTestPod("lone", "fluence", "3", "", 0, nil)
	lone.Spec.NodeSelector = map[string]string{rackKey: "r2"}
	c.createPods(lone)
	c.waitForPodPhase(time.Minute, corev1.PodRunning, lone.Name)

	ask := func(group string, n int, key, rack string) []*corev1.Pod {
		pods := groupPods(group, n, "3", 0, 0)
		for _, p := range pods {
			p.Annotations = map[string]string{key: rack}
		}
		c.createPods(pods...)
		c.waitForPodPhase(time.Minute, corev1.PodRunning, names(pods)...)
		return pods
	}
	near := ask("near", 2, k8sadapter.TopologyRequiredKey, rackKey)
	if racks := c.racksOf(near); len(racks) != 1 || racks[0] != "r2" {
		t.Errorf("near, required in one rack, runs in racks %v; want r2, the rack left with the least room", racks)
	}
	c.waitForEvent(30*time.Second, "near-0", "FluenceGroupPlaced", "within "+rackKey+"=r2")

	kueue := ask("kueue", 3, k8sadapter.KueueTopologyPreferredKey, rackKey)
	if racks := c.racksOf(kueue); len(racks) != 1 || racks[0] != "r1" {
		t.Errorf("kueue, preferring one rack, runs in racks %v; want r1", racks)
	}
	c.waitForEvent(30*time.Second, "kueue-0", "FluenceGroupPlaced", "within "+rackKey+"=r1")

	spill := ask("spill", 2, k8sadapter.TopologyPreferredKey, rackKey)
	if racks := c.racksOf(spill); len(racks) != 1 || racks[0] != "" {
		t.Errorf("spill, preferring a rack when none has room, runs in racks %v; want the spare nodes", racks)
	}
	c.waitForEvent(30*time.Second, "spill-0", "FluenceGroupPlaced", "no domain of its preferred "+rackKey)
	c.checkInvariants(inv)
}

// racksOf returns the racks (rackKey values, "" for none) the pods'
// nodes are in, sorted and distinct.
func (c *cluster) racksOf(pods []*corev1.Pod) []string {
	c.t.Helper()
	seen := map[string]bool{}
	var out []string
	for _, p := range pods {
		got, err := c.Client.CoreV1().Pods(c.NS).Get(c.Ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		n, err := c.Client.CoreV1().Nodes().Get(c.Ctx, got.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		if r := n.Labels[rackKey]; !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}
