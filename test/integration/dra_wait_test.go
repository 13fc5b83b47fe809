package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// TestDRAClaimTemplateAfterPods: a gang whose pods exist before the
// ResourceClaimTemplate they name (as when one applied file makes both, or
// the template comes later) waits for it and is never rejected for it:
// kubectl fluence explain says which pod waits for what, no
// FluenceGroupRejected event is recorded, and once the template exists
// (kube-controller-manager then makes each pod's claim from it) the gang
// runs whole with its devices allocated.
func TestDRAClaimTemplateAfterPods(t *testing.T) {
	c := startCluster(t, localcluster.Options{ClaimController: true, GarbageCollector: true})
	for i := range 2 {
		c.addNode(fmt.Sprintf("node-%d", i), "8", "32Gi", 0, nil)
		c.publishGPUs(fmt.Sprintf("node-%d", i), 4, 80)
	}
	c.createDeviceClass(draDriver)
	_, kubectl := c.runFluenceInspected(nil)

	g := claimGroup("late", 2, "late-gpus")
	c.createPods(g...)
	want := "waits for its pod " + c.NS + "/late-0: resource claim template " + c.NS + "/late-gpus does not exist"
	var out string
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		out = kubectl(t, "explain", "late")
		return strings.Contains(out, want), nil
	})
	if err != nil {
		t.Fatalf("kubectl fluence explain late never said %q; last:\n%s", want, out)
	}
	t.Logf("$ kubectl fluence explain late\n%s", out)

	c.createClaimTemplate("late-gpus", exactly(2, ""))
	c.waitForPodPhase(time.Minute, corev1.PodRunning, names(g)...)
	c.wantAllocated(g, 2, nil)
	list, err := c.Client.EventsV1().Events(c.NS).List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Reason == "FluenceGroupRejected" || e.Reason == "FluenceInvalidGroup" {
			t.Errorf("%s on %s: %s; the group only waited for its template", e.Reason, e.Regarding.Name, e.Note)
		}
	}
}
