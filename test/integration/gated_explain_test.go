package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/fluence-sched/fluence/pkg/inspect"
)

// kubectl fluence on groups whose pods all wait for their scheduling gates
// (Kueue's, here set by hand): kube-scheduler hands such pods to no plugin,
// so the gang core has never heard of the group, yet explain and groups
// say the pods exist and wait for their gates, naming the gates and
// counting the pods (a labelled group and a Job's), not that fluence knows
// no such group. Lifting one gate turns the answer into the core's
// (gathering, the rest still gated); lifting the rest, the group runs.
func TestExplainGatedGroup(t *testing.T) {
	c := newCluster(t)
	c.addNodes("node", 2, "4", "8Gi")
	inv, kubectl := c.runFluenceInspected(nil)
	const kueueGate = "kueue.x-k8s.io/admission"
	gate := func(pods ...*corev1.Pod) []*corev1.Pod {
		for _, p := range pods {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: kueueGate}}
		}
		return pods
	}
	sweep := gate(groupPods("sweep", 3, "1", 2*time.Second, 0)...)
	ranks := gate(c.jobPods("ranks", 2)...)
	c.createPods(append(sweep, ranks...)...)

	// The scheduler's informers see the pods within moments.
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		var list inspect.GroupList
		decodeJSON(t, kubectl(t, "groups", "-o", "json"), &list)
		seen := 0
		for _, g := range list.Items {
			if g.State == inspect.StateGated {
				seen++
			}
		}
		return seen == 2, nil
	})
	if err != nil {
		t.Fatalf("kubectl fluence groups never listed the two gated groups:\n%s", kubectl(t, "groups"))
	}
	var out string
	out = kubectl(t, "explain", "sweep")
	t.Logf("$ kubectl fluence explain sweep\n%s", out)
	requireLine(t, "explain sweep", out, `^State: +gated$`)
	requireLine(t, "explain sweep", out, `^Gates: +kueue\.x-k8s\.io/admission$`)
	requireLine(t, "explain sweep", out, `^Size: +3 \(3 pods exist, 3 of them wait for their scheduling gates; 0 placed, 0 bound\)$`)
	requireLine(t, "explain sweep", out, `fluence-test/sweep: its 3 pods exist but wait for their scheduling gates \(kueue\.x-k8s\.io/admission\), so fluence has not seen the group yet`)
	requireLine(t, "explain sweep", out, `Gate kueue\.x-k8s\.io/admission is on 3 pods: sweep-0, sweep-1, sweep-2\.`)
	out = kubectl(t, "explain", "ranks")
	t.Logf("$ kubectl fluence explain ranks\n%s", out)
	requireLine(t, "explain ranks", out, `^Group: +fluence-test/job:ranks$`)
	requireLine(t, "explain ranks", out, `its 2 pods exist but wait for their scheduling gates \(kueue\.x-k8s\.io/admission\)`)

	out = kubectl(t, "groups")
	t.Logf("$ kubectl fluence groups\n%s", out)
	requireLine(t, "groups", out, `^sweep +gated +3 +0 \(\+3 gated\) +0 +0 `)
	requireLine(t, "groups", out, `^job:ranks +gated +2 +0 \(\+2 gated\) +0 +0 `)
	var e inspect.Explanation
	decodeJSON(t, kubectl(t, "explain", "sweep", "-o", "json"), &e)
	if e.Verdict != inspect.StateGated || e.Group.Gated != 3 || len(e.Group.Gates) != 1 || e.Group.Gates[0] != kueueGate {
		t.Errorf("explain sweep -o json: verdict %s, group %+v", e.Verdict, e.Group)
	}

	// One pod ungated: the core counts it, and says the rest are gated,
	// in the words the Kueue guide shows.
	c.liftGates(sweep[0])
	err = wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		out = kubectl(t, "explain", "sweep")
		return matchLine(out, `^State: +gathering$`), nil
	})
	if err != nil {
		t.Fatalf("explain sweep after one gate was lifted:\n%s", out)
	}
	t.Logf("$ kubectl fluence explain sweep\n%s", out)
	requireLine(t, "explain sweep", out, `1 of 3 exist`)
	requireLine(t, "explain sweep", out, `2 more exist but wait for their scheduling gates`)
	requireLine(t, "explain sweep", out, `^Size: +3 \(3 pods exist, 2 of them wait for their scheduling gates; 0 placed, 0 bound\)$`)
	if strings.Contains(out, "Gates:") {
		t.Errorf("a group the core knows names no gates:\n%s", out)
	}

	for _, p := range append(sweep[1:], ranks...) {
		c.liftGates(p)
	}
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(sweep)...)
	c.waitBoundOrExplain(kubectl, "ranks", ranks)
	c.checkInvariants(inv)
}
