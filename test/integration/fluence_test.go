package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/fluence-sched/fluence/deploy"
	"github.com/fluence-sched/fluence/pkg/groups"
	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/plugin"
	"github.com/fluence-sched/fluence/pkg/sim"
	"github.com/fluence-sched/fluence/pkg/sim/experiments"
)

func resourceMilli(m int64) *resource.Quantity {
	return resource.NewMilliQuantity(m, resource.DecimalSI)
}

// The fluence scheduler runs here as it is deployed: kube-scheduler v1.36
// with the plugin registered, the profile from deploy/scheduler-config.yaml,
// against a real kube-apiserver and etcd. Nodes are plain Node objects and
// the node simulator plays the kubelets.

var fluenceRegistry = frameworkruntime.Registry{plugin.Name: plugin.New, plugin.QueueSortName: plugin.NewQueueSort}

// registry is the fluence plugin reporting its steps to the checker.
func (v *invariants) registry() frameworkruntime.Registry {
	return frameworkruntime.Registry{plugin.Name: plugin.NewWith(plugin.Options{Trace: v.traced}), plugin.QueueSortName: plugin.NewQueueSort}
}

const stockConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
  - schedulerName: default-scheduler
`

// setClient sets clientConnection fields (key, value pairs) in a
// KubeSchedulerConfiguration: lines of an existing clientConnection
// section are replaced, missing ones added, and the section is added when
// there is none.
func setClient(config string, kv ...string) string {
	lines := strings.Split(strings.TrimRight(config, "\n"), "\n")
	header := slices.Index(lines, "clientConnection:")
	if header < 0 {
		lines = append(lines, "clientConnection:")
		header = len(lines) - 1
	}
	for i := 0; i+1 < len(kv); i += 2 {
		line := "  " + kv[i] + ": " + kv[i+1]
		done := false
		for j := header + 1; j < len(lines) && strings.HasPrefix(lines[j], "  "); j++ {
			if strings.HasPrefix(strings.TrimSpace(lines[j]), kv[i]+":") {
				lines[j], done = line, true
			}
		}
		if !done {
			lines = slices.Insert(lines, header+1, line)
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// fluenceConfig is the shipped configuration with some plugin arguments
// replaced (key: value as written in the file).
func fluenceConfig(t testing.TB, args map[string]string) string {
	t.Helper()
	data, err := os.ReadFile("../../deploy/scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		for k, v := range args {
			if strings.HasPrefix(trimmed, k+":") {
				indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
				lines[i] = indent + k + ": " + v
			}
		}
	}
	return strings.Join(lines, "\n")
}

// startFluence starts a cluster of n nodes with the given CPUs and memory,
// the invariant checker, the node simulator and the fluence scheduler with
// the shipped configuration (some plugin arguments replaced by args).
func startFluence(t *testing.T, n int, cpu, memory string, args map[string]string) (*cluster, *invariants, *localcluster.NodeSim, func()) {
	t.Helper()
	c := newCluster(t)
	c.addNodes("node", n, cpu, memory)
	inv, sim, stop := c.runFluence(args)
	return c, inv, sim, stop
}

// runFluence starts the invariant checker, the node simulator and the
// fluence scheduler with the shipped configuration (some plugin arguments
// replaced by args) on c's nodes; a failed test logs the waiting pods.
func (c *cluster) runFluence(args map[string]string) (*invariants, *localcluster.NodeSim, func()) {
	c.t.Helper()
	inv := startInvariants(c)
	sim := startNodeSim(c, simOptions{})
	stop := c.startScheduler(fluenceConfig(c.t, args), inv.registry())
	c.t.Cleanup(func() {
		if c.t.Failed() {
			c.dumpWaiting(5)
		}
	})
	return inv, sim, stop
}

// groupPods returns n pods of one fluence group.
func groupPods(group string, n int, cpu string, runtime, duration time.Duration) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		p := newTestPod(fmt.Sprintf("%s-%d", group, i), "fluence", cpu, "", runtime, map[string]string{
			"fluence.flux-framework.org/pod-group":  group,
			"fluence.flux-framework.org/group-size": fmt.Sprint(n),
		})
		if duration > 0 {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations["fluence.flux-framework.org/duration"] = fmt.Sprint(int64(duration.Seconds()))
		}
		out = append(out, p)
	}
	return out
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

// boundCount returns how many of the named pods have a node.
func (c *cluster) boundCount(names ...string) int {
	c.t.Helper()
	list, err := c.Client.CoreV1().Pods(c.NS).List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	n := 0
	for _, p := range list.Items {
		if slices.Contains(names, p.Name) && p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// waitForEvent waits for an event on a pod of c.NS (any object when pod
// is "") whose reason and note contain the given strings, and returns its
// note.
func (c *cluster) waitForEvent(timeout time.Duration, pod, reason, contains string) string {
	c.t.Helper()
	var found string
	var seen []string
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.Client.EventsV1().Events(c.NS).List(c.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		seen = seen[:0]
		for _, e := range list.Items {
			if pod != "" && e.Regarding.Name != pod {
				continue
			}
			seen = append(seen, e.Reason+": "+e.Note)
			if strings.Contains(e.Reason, reason) && strings.Contains(e.Note, contains) {
				found = e.Note
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		c.t.Fatalf("no event %s containing %q on pod %s within %v; events: %q", reason, contains, pod, timeout, seen)
	}
	return found
}

func (c *cluster) checkInvariants(inv *invariants) {
	c.t.Helper()
	if v := inv.violations(); len(v) > 0 {
		c.t.Errorf("over-commit or binding to a missing node:\n%s", strings.Join(v, "\n"))
	}
	if p := inv.partialGroups(); len(p) > 0 {
		c.t.Errorf("groups bound partly:\n%s", strings.Join(p, "\n"))
	}
	if o := inv.earlyBindings(); len(o) > 0 {
		c.t.Errorf("pods bound before their whole allocation was reserved:\n%s", strings.Join(o, "\n"))
	}
}

// A 10-pod group binds all at once; while one node is taken (room for 9)
// none binds and an event says what is short.
func TestGroupOfTenBindsWhole(t *testing.T) {
	c, inv, _, _ := startFluence(t, 10, "1", "4Gi", nil)

	// Another scheduler's pod holds one node.
	blocker := newTestPod("blocker", "other-scheduler", "1", "", 0, nil)
	blocker.Spec.NodeName = "node-0"
	c.createPods(blocker)
	c.waitForPodPhase(30*time.Second, corev1.PodRunning, "blocker")

	g := groupPods("ten", 10, "1", 0, 0)
	c.createPods(g...)
	note := c.waitForEvent(30*time.Second, "ten-0", "FluenceGroupWaiting", "ten")
	if !strings.Contains(note, "cpu: needs 10000m") || !strings.Contains(note, "9000m available") {
		t.Errorf("waiting event should say 10 CPUs (10000m) are needed and 9 available: %q", note)
	}
	if n := c.boundCount(names(g)...); n != 0 {
		t.Fatalf("%d of 10 pods bound with room for 9", n)
	}
	if err := c.Client.CoreV1().Pods(c.NS).Delete(c.Ctx, "blocker", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitForPodPhase(60*time.Second, corev1.PodRunning, names(g)...)
	c.checkInvariants(inv)
}

// runWorkload creates the groups of a sim workload with runtimes divided by
// scale and returns every pod name by group.
func (c *cluster) runWorkload(w *sim.Workload, scale float64, prefix string) map[string][]string {
	c.t.Helper()
	out := map[string][]string{}
	start := time.Now()
	for i, g := range w.Groups {
		if wait := time.Duration(g.Arrival/scale*float64(time.Second)) - time.Since(start); wait > 0 {
			time.Sleep(wait)
		}
		runtime := time.Duration(g.Runtime / scale * float64(time.Second))
		name := fmt.Sprintf("%s%03d-size%d", prefix, i, len(g.Pods))
		pods := groupPods(name, len(g.Pods), fmt.Sprintf("%dm", g.Pods[0].CPU), runtime, runtime+time.Second)
		for j, p := range pods {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *resourceMilli(g.Pods[j].CPU)
		}
		c.createPods(pods...)
		out[name] = names(pods)
	}
	return out
}

func loadRun8(t testing.TB) *sim.Workload {
	t.Helper()
	data, err := experiments.Read("run8")
	if err != nil {
		t.Fatal(err)
	}
	w, err := sim.ParseWorkload(data, sim.LoadOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (c *cluster) addWorkloadNodes(w *sim.Workload) {
	for _, n := range w.Cluster.Nodes {
		c.addNode(n.Name, fmt.Sprintf("%dm", n.CPU), "16Gi", int(n.GPU), n.Labels)
	}
}

// The run8 workload (100 LAMMPS groups of 2-6 two-CPU pods on 8 nodes with
// 3 free CPUs each; runtimes scaled down 50x) completes under fluence: no
// group is ever bound partly and no node is ever over-committed. The stock
// scheduler froze on this workload in the measured experiment.
func TestRun8Workload(t *testing.T) {
	w := loadRun8(t)
	c := newCluster(t)
	c.addWorkloadNodes(w)
	inv := startInvariants(c)
	startNodeSim(c, simOptions{})
	c.startScheduler(fluenceConfig(t, nil), inv.registry())

	groups := c.runWorkload(w, 50, "lmp")
	if len(groups) != 100 {
		t.Fatalf("%d groups created", len(groups))
	}
	var all []string
	for _, g := range groups {
		all = append(all, g...)
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpWaiting(5)
		}
	})
	c.waitForPodPhase(3*time.Minute, corev1.PodSucceeded, all...)
	c.checkInvariants(inv)
}

// dumpWaiting logs the events of up to n pods that are not bound, to show
// why they wait.
func (c *cluster) dumpWaiting(n int) {
	pods, err := c.Client.CoreV1().Pods(c.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	evs, err := c.Client.EventsV1().Events(c.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			running++
			c.t.Logf("running: %s on %s", p.Name, p.Spec.NodeName)
		}
	}
	c.t.Logf("%d pods running", running)
	var stacks bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&stacks, 2)
	for _, g := range strings.Split(stacks.String(), "\n\n") {
		if strings.Contains(g, "pkg/plugin") || strings.Contains(g, "pkg/match") || strings.Contains(g, "pkg/queue") {
			c.t.Logf("goroutine:\n%s", g)
		}
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" || n == 0 {
			continue
		}
		n--
		for _, e := range evs.Items {
			if e.Regarding.Name == p.Name {
				c.t.Logf("%s: %s %s: %s (x%d)", p.Name, e.EventTime.Format(time.TimeOnly), e.Reason, e.Note, e.DeprecatedCount)
			}
		}
	}
}

// Pods the stock scheduler binds on the same nodes are accounted for:
// together the two schedulers never over-commit a node. Decisions are
// interleaved (each waits until the other's last pod is bound), while the
// pods of both run side by side: two schedulers deciding at the same
// instant race on any node, whoever they are (see docs/scheduler.md).
func TestStockSchedulerPodsAccounted(t *testing.T) {
	c := newCluster(t)
	c.addNodes("node", 4, "4", "8Gi")
	inv := startInvariants(c)
	startNodeSim(c, simOptions{})
	c.startScheduler(stockConfig, nil)
	c.startScheduler(fluenceConfig(t, nil), inv.registry())
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpWaiting(3)
		}
	})

	var all []string
	bound := func(names ...string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(c.Ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return c.boundCount(names...) == len(names), nil
		})
		if err != nil {
			t.Fatalf("%v not bound within a minute", names)
		}
	}
	for i := range 12 {
		stock := newTestPod(fmt.Sprintf("stock-%d", i), "default-scheduler", "1500m", "", 3*time.Second, nil)
		c.createPods(stock)
		bound(stock.Name)
		g := groupPods(fmt.Sprintf("g%d", i), 3, "1", 2*time.Second, 3*time.Second)
		c.createPods(g...)
		bound(names(g)...)
		all = append(all, stock.Name)
		all = append(all, names(g)...)
	}
	c.waitForPodPhase(3*time.Minute, corev1.PodSucceeded, all...)
	c.checkInvariants(inv)
}

// The scheduler is killed mid-workload and a new one started: it rebuilds
// its allocations from the pods' records before placing anything, so
// nothing is allocated twice and every job completes.
func TestRestartMidWorkload(t *testing.T) {
	c, inv, _, stop := startFluence(t, 4, "2", "8Gi", nil)

	var all []string
	for i := range 16 {
		g := groupPods(fmt.Sprintf("r%02d", i), 1+i%4, "1", 3*time.Second, 4*time.Second)
		c.createPods(g...)
		all = append(all, names(g)...)
	}
	// Let the first groups start, then kill the scheduler while they run.
	err := wait.PollUntilContextTimeout(c.Ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return c.boundCount(all...) >= 4, nil
	})
	if err != nil {
		t.Fatal("nothing bound before the restart")
	}
	stop()
	bound := c.boundCount(all...)
	if bound == len(all) {
		t.Fatal("everything was bound before the restart; the test proves nothing")
	}
	c.startScheduler(fluenceConfig(t, nil), inv.registry())
	c.waitForPodPhase(3*time.Minute, corev1.PodSucceeded, all...)
	c.checkInvariants(inv)
	t.Logf("%d of %d pods were bound when the scheduler was killed", bound, len(all))
}

// A node is deleted and another cordoned mid-run: the graph follows and
// nothing is placed on either afterwards.
func TestNodeDeletedAndCordoned(t *testing.T) {
	c, inv, _, _ := startFluence(t, 4, "2", "8Gi", nil)

	first := groupPods("before", 4, "1", 2*time.Second, 3*time.Second)
	c.createPods(first...)
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(first)...)

	// node-3 goes away with its pods (as the pod GC would remove them);
	// node-2 is cordoned.
	if err := c.Client.CoreV1().Nodes().Delete(c.Ctx, "node-3", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	n2, err := c.Client.CoreV1().Nodes().Get(c.Ctx, "node-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n2.Spec.Unschedulable = true
	if _, err := c.Client.CoreV1().Nodes().Update(c.Ctx, n2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	var after []string
	for i := range 6 {
		g := groupPods(fmt.Sprintf("after%d", i), 2, "1", time.Second, 2*time.Second)
		c.createPods(g...)
		after = append(after, names(g)...)
	}
	c.waitForPodPhase(2*time.Minute, corev1.PodSucceeded, after...)
	list, err := c.Client.CoreV1().Pods(c.NS).List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if slices.Contains(after, p.Name) && (p.Spec.NodeName == "node-2" || p.Spec.NodeName == "node-3") {
			t.Errorf("pod %s created after %v was placed on %s", p.Name, changed.Format(time.TimeOnly), p.Spec.NodeName)
		}
	}
	// A group that needs more than the two usable nodes is not placed.
	big := groupPods("big", 5, "1", time.Second, 2*time.Second)
	c.createPods(big...)
	c.waitForEvent(30*time.Second, big[0].Name, "FluenceGroup", "big")
	if n := c.boundCount(names(big)...); n != 0 {
		t.Errorf("%d pods of a 5-pod group bound on 2 usable 2-CPU nodes", n)
	}
	c.checkInvariants(inv)
}

// Groups that can never fit are rejected with their reason and do not
// hold up the groups behind them.
func TestUnsatisfiableGroupsRejected(t *testing.T) {
	c, inv, _, _ := startFluence(t, 8, "3", "8Gi", nil)

	big := groupPods("fifty", 50, "1", time.Second, 0)
	gpu := groupPods("gpu", 2, "1", time.Second, 0)
	for _, p := range gpu {
		p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	}
	arm := groupPods("arm", 2, "1", time.Second, 0)
	for _, p := range arm {
		p.Spec.NodeSelector = map[string]string{"kubernetes.io/arch": "arm64"}
	}
	c.createPods(big...)
	c.createPods(gpu...)
	c.createPods(arm...)
	var ok []string
	for i := range 4 {
		g := groupPods(fmt.Sprintf("ok%d", i), 4, "1", time.Second, 2*time.Second)
		c.createPods(g...)
		ok = append(ok, names(g)...)
	}
	c.waitForPodPhase(2*time.Minute, corev1.PodSucceeded, ok...)
	for _, tc := range []struct{ pod, want string }{
		{"fifty-0", "cpu: needs 50000m"},
		{"gpu-1", "gpu"},
		{"arm-0", "arm64"},
	} {
		note := c.waitForEvent(30*time.Second, tc.pod, "FluenceGroupRejected", tc.want)
		t.Logf("%s: %s", tc.pod, note)
	}
	if n := c.boundCount(append(append(names(big), names(gpu)...), names(arm)...)...); n != 0 {
		t.Errorf("%d pods of impossible groups were bound", n)
	}
	c.checkInvariants(inv)
}

// Malformed group labels get clear events; nothing crashes and other
// groups are unaffected.
func TestMalformedLabels(t *testing.T) {
	c, _, _, _ := startFluence(t, 4, "2", "8Gi", nil)

	bad := map[string]string{"abc": "abc", "zero": "0", "minus": "-1"}
	for name, size := range bad {
		// "-1" is not a valid label value; annotations carry it.
		p := newTestPod("bad-"+name, "fluence", "1", "", time.Second, map[string]string{
			"fluence.flux-framework.org/pod-group": "bad-" + name,
		})
		p.Annotations["fluence.flux-framework.org/group-size"] = size
		c.createPods(p)
	}
	// Two pods of one group disagreeing on its size.
	// The pod that sorts first says 3, the others 2: whichever the
	// scheduler sees first, the disagreement is found before the group
	// could be complete.
	d0 := groupPods("split", 2, "1", time.Second, 0)
	d1 := groupPods("split", 3, "1", time.Second, 0)
	d1[0].Name, d0[0].Name, d0[1].Name = "split-a", "split-b", "split-c"
	c.createPods(d1[0], d0[0], d0[1])
	good := groupPods("good", 4, "1", time.Second, 2*time.Second)
	c.createPods(good...)
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(good)...)
	for name, size := range bad {
		note := c.waitForEvent(30*time.Second, "bad-"+name, "FluenceInvalidGroup", fmt.Sprintf("%q", size))
		if !strings.Contains(note, "group-size") {
			t.Errorf("event for size %q does not name the label: %s", size, note)
		}
	}
	c.waitForEvent(30*time.Second, "split-b", "FluenceInvalidGroup", "disagree")
	if n := c.boundCount("bad-abc", "bad-zero", "bad-minus", "split-a", "split-b", "split-c"); n != 0 {
		t.Errorf("%d malformed pods bound", n)
	}
}

// Easy backfill: short groups run ahead of a blocked large group without
// delaying its reserved start.
func TestEasyBackfill(t *testing.T) {
	c, inv, _, _ := startFluence(t, 4, "1", "8Gi", map[string]string{"queuePolicy": "easy"})

	// Three nodes busy for 6 s; the 4-node group must wait for them.
	first := groupPods("first", 3, "1", 6*time.Second, 6*time.Second)
	c.createPods(first...)
	c.waitForPodPhase(30*time.Second, corev1.PodRunning, names(first)...)
	large := groupPods("large", 4, "1", 2*time.Second, 3*time.Second)
	c.createPods(large...)
	c.waitForEvent(30*time.Second, "large-0", "FluenceGroupReserved", "reserved to start")
	// A short group fits in the gap; a long one would delay "large".
	short := groupPods("short", 1, "1", 2*time.Second, 3*time.Second)
	long := groupPods("long", 1, "1", 2*time.Second, 30*time.Second)
	c.createPods(short...)
	c.createPods(long...)
	all := append(append(append(names(first), names(large)...), names(short)...), names(long)...)
	c.waitForPodPhase(2*time.Minute, corev1.PodSucceeded, all...)

	// The order the scheduler bound the groups in: the short group ran in
	// the gap, the large group started as soon as its nodes were free
	// (nothing else bound between), and the long group waited behind it.
	var order []string
	for _, pod := range inv.bindOrder() {
		// groupPods names pods <group>-<i>.
		name := strings.TrimPrefix(pod, c.NS+"/")
		group := name[:strings.LastIndexByte(name, '-')]
		if len(order) == 0 || order[len(order)-1] != group {
			order = append(order, group)
		}
	}
	if want := []string{"first", "short", "large", "long"}; !slices.Equal(order, want) {
		t.Errorf("groups bound in the order %v, want %v", order, want)
	}
	c.checkInvariants(inv)
}

func latest(recs map[string]podRecord, pods []string, f func(podRecord) time.Time) time.Time {
	var out time.Time
	for _, p := range pods {
		if t := f(recs[p]); t.After(out) {
			out = t
		}
	}
	return out
}

func earliest(recs map[string]podRecord, pods []string, f func(podRecord) time.Time) time.Time {
	var out time.Time
	for _, p := range pods {
		if t := f(recs[p]); out.IsZero() || t.Before(out) {
			out = t
		}
	}
	return out
}

// installPodGroupCRD installs the scheduler-plugins PodGroup CRD as shipped
// (deploy/crds) and waits until it is served.
func (c *cluster) installPodGroupCRD() {
	c.t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(deploy.PodGroupCRD), crd); err != nil {
		c.t.Fatal(err)
	}
	client := apiextensionsclient.NewForConfigOrDie(c.Config)
	if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(c.Ctx, crd, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	c.waitServed(podGroupGVR)
}

// waitServed waits until the API server serves a (custom) resource.
func (c *cluster) waitServed(gvr schema.GroupVersionResource) {
	c.t.Helper()
	dyn := dynamic.NewForConfigOrDie(c.Config)
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := dyn.Resource(gvr).Namespace(c.NS).List(c.Ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		c.t.Fatalf("%s not served", gvr)
	}
}

var podGroupGVR = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}

func (c *cluster) createPodGroup(name string, minMember int) {
	c.t.Helper()
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1",
		"kind":       "PodGroup",
		"metadata":   map[string]any{"name": name, "namespace": c.NS},
		"spec":       map[string]any{"minMember": int64(minMember)},
	}}
	if _, err := dynamic.NewForConfigOrDie(c.Config).Resource(podGroupGVR).Namespace(c.NS).Create(c.Ctx, pg, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// podGroupMembers returns n pods of cpu each naming the scheduler-plugins
// PodGroup group in their label.
func podGroupMembers(group string, n int, cpu string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, newTestPod(fmt.Sprintf("%s-%d", group, i), "fluence", cpu, "", time.Second,
			map[string]string{"scheduling.x-k8s.io/pod-group": group}))
	}
	return out
}

// podGroupCondition waits for fluence's condition annotation on a PodGroup
// with the given status and returns it.
func (c *cluster) podGroupCondition(name, status string) string {
	c.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		pg, err := dynamic.NewForConfigOrDie(c.Config).Resource(podGroupGVR).Namespace(c.NS).Get(c.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = pg.GetAnnotations()[groups.ConditionKey]
		return strings.Contains(last, `"status":"`+status+`"`), nil
	})
	if err != nil {
		c.t.Fatalf("PodGroup %s: no condition with status %s; last %q", name, status, last)
	}
	return last
}

// Pods labelled scheduling.x-k8s.io/pod-group (as the MPI Operator sets
// them) form a group of the PodGroup's minMember; a PodGroup that can never
// fit gets a condition and a Warning event naming the reason.
func TestSchedulerPluginsPodGroup(t *testing.T) {
	c := newFullCluster(t)
	c.installPodGroupCRD()
	c.addNodes("node", 4, "2", "8Gi")
	inv := startInvariants(c)
	startNodeSim(c, simOptions{})
	c.startScheduler(fluenceConfig(t, nil), inv.registry())

	c.createPodGroup("solver", 3)
	c.createPodGroup("huge", 50)
	var solver, huge []*corev1.Pod
	for i := range 3 {
		solver = append(solver, newTestPod(fmt.Sprintf("solver-%d", i), "fluence", "2", "", 2*time.Second,
			map[string]string{"scheduling.x-k8s.io/pod-group": "solver"}))
		huge = append(huge, newTestPod(fmt.Sprintf("huge-%d", i), "fluence", "1", "", time.Second,
			map[string]string{"scheduling.x-k8s.io/pod-group": "huge"}))
	}
	// Two of three solver pods must wait: the group is three.
	c.createPods(solver[:2]...)
	c.waitForEvent(30*time.Second, "solver-0", "FailedScheduling", "of 3 exist")
	if n := c.boundCount("solver-0", "solver-1"); n != 0 {
		t.Fatalf("%d pods of an incomplete group bound", n)
	}
	c.createPods(solver[2])
	c.createPods(huge...)
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(solver)...)
	c.podGroupCondition("solver", "True")
	cond := c.podGroupCondition("huge", "False")
	if !strings.Contains(cond, "needs 50") {
		t.Errorf("huge's condition does not say what is short: %s", cond)
	}
	c.waitForEvent(30*time.Second, "huge-0", "FluenceGroupRejected", "needs 50")

	// Pods created before their PodGroup wait for it, and bind soon after
	// it appears, on an otherwise idle cluster (no pod or node event
	// wakes them: the plugin retries them itself).
	late := podGroupMembers("late", 2, "1")
	c.createPods(late...)
	c.waitForEvent(30*time.Second, "late-1", "FailedScheduling", "PodGroup fluence-test/late not found")
	c.createPodGroup("late", 2)
	c.waitForPodPhase(30*time.Second, corev1.PodSucceeded, names(late)...)
	c.checkInvariants(inv)
}

// Pods owned by a Job without any group label form a group of the Job's
// parallelism (the pods are created here as the Job controller would).
func TestJobOwnedPodsFormAGroup(t *testing.T) {
	c, inv, _, _ := startFluence(t, 3, "2", "4Gi", nil)

	parallelism := int32(3)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "solver", Namespace: c.NS},
		Spec: batchv1.JobSpec{
			Parallelism: &parallelism,
			Suspend:     ptr.To(true), // no controller runs here; keep it honest
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
			}},
		},
	}
	job, err := c.Client.BatchV1().Jobs(c.NS).Create(c.Ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for i := range 3 {
		p := newTestPod(fmt.Sprintf("solver-%d", i), "fluence", "2", "", time.Second, nil)
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
		pods = append(pods, p)
	}
	c.createPods(pods[:2]...)
	c.waitForEvent(30*time.Second, "solver-0", "FailedScheduling", "of 3 exist")
	if n := c.boundCount("solver-0", "solver-1"); n != 0 {
		t.Fatalf("%d of a 3-pod Job's pods bound before the third existed", n)
	}
	c.createPods(pods[2])
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(pods)...)
	c.checkInvariants(inv)
}
