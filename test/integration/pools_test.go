package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// One group across two node pools: a launcher that asks for the CPU pool
// and workers that ask for GPU nodes bind together, each pod in its own
// pool (the stock NodeAffinity filter checks every binding).
func TestGroupAcrossNodePools(t *testing.T) {
	c := newCluster(t)
	for _, n := range []string{"cpu-0", "cpu-1"} {
		c.addNode(n, "2", "8Gi", 0, map[string]string{"pool": "cpu"})
	}
	for _, n := range []string{"gpu-0", "gpu-1"} {
		c.addNode(n, "2", "8Gi", 1, map[string]string{"pool": "gpu"})
	}
	inv, _, _ := c.runFluence(nil)

	pods := groupPods("mpi", 3, "1", 2*time.Second, 0)
	pods[0].Spec.NodeSelector = map[string]string{"pool": "cpu"}
	for _, w := range pods[1:] {
		w.Spec.NodeSelector = map[string]string{"pool": "gpu"}
		w.Spec.Containers[0].Resources.Requests[gpuResource] = resource.MustParse("1")
		w.Spec.Containers[0].Resources.Limits = corev1.ResourceList{gpuResource: resource.MustParse("1")}
	}
	c.createPods(pods...)
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(pods)...)

	for i, p := range pods {
		got, err := c.Client.CoreV1().Pods(c.NS).Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := "gpu-"
		if i == 0 {
			want = "cpu-"
		}
		if !strings.HasPrefix(got.Spec.NodeName, want) {
			t.Errorf("%s ran on %s, want a %s node", p.Name, got.Spec.NodeName, want)
		}
	}
	c.checkInvariants(inv)
}

// poolPods is a group of n pods asking for the pool's nodes.
func poolPods(group string, n int, cpu, pool string, runtime time.Duration) []*corev1.Pod {
	pods := groupPods(group, n, cpu, runtime, 0)
	for _, p := range pods {
		p.Spec.NodeSelector = map[string]string{"pool": pool}
	}
	return pods
}

// addPool adds nodes of one pool.
func (c *cluster) addPool(pool, cpu string, nodes ...string) {
	c.t.Helper()
	for _, n := range nodes {
		c.addNode(n, cpu, "8Gi", 0, map[string]string{"pool": pool})
	}
}

// waitBehind starts the running group, then the waiting one, and returns
// once the waiting group holds a reservation behind it.
func (c *cluster) waitBehind(running, waiting []*corev1.Pod) {
	c.t.Helper()
	c.createPods(running...)
	c.waitForPodPhase(30*time.Second, corev1.PodRunning, names(running)...)
	c.createPods(waiting...)
	c.waitForEvent(30*time.Second, waiting[0].Name, "FluenceGroupReserved", "reserved to start")
}

// nodesOf returns the nodes the named pods are bound to.
func (c *cluster) nodesOf(names ...string) []string {
	c.t.Helper()
	var out []string
	for _, n := range names {
		p, err := c.Client.CoreV1().Pods(c.NS).Get(c.Ctx, n, metav1.GetOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		out = append(out, p.Spec.NodeName)
	}
	return out
}

// A waiting group sees nodes that join its pool. With its pool full, a
// group of four holds a reservation an hour out (the running group's
// default duration); four empty nodes join the pool and it starts on them
// at once, while the running group still runs.
func TestPoolGrownWhileGroupWaits(t *testing.T) {
	c := newCluster(t)
	c.addPool("a", "4", "a-0", "a-1", "a-2", "a-3")
	c.addPool("b", "4", "b-0")
	inv, _, _ := c.runFluence(nil)

	waiting := poolPods("waiting", 4, "4", "a", time.Second)
	c.waitBehind(poolPods("running", 4, "4", "a", 0), waiting)

	c.addPool("a", "4", "a-4", "a-5", "a-6", "a-7")
	c.waitForPodPhase(30*time.Second, corev1.PodSucceeded, names(waiting)...)
	for _, n := range c.nodesOf(names(waiting)...) {
		if !slices.Contains([]string{"a-4", "a-5", "a-6", "a-7"}, n) {
			t.Errorf("the waiting group ran on %s, want one of the new nodes", n)
		}
	}
	c.checkInvariants(inv)
}

// A pool replaced while its group waits: the old nodes leave (their pods
// gone with them), new nodes of the pool join, and the waiting group lands
// on the new nodes.
func TestPoolReplacedWhileGroupWaits(t *testing.T) {
	c := newCluster(t)
	c.addPool("a", "2", "a-0", "a-1")
	c.addPool("b", "8", "b-0")
	inv, _, _ := c.runFluence(nil)

	busy := poolPods("busy", 2, "2", "a", 0)
	waiting := poolPods("waiting", 2, "2", "a", time.Second)
	c.waitBehind(busy, waiting)

	for _, n := range []string{"a-0", "a-1"} {
		if err := c.Client.CoreV1().Nodes().Delete(c.Ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	zero := int64(0)
	for _, p := range busy {
		if err := c.Client.CoreV1().Pods(c.NS).Delete(c.Ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
	}
	c.addPool("a", "2", "a-2", "a-3")
	c.waitForPodPhase(30*time.Second, corev1.PodSucceeded, names(waiting)...)
	if got := c.nodesOf(names(waiting)...); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"a-2", "a-3"}) {
		t.Errorf("the waiting group ran on %v, want a-2 and a-3", got)
	}
	c.checkInvariants(inv)
}
