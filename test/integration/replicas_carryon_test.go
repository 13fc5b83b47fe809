package integration

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/inspect"
	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// A new leader carries on what the old one left under way. Two replicas
// with leader election; four 4-CPU nodes full with two low-priority gangs
// (low-a, then low-b, whose pods take a long grace period to stop, as a
// workload saving its state on SIGTERM does)
// and a 3-CPU node with a group of three 1-CPU pods, two of which
// succeeded and one failed. A high-priority gang arrives; the leader
// evicts low-b (it has done less work) and is killed with SIGKILL while
// low-b's pods still terminate. Then the failed member's replacement is
// created. The new leader:
//   - evicts nothing more: it reads from low-b's DisruptionTarget
//     condition that low-b is going for the high gang, and says the high
//     gang waits for it (low-a, the next victim, stays untouched);
//   - places the replacement alone, counting the two finished members,
//     rather than waiting for a whole group of three;
//   - once low-b's pods are gone, binds the high gang on low-b's nodes.
//
// No allocation is withdrawn, no node over-committed, no group bound in
// part.
func TestReplicaCarriesOn(t *testing.T) {
	c := newCluster(t)
	c.addNodes("node", 4, "4", "8Gi")
	c.addNodes("spare", 1, "3", "8Gi")
	inv := startInvariants(c)
	startNodeSim(c, simOptions{})

	bin := buildFluence(t)
	kubeconfig := c.kubeconfigFile()
	config := filepath.Join(t.TempDir(), "config.yaml")
	args := map[string]string{"preemption": "{enabled: true, after: 1s, minRuntime: 0s, timeout: 2m}"}
	if err := os.WriteFile(config, []byte(setClient(fluenceConfig(t, args), "kubeconfig", kubeconfig)), 0o600); err != nil {
		t.Fatal(err)
	}
	ports, err := localcluster.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	a := startReplica(t, bin, "fluence-a", config, kubeconfig, ports[0], c.Config.BearerToken)
	a.waitLeading(t, time.Minute)
	b := startReplica(t, bin, "fluence-b", config, kubeconfig, ports[1], c.Config.BearerToken)
	waitReady(t, c.Ctx, b.url)

	withPriority := func(prio int32, pods []*corev1.Pod) []*corev1.Pod {
		for _, p := range pods {
			p.Spec.Priority = ptr.To(prio)
		}
		return pods
	}
	byGroup := func(g string) metav1.ListOptions {
		return metav1.ListOptions{LabelSelector: "fluence.flux-framework.org/pod-group=" + g}
	}
	lowA := withPriority(10, groupPods("low-a", 2, "4", 0, 0))
	c.createPods(lowA...)
	if _, err := c.waitPodsBound(time.Minute, 2, byGroup("low-a"), nil); err != nil {
		t.Fatalf("low-a: %v", err)
	}
	lowB := withPriority(10, groupPods("low-b", 2, "4", 0, 0))
	for _, p := range lowB {
		p.Annotations = map[string]string{localcluster.DrainAnnotation: "true"}
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](600)
	}
	c.createPods(lowB...)
	boundB, err := c.waitPodsBound(time.Minute, 2, byGroup("low-b"), nil)
	if err != nil {
		t.Fatalf("low-b: %v", err)
	}
	t.Cleanup(func() { c.endNow(boundB) })

	// The group of three on the spare node: r-0 and r-1 succeed, r-2
	// fails.
	r := groupPods("r", 3, "1", time.Second, 0)
	delete(r[2].Annotations, runtimeAnnotation) // runs until it fails
	c.createPods(r...)
	err = wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		phases := c.phases(byGroup("r"))
		return phases["r-0"] == corev1.PodSucceeded && phases["r-1"] == corev1.PodSucceeded && phases["r-2"] == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("r: %v, want r-0 and r-1 Succeeded and r-2 Running", c.phases(byGroup("r")))
	}
	failed, err := c.Client.CoreV1().Pods(c.NS).Get(c.Ctx, "r-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	failed.Status.Phase, failed.Status.Reason = corev1.PodFailed, "Error"
	if _, err := c.Client.CoreV1().Pods(c.NS).UpdateStatus(c.Ctx, failed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The high gang; the leader evicts low-b and is killed while its pods
	// terminate.
	c.createPods(withPriority(100000, groupPods("high", 2, "4", 0, 0))...)
	err = wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n := 0
		for _, p := range c.listPods(t) {
			if p.Labels["fluence.flux-framework.org/pod-group"] == "low-b" && p.DeletionTimestamp != nil {
				n++
			}
		}
		return n == 2, nil
	})
	if err != nil {
		t.Fatalf("low-b was not evicted: %s", describePods(c.listPods(t)))
	}
	_ = a.proc.cmd.Process.Kill()
	<-a.proc.exited
	b.waitLeading(t, time.Minute)

	replacement := groupPods("r", 3, "1", 0, 0)[2]
	replacement.Name = "r-2b"
	c.createPods(replacement)

	// The new leader knows why the high gang waits, and places the
	// replacement alone.
	var body string
	err = wait.PollUntilContextTimeout(c.Ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		var code int
		code, body = b.get(t, inspect.Path(inspect.ResourceGroups, c.NS, "high", ""))
		return code == http.StatusOK && strings.Contains(body, "the group it preempted, "+c.NS+"/low-b, has not gone yet"), nil
	})
	if err != nil {
		t.Errorf("the new leader does not say the high gang waits for low-b: %s", body)
	}
	if _, err := c.waitPodsBound(time.Minute, 1, metav1.ListOptions{FieldSelector: "metadata.name=r-2b"}, nil); err != nil {
		t.Errorf("the replacement r-2b is not bound: %v", err)
	}
	for _, p := range c.listPods(t) {
		if p.Labels["fluence.flux-framework.org/pod-group"] != "low-a" {
			continue
		}
		if p.DeletionTimestamp != nil || slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.DisruptionTarget }) {
			t.Errorf("low-a's pod %s was evicted as well: a second eviction for one preemption", p.Name)
		}
	}

	// low-b goes; the high gang takes its nodes.
	c.endNow(boundB)
	high, err := c.waitPodsBound(time.Minute, 2, byGroup("high"), nil)
	if err != nil {
		t.Fatalf("the high gang did not bind once low-b was gone: %s", describePods(c.listPods(t)))
	}
	if got, want := nodesOf(high), nodesOf(boundB); !slices.Equal(got, want) {
		t.Errorf("the high gang runs on %v, want low-b's nodes %v", got, want)
	}
	for _, r := range []*replica{a, b} {
		if w := withReason(c.eventsBy(r.name, time.Time{}), "FluenceGroupWithdrawn"); len(w) > 0 {
			t.Errorf("%s withdrew %d allocations:\n%s", r.name, len(w), strings.Join(w, "\n"))
		}
	}
	if v := inv.violations(); len(v) > 0 {
		t.Errorf("over-commit or binding to a missing node:\n%s", strings.Join(v, "\n"))
	}
	if p := inv.partialGroups(); len(p) > 0 {
		t.Errorf("groups bound partly:\n%s", strings.Join(p, "\n"))
	}
}

// phases returns the listed pods' phases by name.
func (c *cluster) phases(opts metav1.ListOptions) map[string]corev1.PodPhase {
	c.t.Helper()
	list, err := c.Client.CoreV1().Pods(c.NS).List(c.Ctx, opts)
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string]corev1.PodPhase{}
	for _, p := range list.Items {
		out[p.Name] = p.Status.Phase
	}
	return out
}

// endNow ends the pods' grace period: deleted again with none, they go
// at once.
func (c *cluster) endNow(pods []corev1.Pod) {
	for _, p := range pods {
		_ = c.Client.CoreV1().Pods(c.NS).Delete(context.Background(), p.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &p.UID}})
	}
}
