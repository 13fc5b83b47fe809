package plugin

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
)

// These tests drive the plugin's state machine directly, the way the
// framework's extension points and informers do, on plain objects. The
// integration tests (test/integration) run the same code in a real
// kube-scheduler against a real API server.

type clusterFixture struct {
	t     *testing.T
	c     *cluster
	clock *clocktesting.FakeClock
	n     int
}

func newClusterFixture(t *testing.T, args Args) *clusterFixture {
	t.Helper()
	cfg, err := args.Validate()
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	c := newCluster(cfg, func(p *corev1.Pod) bool { return p.Spec.SchedulerName == "fluence" }, clk, klog.Background())
	return &clusterFixture{t: t, c: c, clock: clk}
}

func node(name string, cpu int, labels map[string]string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	n.Status.Allocatable = corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(cpu), resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	return n
}

func (f *clusterFixture) nodes(n, cpu int) {
	for i := range n {
		f.c.onNode(node(fmt.Sprintf("n%02d", i), cpu, nil))
	}
}

// pod is a pending pod of this scheduler with the given CPU request.
func (f *clusterFixture) pod(name string, cpu int) *corev1.Pod {
	f.n++
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, UID: types.UID(fmt.Sprintf("uid-%s-%d", name, f.n)),
		CreationTimestamp: metav1.NewTime(time.Unix(int64(f.n), 0)),
	}}
	p.Spec.SchedulerName = "fluence"
	p.Spec.Containers = []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(cpu), resource.DecimalSI)},
	}}}
	return p
}

// foreignPod is a pod the stock scheduler bound to node.
func (f *clusterFixture) foreignPod(name string, cpu int, node string) *corev1.Pod {
	p := f.pod(name, cpu)
	p.Spec.SchedulerName = "default-scheduler"
	p.Spec.NodeName = node
	return p
}

func gid(name string, size int32) GroupID {
	return GroupID{Namespace: "ns", Name: name, Key: "ns/" + name, Size: size, Source: "label"}
}

// schedule runs PreFilter, Reserve and Permit for one pod and returns its
// node ("" when it waits) and the verdict.
func (f *clusterFixture) schedule(p *corev1.Pod, id GroupID) verdict {
	f.t.Helper()
	fx := &effects{}
	v := f.c.place(p, id, fx)
	if v.node != "" {
		if err := f.c.reserve(p, v.node); err != nil {
			f.t.Fatalf("reserve %s: %v", p.Name, err)
		}
	}
	return v
}

// bind completes a pod's binding as the informer reports it.
func (f *clusterFixture) bind(p *corev1.Pod, node string) *corev1.Pod {
	b := p.DeepCopy()
	b.Spec.NodeName = node
	if rec := f.c.recordOf(p); rec != "" {
		b.Annotations = map[string]string{AllocationKey: rec}
	}
	f.c.boundOK(p)
	f.c.onPod(b, &effects{})
	return b
}

func (f *clusterFixture) finish(p *corev1.Pod) {
	d := p.DeepCopy()
	d.Status.Phase = corev1.PodSucceeded
	f.c.onPod(d, &effects{})
}

// gang schedules every pod of a group and returns their nodes.
func (f *clusterFixture) gang(pods []*corev1.Pod, id GroupID) []verdict {
	out := make([]verdict, len(pods))
	for i, p := range pods {
		out[i] = f.schedule(p, id)
	}
	// Pods before the last waited for the rest; try them again.
	for i, p := range pods {
		if out[i].node == "" {
			out[i] = f.schedule(p, id)
		}
	}
	return out
}

// placedGroup creates a group of n pods and schedules it, failing the
// test unless every pod is placed.
func (f *clusterFixture) placedGroup(name string, n, cpu int) ([]*corev1.Pod, []verdict) {
	f.t.Helper()
	pods := f.pods(name, n, cpu)
	vs := f.gang(pods, gid(name, int32(n)))
	if got := placedCount(vs); got != n {
		f.t.Fatalf("setup: group %s: %d of %d pods placed: %+v", name, got, n, vs)
	}
	return pods, vs
}

func (f *clusterFixture) pods(prefix string, n, cpu int) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, f.pod(fmt.Sprintf("%s-%d", prefix, i), cpu))
	}
	return out
}

func placedCount(vs []verdict) int {
	n := 0
	for _, v := range vs {
		if v.node != "" {
			n++
		}
	}
	return n
}

func TestGroupPlacedWholeOrNotAtAll(t *testing.T) {
	for _, tc := range []struct {
		nodes, want int
	}{{10, 10}, {9, 0}} {
		t.Run(fmt.Sprintf("%d-nodes", tc.nodes), func(t *testing.T) {
			f := newClusterFixture(t, Args{})
			f.nodes(tc.nodes, 1)
			vs := f.gang(f.pods("g", 10, 1), gid("g", 10))
			if got := placedCount(vs); got != tc.want {
				t.Fatalf("%d of 10 pods placed, want %d", got, tc.want)
			}
			if tc.want == 0 {
				if !vs[9].final || !strings.Contains(vs[9].reason, "core") {
					t.Fatalf("reason %q (final %v) should say cores are short and be final", vs[9].reason, vs[9].final)
				}
			} else {
				seen := map[string]bool{}
				for _, v := range vs {
					if seen[v.node] {
						t.Fatalf("two pods on %s, each node has one core", v.node)
					}
					seen[v.node] = true
				}
			}
		})
	}
}

func TestGroupWaitsForItsPods(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(4, 2)
	pods := f.pods("g", 3, 1)
	for _, p := range pods[:2] {
		v := f.schedule(p, gid("g", 3))
		if v.node != "" || v.final || !strings.Contains(v.reason, "of 3 exist") {
			t.Fatalf("%s: %+v, want a wait for the rest of the group", p.Name, v)
		}
	}
	if v := f.schedule(pods[2], gid("g", 3)); v.node == "" {
		t.Fatalf("last pod: %+v", v)
	}
	// Permit lets the group through only when every pod is reserved.
	ready, _, err := f.c.permit(pods[2])
	if err != nil || ready {
		t.Fatalf("permit with 1 of 3 reserved: ready=%v err=%v", ready, err)
	}
	f.schedule(pods[0], gid("g", 3))
	f.schedule(pods[1], gid("g", 3))
	ready, siblings, err := f.c.permit(pods[2])
	if err != nil || !ready || len(siblings) != 2 {
		t.Fatalf("permit with all reserved: ready=%v siblings=%v err=%v", ready, siblings, err)
	}
}

func TestAllocationReleasedWhenTheLastPodEnds(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(2, 1)
	a := f.pods("a", 2, 1)
	vs := f.gang(a, gid("a", 2))
	bound := []*corev1.Pod{f.bind(a[0], vs[0].node), f.bind(a[1], vs[1].node)}
	b := f.pods("b", 2, 1)
	if got := placedCount(f.gang(b, gid("b", 2))); got != 0 {
		t.Fatalf("b placed while a holds the nodes")
	}
	f.finish(bound[0])
	if got := placedCount(f.gang(b, gid("b", 2))); got != 0 {
		t.Fatalf("b placed after a's first pod ended: a's allocation was released early")
	}
	f.finish(bound[1])
	if got := placedCount(f.gang(b, gid("b", 2))); got != 2 {
		t.Fatalf("b: %d of 2 placed after a ended", got)
	}
}

func TestForeignPodsConsumeResources(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(2, 2)
	other := f.foreignPod("stock", 2, "n00")
	f.c.onPod(other, &effects{})
	g := f.pods("g", 2, 2)
	if got := placedCount(f.gang(g, gid("g", 2))); got != 0 {
		t.Fatalf("group of two 2-CPU pods placed beside a foreign 2-CPU pod on 2x2 CPUs")
	}
	f.finish(other)
	if got := placedCount(f.gang(g, gid("g", 2))); got != 2 {
		t.Fatalf("after the foreign pod ended: %d of 2 placed", got)
	}
}

func TestPodDeletedBeforeBindingWithdrawsTheGroup(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(2, 1)
	g, _ := f.placedGroup("g", 2, 1)
	fx := &effects{}
	f.c.onPodGone(g[1], fx)
	if len(fx.reject) != 1 || fx.reject[0] != g[0].UID {
		t.Fatalf("the reserved sibling should be rejected at Permit: %v", fx.reject)
	}
	// Both nodes are free again: another group of two fits.
	if got := placedCount(f.gang(f.pods("h", 2, 1), gid("h", 2))); got != 2 {
		t.Fatalf("after withdrawal: %d of 2 placed", got)
	}
}

func TestUnreserveWithdrawsUnlessBound(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(3, 1)
	g := f.pods("g", 3, 1)
	vs := f.gang(g, gid("g", 3))
	f.bind(g[0], vs[0].node)
	fx := &effects{}
	f.c.unreserve(g[1], fx)
	if len(fx.reject) != 0 {
		t.Fatalf("a bound group's allocation was withdrawn: %v", fx.reject)
	}
	if v := f.schedule(g[1], gid("g", 3)); v.node != vs[1].node {
		t.Fatalf("retry of a pod of a bound group: %+v, want its node %s", v, vs[1].node)
	}
}

func TestRestartAdoptsRecordedAllocations(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(2, 2)
	g := f.pods("g", 2, 2)
	vs := f.gang(g, gid("g", 2))
	bound := []*corev1.Pod{f.bind(g[0], vs[0].node), f.bind(g[1], vs[1].node)}

	// A new scheduler sees the nodes and the bound pods with their record.
	f2 := newClusterFixture(t, Args{})
	f2.nodes(2, 2)
	for _, p := range bound {
		if p.Annotations[AllocationKey] == "" {
			t.Fatal("binding wrote no allocation record")
		}
		f2.c.onPod(p, &effects{})
	}
	f2.n = 100
	h := f2.pods("h", 2, 2)
	if got := placedCount(f2.gang(h, gid("h", 2))); got != 0 {
		t.Fatal("a pod was placed on nodes the adopted allocation fills")
	}
	for _, p := range bound {
		f2.finish(p)
	}
	if got := placedCount(f2.gang(h, gid("h", 2))); got != 2 {
		t.Fatalf("after the adopted group ended: %d of 2 placed", got)
	}
}

// A binding sent by the scheduler's previous run just before it stopped
// lands after the new run placed the group elsewhere: the new allocation
// is withdrawn, the pod counts where it was bound, and the rest of the
// group is placed around it.
func TestLateBindingFromBeforeARestart(t *testing.T) {
	old := newClusterFixture(t, Args{})
	old.nodes(3, 2)
	stock := old.foreignPod("stock", 2, "n00")
	old.c.onPod(stock, &effects{})
	g, vs := old.placedGroup("g", 2, 2)
	if vs[0].node == "n00" || vs[1].node == "n00" {
		t.Fatalf("setup: the old run placed g beside the foreign pod: %+v", vs)
	}
	late := g[0].DeepCopy()
	late.Spec.NodeName = vs[0].node
	late.Annotations = map[string]string{AllocationKey: old.c.recordOf(g[0])}

	// The new run starts after the foreign pod ended, so it places g on
	// other nodes (n00 first), before the old binding is seen.
	f := newClusterFixture(t, Args{})
	f.nodes(3, 2)
	nvs := f.gang(g, gid("g", 2))
	if nvs[0].node == "" || nvs[0].node == late.Spec.NodeName {
		t.Fatalf("setup: the new run should place g-0 away from %s: %+v", late.Spec.NodeName, nvs)
	}
	fx := &effects{}
	f.c.onPod(late, fx)
	if slices.Contains(fx.reject, g[0].UID) {
		t.Errorf("the bound pod was turned away at Permit: %v", fx.reject)
	}
	if !slices.Contains(fx.reject, g[1].UID) || fx.activate["ns/g-1"] == nil {
		t.Errorf("the sibling should be turned away and woken: reject %v, activate %v", fx.reject, slices.Sorted(maps.Keys(fx.activate)))
	}
	v := f.schedule(g[1], gid("g", 2))
	if v.node == "" || v.node == late.Spec.NodeName {
		t.Fatalf("g-1 after the late binding: %+v (g-0 fills %s)", v, late.Spec.NodeName)
	}
	// g-0 holds its node: a 2-CPU pod fits only on the third one.
	h := f.pods("h", 3, 2)
	if got := placedCount(f.gang(h, gid("h", 3))); got != 0 {
		t.Fatalf("%d of a group of three placed with one node free", got)
	}
}

func TestNodeGoneAndCordoned(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(3, 1)
	f.c.onNodeGone("n00")
	c := node("n01", 1, nil)
	c.Spec.Unschedulable = true
	f.c.onNode(c)
	g := f.pods("g", 1, 1)
	vs := f.gang(g, gid("g", 1))
	if vs[0].node != "n02" {
		t.Fatalf("placed on %q, want n02 (n00 deleted, n01 cordoned)", vs[0].node)
	}
	f.finish(f.bind(g[0], "n02"))
	// A group of two waits: the cordoned node may come back, the deleted
	// one is gone, so the group is not rejected for good.
	vs = f.gang(f.pods("h", 2, 1), gid("h", 2))
	if placedCount(vs) != 0 || vs[1].final || !strings.Contains(vs[1].reason, "1 down") {
		t.Fatalf("group of 2 on one usable node: %+v", vs)
	}
	f.c.onNode(node("n01", 1, nil)) // uncordoned
	fx := &effects{}
	f.c.loop(fx)
	if len(fx.activate) != 2 {
		t.Fatalf("after uncordon the loop should place h and wake its 2 pods: %v", fx.activate)
	}
}

func TestSizeDisagreementIsInvalid(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(4, 1)
	p := f.pods("g", 2, 1)
	f.schedule(p[0], gid("g", 2))
	v := f.schedule(p[1], gid("g", 3))
	if !v.final || !strings.Contains(v.reason, "disagree") {
		t.Fatalf("%+v", v)
	}
	// Another group is unaffected.
	if got := placedCount(f.gang(f.pods("h", 2, 1), gid("h", 2))); got != 2 {
		t.Fatalf("other group: %d of 2 placed", got)
	}
}

func TestTaintedNodesAvoided(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(2, 1)
	tainted := node("n00", 1, nil)
	tainted.Spec.Taints = []corev1.Taint{{Key: "gpu", Value: "only", Effect: corev1.TaintEffectNoSchedule}}
	f.c.onNode(tainted)
	vs := f.gang(f.pods("g", 1, 1), gid("g", 1))
	if vs[0].node != "n01" {
		t.Fatalf("placed on %q, want n01", vs[0].node)
	}
	vs = f.gang(f.pods("h", 1, 1), gid("h", 1))
	if vs[0].node != "" {
		t.Fatalf("placed on the tainted node %q", vs[0].node)
	}
}

func TestUnsatisfiableRejectedOthersFlow(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(8, 3)
	big := f.gang(f.pods("big", 50, 1), gid("big", 50))
	if placedCount(big) != 0 || !big[49].final || !strings.Contains(big[49].reason, "cannot be placed") {
		t.Fatalf("size 50 on 8x3 cores: %+v", big[49])
	}
	gpu := f.pod("gpu", 1)
	gpu.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
	if v := f.schedule(gpu, gid("gpu", 1)); !v.final || !strings.Contains(v.reason, "gpu") {
		t.Fatalf("gpu pod on a cluster without GPUs: %+v", v)
	}
	arm := f.pod("arm", 1)
	arm.Spec.NodeSelector = map[string]string{"kubernetes.io/arch": "arm64"}
	if v := f.schedule(arm, gid("arm", 1)); !v.final || !strings.Contains(v.reason, "arm64") {
		t.Fatalf("arm64 pod on amd64 nodes: %+v", v)
	}
	if got := placedCount(f.gang(f.pods("ok", 4, 1), gid("ok", 4))); got != 4 {
		t.Fatalf("a fitting group behind the rejected ones: %d of 4 placed", got)
	}
}

// Another scheduler binds a pod where a group waits at Permit: the group's
// allocation is withdrawn before any of it binds, and its pods are turned
// away to be placed again.
func TestForeignBindingWithdrawsUnboundGroup(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(2, 2)
	g, vs := f.placedGroup("g", 2, 2)
	other := f.foreignPod("stock", 1, vs[0].node)
	fx := &effects{}
	f.c.onPod(other, fx)
	if len(fx.reject) != 2 {
		t.Fatalf("reserved pods turned away: %v, want both", fx.reject)
	}
	if rec := f.c.recordOf(g[0]); rec != "" {
		t.Fatalf("after withdrawal the pod still holds its allocation %q", rec)
	}
	// One node is left whole: the group of two 2-CPU pods waits.
	if got := placedCount(f.gang(g, gid("g", 2))); got != 0 {
		t.Fatalf("re-placed %d pods beside the foreign pod", got)
	}
}

// A group declared larger than the cluster is rejected from its first
// pods, without waiting for the rest to exist.
func TestImpossibleGroupRejectedBeforeItsPodsExist(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(8, 3)
	p := f.pods("huge", 3, 1)
	v := f.schedule(p[0], gid("huge", 50))
	if !v.final || !strings.Contains(v.reason, "needs 50") {
		t.Fatalf("first pod of a group of 50 on 24 cores: %+v", v)
	}
	// A group that fits waits for its pods as usual.
	if v := f.schedule(f.pod("ok-0", 1), gid("ok", 20)); v.final || !strings.Contains(v.reason, "1 of 20 exist") {
		t.Fatalf("first pod of a group of 20 on 24 cores: %+v", v)
	}
}

// A heterogeneous group is matched as itself: a 3-CPU launcher and two
// 1-CPU workers on 3-CPU nodes need a whole node for the launcher, which
// copies of the first pod would not show.
func TestHeterogeneousGroup(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(2, 3)
	pods := []*corev1.Pod{f.pod("mpi-launcher", 3), f.pod("mpi-worker-0", 1), f.pod("mpi-worker-1", 1)}
	vs := f.gang(pods, gid("mpi", 3))
	if placedCount(vs) != 3 {
		t.Fatalf("placed %d of 3: %+v", placedCount(vs), vs)
	}
	if vs[0].node == vs[1].node || vs[0].node == vs[2].node {
		t.Fatalf("a worker shares the launcher's full node: %+v", vs)
	}
	// Four 3-CPU pods cannot fit on two 3-CPU nodes, whatever the first pod asks.
	big := []*corev1.Pod{f.pod("h-0", 1), f.pod("h-1", 3), f.pod("h-2", 3), f.pod("h-3", 3)}
	hs := f.gang(big, gid("h", 4))
	if placedCount(hs) != 0 || !hs[3].final {
		t.Fatalf("impossible heterogeneous group: %+v", hs[3])
	}
}

// The metrics snapshot counts groups by state and what allocations hold.
func TestSnapshot(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(2, 2)
	f.gang(f.pods("a", 2, 1), gid("a", 2))   // placed
	f.schedule(f.pod("b-0", 1), gid("b", 2)) // gathering
	f.gang(f.pods("c", 3, 2), gid("c", 3))   // rejected: 6 cores on 4
	f.gang(f.pods("d", 2, 2), gid("d", 2))   // queued: 2 cores left, needs 4
	s := f.c.snapshot()
	want := map[string]int{"placed": 1, "gathering": 1, "rejected": 1, "queued": 1, "invalid": 0}
	for k, v := range want {
		if s.groups[k] != v {
			t.Errorf("groups[%s] = %d, want %d (all: %v)", k, s.groups[k], v, s.groups)
		}
	}
	if s.allocated["cpu"] != 2 || s.total["cpu"] != 4 || s.queued != 1 {
		t.Errorf("allocated %v of %v, queued %d", s.allocated, s.total, s.queued)
	}
}

// A node turning a pinned pod away withdraws the group and holds it off
// for a while (doubling on repeats), instead of re-placing it at once.
func TestTurnedAwayGroupHeldOff(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(2, 1)
	g, _ := f.placedGroup("g", 2, 1)
	f.c.failed(g[0], "Insufficient cpu", &effects{})
	v := f.schedule(g[0], gid("g", 2))
	if v.node != "" || !strings.Contains(v.reason, "placed again in 2s") {
		t.Fatalf("right after the withdrawal: %+v", v)
	}
	f.clock.Step(2 * time.Second)
	if got := placedCount(f.gang(g, gid("g", 2))); got != 2 {
		t.Fatalf("after the hold: %d of 2 placed", got)
	}
	f.c.failed(g[1], "Insufficient cpu", &effects{})
	f.c.failed(g[1], "Insufficient cpu", &effects{}) // no slot any more: no second step
	if v := f.schedule(g[1], gid("g", 2)); !strings.Contains(v.reason, "placed again in 2s") {
		t.Fatalf("a successful placement resets the hold: %+v", v)
	}
}

// When the hold ends the loop places the group and wakes its pods by
// itself: they sit in the framework's unschedulable pool, and on an idle
// cluster no event would bring them back (found as a 3-minute stall after
// a restart).
func TestHeldGroupPlacedWhenTheHoldEnds(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(2, 1)
	g, _ := f.placedGroup("g", 2, 1)
	f.c.failed(g[0], "Insufficient cpu", &effects{})

	fx := &effects{}
	f.c.loop(fx)
	if len(fx.activate) != 0 {
		t.Fatalf("pods woken during the hold: %v", slices.Sorted(maps.Keys(fx.activate)))
	}
	f.clock.Step(2 * time.Second)
	fx = &effects{}
	f.c.loop(fx)
	for _, p := range g {
		if fx.activate[p.Namespace+"/"+p.Name] == nil {
			t.Errorf("%s not woken when the hold ended (woken: %v)", p.Name, slices.Sorted(maps.Keys(fx.activate)))
		}
		if v := f.schedule(p, gid("g", 2)); v.node == "" {
			t.Errorf("%s not placed after the hold: %+v", p.Name, v)
		}
	}
}

// The same holds when the foreign pod arrives while the graph waits to be
// rebuilt: the rebuild replays the allocation, finds the node overloaded,
// and withdraws it.
func TestForeignBindingDuringRebuildWithdrawsUnboundGroup(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(2, 2)
	g, vs := f.placedGroup("g", 2, 2)
	f.c.onNode(node("n01", 2, map[string]string{"rack": "r1"})) // a graph change
	other := f.foreignPod("stock", 1, vs[0].node)
	fx := &effects{}
	f.c.onPod(other, fx)
	if len(fx.reject) != 0 {
		t.Fatalf("withdrawn before the rebuild: %v", fx.reject)
	}
	fx = &effects{}
	f.c.loop(fx)
	if len(fx.reject) != 2 {
		t.Fatalf("reserved pods turned away by the rebuild: %v, want both", fx.reject)
	}
	if rec := f.c.recordOf(g[1]); rec != "" {
		t.Fatalf("after withdrawal the pod still holds its allocation %q", rec)
	}
}

// A group turned away by a node (here as when the framework's cache has not
// yet seen the pods before it finish) keeps its place while it is held
// off: a group behind it that would delay it does not start in the
// meantime, and the held group starts when the hold ends.
func TestTurnedAwayGroupKeepsItsPlace(t *testing.T) {
	f := newClusterFixture(t, Args{QueuePolicy: "easy"})
	f.nodes(4, 1)
	first, vs := f.placedGroup("first", 3, 1)
	for i, p := range first {
		first[i] = f.bind(p, vs[i].node)
	}
	large := f.pods("large", 4, 1)
	if got := placedCount(f.gang(large, gid("large", 4))); got != 0 {
		t.Fatalf("setup: %d of large placed beside first", got)
	}
	for _, p := range first {
		f.finish(p)
	}
	if got := placedCount(f.gang(large, gid("large", 4))); got != 4 {
		t.Fatalf("setup: %d of 4 large pods placed after first ended", got)
	}
	f.c.failed(large[0], "Insufficient cpu", &effects{})

	long := f.pod("long", 1) // runs an hour: it would delay large
	if v := f.schedule(long, gid("long", 1)); v.node != "" {
		t.Fatalf("long placed on %s while large was held off", v.node)
	}
	f.clock.Step(2 * time.Second)
	if got := placedCount(f.gang(large, gid("large", 4))); got != 4 {
		t.Fatalf("after the hold: %d of 4 large pods placed", got)
	}
}
