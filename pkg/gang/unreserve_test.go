package gang

import (
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// placedPair returns a core with two 4-CPU nodes and a 2-pod group placed,
// both pods reserved on their nodes and waiting at Permit.
func placedPair(t *testing.T) (*Core, [2]Pod, [2]string) {
	t.Helper()
	c, err := New(Config{Queue: queue.Config{Policy: queue.Easy}, RunID: "run1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"n1", "n2"} {
		c.NodeSet(Node{Name: n, Allocatable: Resources{MilliCPU: 4000, MemoryBytes: 8 << 30}}, 0)
	}
	id := NewGroupID("ns", "g", 2, SourceNativePodGroup)
	var pods [2]Pod
	var nodes [2]string
	for i, name := range []string{"a", "b"} {
		pods[i] = Pod{UID: "uid-" + name, Namespace: "ns", Name: name, Owned: true, Created: int64(i), Requests: Resources{MilliCPU: 3000}}
	}
	c.Place(pods[0], id, 0) // the first pod waits for the second
	for _, i := range []int{1, 0} {
		v := c.Place(pods[i], id, 0)
		if v.Node == "" {
			t.Fatalf("pod %s not placed: %s", pods[i].Name, v.Reason)
		}
		nodes[i] = v.Node
		if err := c.Reserve(pods[i].UID, v.Node); err != nil {
			t.Fatal(err)
		}
	}
	c.Ready()
	return c, pods, nodes
}

// Unreserve names the node the pod was reserved on: one for another node
// is for an allocation already withdrawn and placed again, and must not
// withdraw the new one.
func TestUnreserveOtherNode(t *testing.T) {
	c, pods, nodes := placedPair(t)
	other := "n1"
	if nodes[0] == "n1" {
		other = "n2"
	}
	c.Unreserve(pods[0].UID, other, 1)
	if fx := c.Ready(); len(fx.Reject) != 0 {
		t.Fatalf("an Unreserve for node %s withdrew the allocation on %s: %+v", other, nodes[0], fx.Reject)
	}
	if ready, err := c.Permit(pods[1].UID); err != nil || !ready {
		t.Errorf("Permit after a stray Unreserve: ready %v, %v; want the group let through", ready, err)
	}

	c, pods, nodes = placedPair(t)
	c.Unreserve(pods[0].UID, nodes[0], 1)
	if fx := c.Ready(); len(fx.Reject) != 1 || fx.Reject[0].Pod.UID != pods[1].UID {
		t.Errorf("Unreserve on the pod's own node: rejections %+v, want the other waiting pod turned away", fx.Reject)
	}
}

// Kubernetes 1.37's workload cycle reverts a tentative Reserve: the slot
// is free for the next Reserve and the allocation stays.
func TestUnreservedKeepsAllocation(t *testing.T) {
	c, pods, nodes := placedPair(t)
	for i := range pods {
		c.Unreserved(pods[i].UID, nodes[i])
	}
	if fx := c.Ready(); len(fx.Reject) != 0 || len(fx.Activate) != 0 {
		t.Fatalf("a reverted Reserve changed the group: %+v", fx)
	}
	for i := range pods {
		if v := c.Place(pods[i], NewGroupID("ns", "g", 2, SourceNativePodGroup), 1); v.Node != nodes[i] {
			t.Fatalf("pod %s placed on %q after the revert, want its slot's node %s", pods[i].Name, v.Node, nodes[i])
		}
		if err := c.Reserve(pods[i].UID, nodes[i]); err != nil {
			t.Fatal(err)
		}
	}
	if ready, err := c.Permit(pods[0].UID); err != nil || !ready {
		t.Errorf("Permit after reserving again: ready %v, %v; want the group let through", ready, err)
	}
}
