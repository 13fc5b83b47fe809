package integration

import (
	"context"
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
