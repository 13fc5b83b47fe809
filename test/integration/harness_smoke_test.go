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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const stockSchedulerConfig = `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
`

const secondSchedulerConfig = `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: second-scheduler
`

// TestHarnessSmoke exercises the harness itself with the stock scheduler:
// pods run and finish on simulated nodes, a scheduler can be stopped and
// replaced, two schedulers can run side by side, and the invariant checker
// sees what it must.
func TestHarnessSmoke(t *testing.T) {
	begin := time.Now()
	c := newCluster(t)
	t.Logf("apiserver up after %v", time.Since(begin))
	c.addNodes("node", 3, "4", "8Gi")
	sim := startNodeSim(c, simOptions{})
	inv := startInvariants(c)

	stop := c.startScheduler(stockSchedulerConfig, nil)
	t.Logf("scheduler up after %v", time.Since(begin))

	// Phase 1: six 2-CPU pods of 1 s fill the three 4-CPU nodes exactly.
	var names []string
	for i := range 6 {
		name := fmt.Sprintf("pod-%d", i)
		names = append(names, name)
		c.createPods(newTestPod(name, "default-scheduler", "2", "", time.Second, nil))
	}
	c.waitForPodPhase(60*time.Second, corev1.PodSucceeded, names...)
	recs := sim.Records()
	for _, name := range names {
		r, ok := recs[c.NS+"/"+name]
		if !ok {
			t.Fatalf("no simulator record for %s", name)
		}
		if r.Bound.IsZero() || r.Started.IsZero() || r.Finished.IsZero() {
			t.Fatalf("%s: incomplete record %+v", name, r)
		}
		if ran := r.Finished.Sub(r.Started); ran < time.Second || ran > 1500*time.Millisecond {
			t.Errorf("%s ran %v, want 1s (+ <500ms)", name, ran)
		}
	}
	if v := inv.violations(); len(v) > 0 {
		t.Fatalf("violations after phase 1:\n%s", strings.Join(v, "\n"))
	}
	t.Logf("phase 1 (6 pods) done after %v", time.Since(begin))

	// Phase 2: stop the scheduler; pods stay unbound until a new one runs.
	stop()
	c.createPods(
		newTestPod("late-0", "default-scheduler", "2", "", time.Second, nil),
		newTestPod("late-1", "default-scheduler", "2", "", time.Second, nil),
	)
	assertUnbound(t, c, time.Second, "late-0", "late-1")
	stop2 := c.startScheduler(stockSchedulerConfig, nil)
	c.waitForPodPhase(30*time.Second, corev1.PodSucceeded, "late-0", "late-1")
	t.Logf("phase 2 (restart) done after %v", time.Since(begin))

	// Phase 3: a second scheduler with another profile runs beside the
	// stock one; it schedules a two-pod group.
	stop3 := c.startScheduler(secondSchedulerConfig, nil)
	group := map[string]string{podGroupLabel: "g1"}
	c.createPods(
		newTestPod("second-0", "second-scheduler", "1", "1Gi", time.Second, group),
		newTestPod("second-1", "second-scheduler", "1", "1Gi", time.Second, group),
		newTestPod("stock-0", "default-scheduler", "1", "1Gi", time.Second, nil),
	)
	c.waitForPodPhase(30*time.Second, corev1.PodSucceeded, "second-0", "second-1", "stock-0")
	if p := inv.partialGroups(); len(p) > 0 {
		t.Errorf("partial groups: %v", p)
	}
	if v := inv.violations(); len(v) > 0 {
		t.Fatalf("violations after phase 3:\n%s", strings.Join(v, "\n"))
	}
	// Each profile records its own Scheduled events (events.k8s.io).
	var reporters map[string]int
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := c.Client.EventsV1().Events(c.NS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		reporters = map[string]int{}
		for _, e := range events.Items {
			if e.Reason == "Scheduled" {
				reporters[e.ReportingController]++
			}
		}
		return reporters["second-scheduler"] == 2 && reporters["default-scheduler"] == 9, nil
	})
	if err != nil {
		t.Errorf("Scheduled events by reporting controller: %v, want second-scheduler: 2, default-scheduler: 9 (%v)", reporters, err)
	}
	stop3()
	stop2()
	t.Logf("phase 3 (two schedulers) done after %v", time.Since(begin))

	// The kubeconfig for out-of-process schedulers works.
	restCfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfigFile())
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := kc.CoreV1().Nodes().List(c.Ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 3 {
		t.Fatalf("listing nodes through the kubeconfig file: %d nodes, err %v", len(nodes.Items), err)
	}

	// The checker catches what a broken scheduler would do. Binding
	// directly (spec.nodeName) bypasses every scheduler.
	over := newTestPod("too-big", "", "5", "", 0, nil)
	over.Spec.NodeName = "node-0"
	ghost := newTestPod("ghost", "", "1", "", 0, nil)
	ghost.Spec.NodeName = "no-such-node"
	c.createPods(over, ghost)
	var got []string
	err = wait.PollUntilContextTimeout(c.Ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		got = inv.violations()
		return len(got) >= 2, nil
	})
	if err != nil || len(got) != 2 ||
		!strings.Contains(got[0]+got[1], "node node-0 over-committed: cpu requested 5 > allocatable 4") ||
		!strings.Contains(got[0]+got[1], "bound to node no-such-node, which does not exist") {
		t.Errorf("violations: got %q", got)
	}
	t.Logf("total %v", time.Since(begin))
}

// assertUnbound fails the test if any named pod in c.NS gets a node within d.
func assertUnbound(t *testing.T, c *cluster, d time.Duration, names ...string) {
	t.Helper()
	// The requests use c.Ctx: the poll's own context ends at the deadline,
	// which would cancel a request in flight (and make the apiserver log it).
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, d, true, func(context.Context) (bool, error) {
		for _, name := range names {
			pod, err := c.Client.CoreV1().Pods(c.NS).Get(c.Ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if pod.Spec.NodeName != "" {
				return true, fmt.Errorf("pod %s was bound to %s", name, pod.Spec.NodeName)
			}
		}
		return false, nil
	})
	if !wait.Interrupted(err) {
		t.Fatalf("pods were not left alone with no scheduler running: %v", err)
	}
}
