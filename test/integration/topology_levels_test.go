package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/fluence-sched/fluence/pkg/inspect"
	"github.com/fluence-sched/fluence/pkg/k8sadapter"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// The topology levels of TestTopologyLevels, outermost first (rackKey is
// native_v1beta1_test.go's).
const (
	zoneKey  = corev1.LabelTopologyZone
	blockKey = "example.com/block"
)

// Groups kept within a domain of a three-level topology (zone > block >
// rack), on a real API server, by one fluence scheduler configured with
// topologyLevels: node-0 … node-7, 4 CPUs each, all in zone z1, node-i in
// rack r(1+i/2) and block b(1+i/4), so that block b1 holds racks r1, r2
// and block b2 racks r3, r4. Each step starts and ends with no pod.
//
//   - a group that requires one block, too big for a rack, runs whole in
//     the one block with room, and its event names that block;
//   - a group that prefers a rack when no rack has room runs within a
//     block, and its event says it got the block, not its preferred rack;
//   - a group that requires a rack while every rack is partly taken holds
//     a reservation in the rack planned to free first (its event and the
//     inspection snapshot name that one rack); when another rack is freed
//     out of plan it starts there, whole: never across racks, never
//     before the rack was freed;
//   - a node relabelled from rack r1 to r2 (an Update of the Node, as
//     kubectl label does) takes its room along: a group that fits only in
//     the grown rack runs there, on that node, and the graph has moved
//     it; the steps after this one run with r1 of one node, r2 of three;
//   - a group no rack can ever hold is rejected, the largest rack named,
//     and no pod of it binds;
//   - a node without the rack label is in the rack level's unknown domain
//     of its block, in the graph `kubectl fluence graph` shows and in the
//     RACK column of `kubectl fluence nodes -o wide`; that domain is no
//     rack: a group that requires a rack does not start there, though
//     the node alone could hold it.
func TestTopologyLevels(t *testing.T) {
	c := newCluster(t)
	for i := range 8 {
		c.addNode(fmt.Sprintf("node-%d", i), "4", "8Gi", 0, map[string]string{
			zoneKey: "z1", blockKey: fmt.Sprintf("b%d", 1+i/4), rackKey: fmt.Sprintf("r%d", 1+i/2)})
	}
	inv, kubectl := c.runFluenceInspected(map[string]string{"topologyLevels": "[" + zoneKey + ", " + blockKey + ", " + rackKey + "]"})

	t.Run("required block", func(t *testing.T) {
		c := c.on(t)
		defer c.clearPods()
		// A CPU taken on three nodes of b1 and one of b2: four whole nodes
		// are free, one in b1 and three in b2. The group's 12 CPUs need
		// three nodes, more than a rack has: unconfined it could take
		// nodes of both blocks.
		c.occupy(kubectl, "1", "node-0", "node-1", "node-2", "node-4")
		g := topologyGroup("blk", 3, "4", k8sadapter.TopologyRequiredKey, blockKey)
		c.createPods(g...)
		c.waitForPodPhase(time.Minute, corev1.PodRunning, names(g)...)
		blocks := c.domainsOf(g, blockKey)
		if !slices.Equal(blocks, []string{"b2"}) {
			t.Fatalf("blk, required in one block, runs in blocks %v (nodes %v); want b2", blocks, c.nodesOf(names(g)...))
		}
		if racks := c.domainsOf(g, rackKey); len(racks) != 2 {
			t.Errorf("blk's three 4-CPU pods run in racks %v; want both racks of b2", racks)
		}
		c.waitForEvent(30*time.Second, "blk-0", "FluenceGroupPlaced", "within "+blockKey+"="+blocks[0])
		c.wantDomainAnnotation(g, blockKey+"="+blocks[0])
	})

	t.Run("preferred rack falls back to its block", func(t *testing.T) {
		c := c.on(t)
		defer c.clearPods()
		// 2 of the 4 CPUs of one node per rack taken: each rack has room
		// for one 3-CPU pod, each block for two.
		c.occupy(kubectl, "2", "node-0", "node-2", "node-4", "node-6")
		g := topologyGroup("pref", 2, "3", k8sadapter.TopologyPreferredKey, rackKey)
		c.createPods(g...)
		c.waitForPodPhase(time.Minute, corev1.PodRunning, names(g)...)
		blocks, racks := c.domainsOf(g, blockKey), c.domainsOf(g, rackKey)
		if len(blocks) != 1 || len(racks) != 2 {
			t.Fatalf("pref runs in blocks %v, racks %v (nodes %v); want one block, both its racks", blocks, racks, c.nodesOf(names(g)...))
		}
		c.waitForEvent(30*time.Second, "pref-0", "FluenceGroupPlaced",
			"within "+blockKey+"="+blocks[0]+" (no domain of its preferred "+rackKey+" held it)")
		c.wantDomainAnnotation(g, blockKey+"="+blocks[0])
	})

	t.Run("a reservation stays in one rack", func(t *testing.T) {
		c := c.on(t)
		defer c.clearPods()
		// One CPU of one node per rack held by a one-pod group planned to
		// end in 40, 10, 30 and 20 minutes (r1 … r4): no rack has the 8
		// CPUs the group asks now, though nodes of different racks have,
		// and r2 frees first.
		holders := c.hold("1", map[string]time.Duration{"node-0": 40 * time.Minute, "node-2": 10 * time.Minute, "node-4": 30 * time.Minute, "node-6": 20 * time.Minute})
		g := topologyGroup("res", 2, "4", k8sadapter.TopologyRequiredKey, rackKey)
		s := c.sampleGroup(g, rackKey)
		c.createPods(g...)
		if reason := c.waitForEventOf(30*time.Second, "res-0", "FluenceGroupReserved"); reason != "FluenceGroupReserved" {
			t.Fatalf("res was placed while no rack had room for it: nodes %v", c.nodesOf(names(g)...))
		}
		c.waitForEvent(30*time.Second, "res-0", "FluenceGroupReserved", "within "+rackKey+"=r2;")
		if d := c.groupDomains(kubectl, "res"); !slices.Equal(d, []string{rackKey + "=r2"}) {
			t.Errorf("res, reserved, waits for domains %v; want %s=r2", d, rackKey)
		}
		// r4 is freed first after all: the group starts there, whole.
		s.free()
		c.deletePods(holders["r4"])
		c.waitBoundOrExplain(kubectl, "res", g)
		s.stop()
		if racks := c.domainsOf(g, rackKey); len(racks) != 1 || racks[0] != "r4" {
			t.Errorf("res runs in racks %v (nodes %v); want r4, the rack freed", racks, c.nodesOf(names(g)...))
		}
		c.waitForEvent(30*time.Second, "res-0", "FluenceGroupPlaced", "within "+rackKey+"=r4")
		for _, v := range s.violations() {
			t.Error(v)
		}
	})

	t.Run("a relabelled node moves rack", func(t *testing.T) {
		c := c.on(t)
		defer c.clearPods()
		// node-1 leaves r1 for r2 (same block): r2 has three nodes, the
		// only rack with room for 12 CPUs.
		c.relabel("node-1", rackKey, "r2")
		g := topologyGroup("moved", 3, "4", k8sadapter.TopologyRequiredKey, rackKey)
		c.createPods(g...)
		c.waitForPodPhase(time.Minute, corev1.PodRunning, names(g)...)
		if racks := c.domainsOf(g, rackKey); len(racks) != 1 || racks[0] != "r2" {
			t.Fatalf("moved runs in racks %v (nodes %v); want r2, grown by node-1", racks, c.nodesOf(names(g)...))
		}
		if nodes := c.nodesOf(names(g)...); !slices.Contains(nodes, "node-1") {
			t.Errorf("moved runs on %v; want node-1 among them", nodes)
		}
		c.waitForEvent(30*time.Second, "moved-0", "FluenceGroupPlaced", "within "+rackKey+"=r2")
		// The graph, rebuilt for that decision, has node-1 under rack r2.
		if path := c.graphPath(kubectl, "node-1"); !slices.Equal(path, []string{"zone-z1", "block-b1", "rack-r2"}) {
			t.Errorf("the graph has node-1 under %v; want zone-z1, block-b1, rack-r2", path)
		}
	})

	t.Run("no rack can hold it: rejected", func(t *testing.T) {
		c := c.on(t)
		defer c.clearPods()
		largest, nodes, cpus := c.largestDomain(rackKey)
		// Four more CPUs than the largest rack has.
		n := cpus/4 + 1
		g := topologyGroup("huge", n, "4", k8sadapter.TopologyRequiredKey, rackKey)
		s := c.sampleGroup(g, rackKey)
		c.createPods(g...)
		want := fmt.Sprintf("no single domain of topology key %s can hold the whole group: the largest, %s=%s, has %d nodes (%d CPUs",
			rackKey, rackKey, largest, nodes, cpus)
		if reason := c.waitForEventOf(30*time.Second, "huge-0", "FluenceGroupRejected"); reason != "FluenceGroupRejected" {
			t.Fatalf("huge, more than any rack holds, was placed: nodes %v", c.nodesOf(names(g)...))
		}
		c.waitForEvent(30*time.Second, "huge-0", "FluenceGroupRejected", want)
		c.waitForCondition(30*time.Second, "huge-0", want)
		s.stop()
		if b := c.boundCount(names(g)...); b != 0 || s.maxBound() != 0 {
			t.Errorf("huge, rejected, has %d pods bound (at most %d seen)", b, s.maxBound())
		}
		for _, v := range s.violations() {
			t.Error(v)
		}
	})

	t.Run("a node without the rack label", func(t *testing.T) {
		c := c.on(t)
		defer c.clearPods()
		c.addNode("loose", "8", "16Gi", 0, map[string]string{zoneKey: "z1", blockKey: "b2"})
		unknown := "rack-_unknown" // the level's type, then gang.UnknownDomain
		var path []string
		err := wait.PollUntilContextTimeout(c.Ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			path = c.graphPath(kubectl, "loose")
			return path != nil, nil
		})
		if err != nil {
			t.Fatalf("the graph has no node loose within 30s:\n%s", kubectl(t, "graph"))
		}
		if want := []string{"zone-z1", "block-b2", unknown}; !slices.Equal(path, want) {
			t.Errorf("the graph has loose under %v; want %v", path, want)
		}
		out := kubectl(t, "graph")
		for _, want := range []string{
			"Levels: cluster > zone (" + zoneKey + ", 1 value) > block (" + blockKey + ", 2 values) > rack (" + rackKey + ", 4 values) > node\n",
			"1 node has no " + rackKey + " label: under rack " + unknown + "\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl fluence graph lacks %q:\n%s", want, out)
			}
		}
		if tree := regexp.MustCompile(`└── rack ` + unknown + `\n[ │]*└── node loose: cpu 8,`); !tree.MatchString(out) {
			t.Errorf("kubectl fluence graph does not draw loose alone under rack %s:\n%s", unknown, out)
		}
		out = kubectl(t, "nodes", "-o", "wide")
		requireLine(t, "kubectl fluence nodes -o wide", out, `^NAME +STATUS +CPU +MEMORY +GPU +PODS +GROUPS +ZONE +BLOCK +RACK +FOREIGN$`)
		requireLine(t, "kubectl fluence nodes -o wide", out, `^loose +Ready +.* +z1 +b2 +_unknown +0 pods`)
		requireLine(t, "kubectl fluence nodes -o wide", out, `^node-1 +Ready +.* +z1 +b1 +r2 +0 pods`)
		requireLine(t, "kubectl fluence nodes -o wide", out, `^node-7 +Ready +.* +z1 +b2 +r4 +0 pods`)

		// The unknown domain is no rack: with a CPU of every rack node
		// taken, a group that requires a rack and fits whole on loose
		// alone waits, and starts in r4 once r4's two nodes are free.
		var all []string
		for i := range 8 {
			all = append(all, fmt.Sprintf("node-%d", i))
		}
		c.occupy(kubectl, "1", all...)
		g := topologyGroup("norack", 2, "4", k8sadapter.TopologyRequiredKey, rackKey)
		s := c.sampleGroup(g, rackKey)
		c.createPods(g...)
		if reason := c.waitForEventOf(30*time.Second, "norack-0", "FluenceGroupWaiting", "FluenceGroupReserved"); reason == "FluenceGroupPlaced" {
			t.Fatalf("norack was placed while no rack had room for it: nodes %v", c.nodesOf(names(g)...))
		}
		c.waitForEvent(30*time.Second, "norack-0", "FluenceGroup", "within one "+rackKey)
		s.free()
		c.deletePods("fill-node-6", "fill-node-7")
		c.waitBoundOrExplain(kubectl, "norack", g)
		s.stop()
		if racks := c.domainsOf(g, rackKey); !slices.Equal(racks, []string{"r4"}) {
			t.Errorf("norack runs in racks %v (nodes %v); want r4", racks, c.nodesOf(names(g)...))
		}
		for _, v := range s.violations() {
			t.Error(v)
		}
	})
	c.checkInvariants(inv)
}

// decodeJSON reads kubectl fluence's -o json output into v.
func (c *cluster) decodeJSON(s string, v any) {
	c.t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		c.t.Fatalf("decoding %T: %v\n%s", v, err, s)
	}
}

// waitBoundOrExplain waits until every pod of the group is bound; if they
// are not within a minute, it fails t with what fluence says of the group
// (kubectl fluence explain and groups -o wide) and the pods' events.
func (c *cluster) waitBoundOrExplain(kubectl kubectlFunc, group string, pods []*corev1.Pod) {
	c.t.Helper()
	err := wait.PollUntilContextTimeout(c.Ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return c.boundCount(names(pods)...) == len(pods), nil
	})
	if err == nil {
		return
	}
	var events []string
	if list, err := c.Client.EventsV1().Events(c.NS).List(c.Ctx, metav1.ListOptions{}); err == nil {
		for _, e := range list.Items {
			if slices.Contains(names(pods), e.Regarding.Name) {
				events = append(events, e.Regarding.Name+" "+e.Reason+": "+e.Note)
			}
		}
	}
	c.t.Fatalf("%d of %s's %d pods bound within a minute (nodes %v)\n$ kubectl fluence explain %s\n%s$ kubectl fluence groups -o wide\n%s$ kubectl fluence nodes\n%sevents:\n%s",
		c.boundCount(names(pods)...), group, len(pods), c.nodesOf(names(pods)...), group, kubectl(c.t, "explain", group),
		kubectl(c.t, "groups", "-o", "wide"), kubectl(c.t, "nodes"), strings.Join(events, "\n"))
}

// kubectlFunc runs `kubectl fluence ARGS` against the scheduler and
// returns what it printed, failing t on error.
type kubectlFunc func(t testing.TB, args ...string) string

// runFluenceInspected is runFluence with the inspection API served: it
// returns a kubectlFunc that asks the scheduler's inspection handler
// directly (--scheduler-url), as a user after kubectl port-forward would.
func (c *cluster) runFluenceInspected(args map[string]string) (*invariants, kubectlFunc) {
	c.t.Helper()
	inv := startInvariants(c)
	startNodeSim(c, simOptions{})
	insp := plugin.NewInspectors()
	registry := frameworkruntime.Registry{
		plugin.Name:          plugin.NewWith(plugin.Options{Trace: inv.traced, Inspectors: insp}),
		plugin.QueueSortName: plugin.NewQueueSort,
	}
	c.startScheduler(fluenceConfig(c.t, args), registry)
	srv := httptest.NewTLSServer(insp.Handler(nil))
	c.t.Cleanup(srv.Close)
	kubeconfig := c.kubeconfigFile()
	c.t.Cleanup(func() {
		if c.t.Failed() {
			c.dumpWaiting(5)
		}
	})
	return inv, func(t testing.TB, args ...string) string {
		t.Helper()
		args = append([]string{"--scheduler-url", srv.URL, "--scheduler-insecure-skip-tls-verify"}, args...)
		out, err := c.kubectlFluenceErr(kubeconfig, args...)
		if err != nil {
			t.Fatalf("kubectl fluence %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
}

// on returns the cluster for a subtest: the same API server, its helpers
// reporting to t.
func (c *cluster) on(t testing.TB) *cluster {
	return &cluster{t: t, Ctx: c.Ctx, Client: c.Client, Config: c.Config, NS: c.NS, lc: c.lc}
}

// topologyGroup is a fluence group whose pods carry the topology
// annotation (TopologyRequiredKey or TopologyPreferredKey) for the key.
func topologyGroup(name string, n int, cpu, annotation, key string) []*corev1.Pod {
	pods := groupPods(name, n, cpu, 0, 0)
	for _, p := range pods {
		p.Annotations = map[string]string{annotation: key}
	}
	return pods
}

// domainsOf returns the values of the label key on the pods' nodes ("" for
// none), sorted and distinct.
func (c *cluster) domainsOf(pods []*corev1.Pod, key string) []string {
	c.t.Helper()
	var out []string
	for _, node := range c.nodesOf(names(pods)...) {
		n, err := c.Client.CoreV1().Nodes().Get(c.Ctx, node, metav1.GetOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		if v := n.Labels[key]; !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// wantDomainAnnotation checks that each pod carries the domain its group
// was kept in, written at binding.
func (c *cluster) wantDomainAnnotation(pods []*corev1.Pod, want string) {
	c.t.Helper()
	for _, p := range pods {
		got, err := c.Client.CoreV1().Pods(p.Namespace).Get(c.Ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		if d := got.Annotations[k8sadapter.DomainKey]; d != want {
			c.t.Errorf("pod %s: annotation %s is %q; want %q", p.Name, k8sadapter.DomainKey, d, want)
		}
	}
}

// occupy binds one pod of another scheduler, asking cpu, to each node
// (fill-NODE) and waits until fluence counts them (kubectl fluence nodes).
func (c *cluster) occupy(kubectl kubectlFunc, cpu string, nodes ...string) {
	c.t.Helper()
	for _, node := range nodes {
		p := newTestPod("fill-"+node, "other-scheduler", cpu, "", 0, nil)
		p.Spec.NodeName = node
		c.createPods(p)
	}
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		var list inspect.NodeList
		c.decodeJSON(kubectl(c.t, "nodes", "-o", "json"), &list)
		seen := 0
		for _, n := range list.Items {
			if slices.Contains(nodes, n.Name) && n.Foreign.Pods == 1 {
				seen++
			}
		}
		return seen == len(nodes), nil
	})
	if err != nil {
		c.t.Fatalf("fluence does not count the pods on %v within 30s", nodes)
	}
}

// hold runs, on each node, a one-pod fluence group asking cpu and
// declaring the node's duration as its planned run time, and waits until
// they run. It returns the pods by the rack of their node.
func (c *cluster) hold(cpu string, planned map[string]time.Duration) map[string]string {
	c.t.Helper()
	byRack := map[string]string{}
	var all []string
	for node, d := range planned {
		n, err := c.Client.CoreV1().Nodes().Get(c.Ctx, node, metav1.GetOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		p := groupPods("hold-"+node, 1, cpu, 0, d)[0]
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
		c.createPods(p)
		byRack[n.Labels[rackKey]] = p.Name
		all = append(all, p.Name)
	}
	c.waitForPodPhase(time.Minute, corev1.PodRunning, all...)
	return byRack
}

// deletePods deletes the named pods at once (no kubelet lingers) and
// waits until they are gone.
func (c *cluster) deletePods(names ...string) {
	c.t.Helper()
	zero := int64(0)
	for _, name := range names {
		err := c.Client.CoreV1().Pods(c.NS).Delete(c.Ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			c.t.Fatal(err)
		}
	}
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		for _, name := range names {
			if _, err := c.Client.CoreV1().Pods(c.NS).Get(c.Ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		c.t.Fatalf("pods %v not gone within 30s", names)
	}
}

// clearPods deletes every pod of the namespace and waits until none is
// left.
func (c *cluster) clearPods() {
	c.t.Helper()
	list, err := c.Client.CoreV1().Pods(c.NS).List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var all []string
	for _, p := range list.Items {
		all = append(all, p.Name)
	}
	c.deletePods(all...)
}

// relabel sets a label of a node as kubectl label --overwrite does: a
// read, then an Update of the Node.
func (c *cluster) relabel(node, key, value string) {
	c.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.Client.CoreV1().Nodes().Get(c.Ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Labels[key] = value
		_, err = c.Client.CoreV1().Nodes().Update(c.Ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		c.t.Fatalf("relabelling node %s: %v", node, err)
	}
}

// largestDomain returns the domain of the label key fluence names as the
// largest (most nodes, then most CPUs, then the first value) with its
// nodes and whole CPUs, from the nodes in the API.
func (c *cluster) largestDomain(key string) (string, int, int) {
	c.t.Helper()
	list, err := c.Client.CoreV1().Nodes().List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	nodes, cpus := map[string]int{}, map[string]int{}
	for _, n := range list.Items {
		v, ok := n.Labels[key]
		if !ok {
			continue
		}
		nodes[v]++
		cpus[v] += int(n.Status.Allocatable.Cpu().Value())
	}
	var best string
	for v := range nodes {
		if best == "" || nodes[v] > nodes[best] || nodes[v] == nodes[best] && (cpus[v] > cpus[best] || cpus[v] == cpus[best] && v < best) {
			best = v
		}
	}
	return best, nodes[best], cpus[best]
}

// waitForEventOf waits for an event on the pod with one of the reasons,
// or FluenceGroupPlaced, and returns the reason found.
func (c *cluster) waitForEventOf(timeout time.Duration, pod string, reasons ...string) string {
	c.t.Helper()
	reasons = append(reasons, "FluenceGroupPlaced")
	var found string
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.Client.EventsV1().Events(c.NS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, e := range list.Items {
			if e.Regarding.Name == pod && slices.Contains(reasons, e.Reason) {
				found = e.Reason
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		c.t.Fatalf("no event %v on pod %s within %v", reasons, pod, timeout)
	}
	return found
}

// waitForCondition waits until the pod's PodScheduled condition is false
// with a message containing the string.
func (c *cluster) waitForCondition(timeout time.Duration, pod, contains string) {
	c.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(c.NS).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled {
				last = string(cond.Status) + ": " + cond.Message
				return cond.Status == corev1.ConditionFalse && strings.Contains(cond.Message, contains), nil
			}
		}
		return false, nil
	})
	if err != nil {
		c.t.Fatalf("pod %s: PodScheduled not false with %q within %v; last %q", pod, contains, timeout, last)
	}
}

// groupDomains returns the topology domains the inspection API gives the
// group (kubectl fluence groups -o json).
func (c *cluster) groupDomains(kubectl kubectlFunc, group string) []string {
	c.t.Helper()
	var list inspect.GroupList
	c.decodeJSON(kubectl(c.t, "groups", "-o", "json"), &list)
	for _, g := range list.Items {
		if g.Name == group {
			return g.Domains
		}
	}
	c.t.Fatalf("kubectl fluence groups: no group %s", group)
	return nil
}

// graphPath returns the domain vertices above the node in the graph
// kubectl fluence graph -o json shows, outermost first (the cluster left
// out); nil when the node is not in it.
func (c *cluster) graphPath(kubectl kubectlFunc, node string) []string {
	c.t.Helper()
	var g inspect.Graph
	c.decodeJSON(kubectl(c.t, "graph", "-o", "json"), &g)
	var find func(v *inspect.Vertex, path []string) []string
	find = func(v *inspect.Vertex, path []string) []string {
		if v.Type == "node" {
			if v.Name == node {
				return slices.Clone(path)
			}
			return nil
		}
		if v.Type != "cluster" {
			path = append(path, v.Name)
		}
		for _, ch := range v.Children {
			if p := find(ch, path); p != nil {
				return p
			}
		}
		return nil
	}
	if g.Root == nil {
		return nil
	}
	return find(g.Root, nil)
}

// groupSampler watches one group's pods from before they are created
// until stop: every sample, the bound ones must be in one domain of the
// key and, until free is called, none may be bound.
type groupSampler struct {
	mu       sync.Mutex
	freed    bool
	most     int
	problems []string
	done     chan struct{}
	stopped  chan struct{}
}

func (c *cluster) sampleGroup(pods []*corev1.Pod, key string) *groupSampler {
	c.t.Helper()
	list, err := c.Client.CoreV1().Nodes().List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	domainOf := map[string]string{}
	for _, n := range list.Items {
		domainOf[n.Name] = n.Labels[key]
	}
	want := names(pods)
	s := &groupSampler{done: make(chan struct{}), stopped: make(chan struct{})}
	c.t.Cleanup(s.stop)
	go func() {
		defer close(s.stopped)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-c.Ctx.Done():
				return
			case <-tick.C:
			}
			list, err := c.Client.CoreV1().Pods(c.NS).List(c.Ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			var on []string
			domains := map[string]bool{}
			for _, p := range list.Items {
				if slices.Contains(want, p.Name) && p.Spec.NodeName != "" {
					on = append(on, p.Name+"@"+p.Spec.NodeName)
					domains[domainOf[p.Spec.NodeName]] = true
				}
			}
			s.mu.Lock()
			s.most = max(s.most, len(on))
			switch {
			case len(on) > 0 && !s.freed:
				s.problems = append(s.problems, fmt.Sprintf("bound before any domain of %s was freed: %v", key, on))
			case len(domains) > 1:
				s.problems = append(s.problems, fmt.Sprintf("bound across domains of %s: %v", key, on))
			}
			s.mu.Unlock()
		}
	}()
	return s
}

// free says the domain the group waits for was freed: it may bind now.
func (s *groupSampler) free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freed = true
}

// stop ends the sampling and waits for the last sample.
func (s *groupSampler) stop() {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	<-s.stopped
}

func (s *groupSampler) maxBound() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most
}

func (s *groupSampler) violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.problems) > 5 {
		return append(slices.Clone(s.problems[:5]), fmt.Sprintf("… and %d more samples like these", len(s.problems)-5))
	}
	return slices.Clone(s.problems)
}
