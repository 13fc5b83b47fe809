package plugin

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// poolNodes adds two 2-CPU nodes labelled pool=cpu and two 2-CPU nodes
// with one GPU labelled pool=gpu.
func (f *clusterFixture) poolNodes() {
	for i := range 2 {
		f.c.onNode(node(fmt.Sprintf("cpu%d", i), 2, map[string]string{"pool": "cpu"}))
		n := node(fmt.Sprintf("gpu%d", i), 2, map[string]string{"pool": "gpu"})
		n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("1")
		f.c.onNode(n)
	}
}

func (f *clusterFixture) poolPod(name, pool string, gpu bool) *corev1.Pod {
	p := f.pod(name, 1)
	p.Spec.NodeSelector = map[string]string{"pool": pool}
	if gpu {
		p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
	}
	return p
}

// A launcher asking for the CPU pool and workers asking for the GPU pool
// form one group: each pod goes to its own pool. ANDing the selectors
// (what fluence did before) left no node at all.
func TestGroupAcrossNodePools(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.poolNodes()
	pods := []*corev1.Pod{f.poolPod("launcher", "cpu", false), f.poolPod("worker-0", "gpu", true), f.poolPod("worker-1", "gpu", true)}
	vs := f.gang(pods, gid("mpi", 3))
	if placedCount(vs) != 3 {
		t.Fatalf("placed %d of 3: %+v", placedCount(vs), vs)
	}
	if !strings.HasPrefix(vs[0].node, "cpu") || !strings.HasPrefix(vs[1].node, "gpu") || !strings.HasPrefix(vs[2].node, "gpu") || vs[1].node == vs[2].node {
		t.Fatalf("launcher on %s, workers on %s and %s", vs[0].node, vs[1].node, vs[2].node)
	}

	// Three GPU workers cannot fit two GPU nodes, however many CPUs the
	// CPU pool has.
	more := []*corev1.Pod{f.poolPod("l", "cpu", false), f.poolPod("w-0", "gpu", true), f.poolPod("w-1", "gpu", true), f.poolPod("w-2", "gpu", true)}
	ms := f.gang(more, gid("more", 4))
	if placedCount(ms) != 0 || !ms[3].final || !strings.Contains(ms[3].reason, "gpu") {
		t.Fatalf("three GPU workers on two GPU nodes: %+v", ms[3])
	}
}

// A group judged before its pods exist counts the missing ones as able to
// go anywhere: the first pod's node pool says nothing about the others'.
func TestEarlyCheckDoesNotExtendTheFirstPodsPool(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.poolNodes()
	// 8 cores in all, 4 in the CPU pool: a group of 6 whose first pod asks
	// for the CPU pool may still fit.
	if v := f.schedule(f.poolPod("launcher", "cpu", false), gid("g", 6)); v.final || !strings.Contains(v.reason, "1 of 6 exist") {
		t.Fatalf("first pod of a group of 6 on 8 cores: %+v", v)
	}
	// 9 pods cannot fit 8 cores, wherever they go.
	if v := f.schedule(f.poolPod("l", "cpu", false), gid("huge", 9)); !v.final || !strings.Contains(v.reason, "needs 9") {
		t.Fatalf("first pod of a group of 9 on 8 cores: %+v", v)
	}
}
