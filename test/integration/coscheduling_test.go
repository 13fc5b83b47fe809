package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	fwk "k8s.io/kube-scheduler/framework"
)

// What a scheduler-plugins PodGroup asks besides minMember, as the
// coscheduling plugin reads it, on a real API server with the shipped CRD:
//
//   - spec.minResources beyond all the nodes' allocatable rejects the
//     group, naming the PodGroup, the resource, the amount asked and what
//     the nodes have, in the PodGroup's condition and in
//     FluenceGroupRejected events on its pods and on the PodGroup; a
//     minimum within that total is placed, and a resource fluence does not
//     count is named in a FluenceUnsupported event;
//   - spec.scheduleTimeoutSeconds 0, which the MPI Operator writes when an
//     MPIJob asks no timeout, leaves the plugin's permitTimeout (the group
//     binds); a negative one is refused, naming the PodGroup;
//   - spec.scheduleTimeoutSeconds bounds the group's wait at Permit in
//     place of the plugin's permitTimeout (5 minutes here): a group one of
//     whose pods never reaches Permit has its reserved pods released when
//     their 2 s are up, nothing of it binds, and it is placed again whole
//     once the missing pod comes.
func TestCoschedulingPodGroupFields(t *testing.T) {
	c := newCluster(t)
	c.installPodGroupCRD()
	c.addNodes("node", 4, "2", "8Gi")
	inv := startInvariants(c)
	startNodeSim(c, simOptions{})
	stall := &stallPlugin{pods: map[string]bool{}}
	registry := inv.registry()
	registry[stallName] = func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return stall, nil }
	cfg := fluenceConfig(t, map[string]string{"permitTimeout": "5m"})
	withStall := strings.Replace(cfg, "      preEnqueue:\n        enabled: [{name: fluence}]\n", "      preEnqueue:\n        enabled: [{name: fluence}, {name: "+stallName+"}]\n", 1)
	if withStall == cfg {
		t.Fatal("the shipped configuration has no preEnqueue plugins to add the stall to")
	}
	c.startScheduler(withStall, registry)
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpWaiting(5)
		}
	})

	// Minimum resources: 100 CPUs asked of 8.
	c.createPodGroupSpec("too-big", map[string]any{"minMember": int64(2), "minResources": map[string]any{"cpu": "100", "memory": "1Gi"}})
	c.createPodGroupSpec("fits", map[string]any{"minMember": int64(2), "minResources": map[string]any{"cpu": "4", "ephemeral-storage": "1Gi"}})
	c.createPodGroupSpec("zero-wait", map[string]any{"minMember": int64(2), "scheduleTimeoutSeconds": int64(0)})
	c.createPodGroupSpec("negative-wait", map[string]any{"minMember": int64(1), "scheduleTimeoutSeconds": int64(-1)})
	tooBig, fits := podGroupMembers("too-big", 2, "1"), podGroupMembers("fits", 2, "1")
	zero, negative := podGroupMembers("zero-wait", 2, "1"), podGroupMembers("negative-wait", 1, "1")
	c.createPods(append(append(append(tooBig, fits...), zero...), negative...)...)
	const why = "PodGroup fluence-test/too-big asks in spec.minResources for more than all the nodes offer: cpu 100000m, the nodes have 8000m allocatable in all"
	if cond := c.podGroupCondition("too-big", "False"); !strings.Contains(cond, why) {
		t.Errorf("too-big's condition does not say what is short: %s", cond)
	}
	c.waitForEvent(30*time.Second, "too-big-0", "FluenceGroupRejected", why)
	c.waitForEvent(30*time.Second, "too-big", "FluenceGroupRejected", why) // on the PodGroup
	c.waitForPodPhase(30*time.Second, corev1.PodSucceeded, append(names(fits), names(zero)...)...)
	c.waitForEvent(30*time.Second, "", "FluenceUnsupported", "ephemeral-storage in spec.minResources (not checked")
	c.waitForEvent(30*time.Second, "negative-wait-0", "FluenceInvalidGroup", "PodGroup fluence-test/negative-wait: spec.scheduleTimeoutSeconds -1 is negative")
	if n := c.boundCount(append(names(tooBig), names(negative)...)...); n != 0 {
		t.Errorf("%d pods of rejected or invalid groups bound", n)
	}

	// The Permit wait. slow-0 has its first cycle (the group counts it),
	// then the stall plugin keeps it out of the queue: the group is placed
	// whole when slow-2 comes, and slow-1 and slow-2 wait at Permit for a
	// pod that never arrives.
	c.createPodGroupSpec("slow", map[string]any{"minMember": int64(3), "scheduleTimeoutSeconds": int64(2)})
	slow := podGroupMembers("slow", 3, "1")
	c.createPods(slow[0])
	c.waitForEvent(30*time.Second, "slow-0", "FailedScheduling", "1 of 3 exist")
	stall.set("slow-0", true)
	created := time.Now()
	c.createPods(slow[1:]...)
	c.waitForEvent(20*time.Second, "", "FailedScheduling", "rejected due to timeout after waiting 2s at plugin fluence")
	c.waitForEvent(20*time.Second, "slow-1", "FluenceGroupWithdrawn", "failed after it was reserved")
	if waited := time.Since(created); waited > 20*time.Second {
		t.Errorf("the reserved pods were released %v after the group was placed; its PodGroup asks 2 s", waited)
	}
	if n := c.boundCount(names(slow)...); n != 0 {
		t.Fatalf("%d pods of a group missing a pod bound", n)
	}
	// The pod comes: on the group's next placement it is woken, and the
	// group binds whole.
	stall.set("slow-0", false)
	c.waitForPodPhase(30*time.Second, corev1.PodSucceeded, names(slow)...)
	c.checkInvariants(inv)
}

// createPodGroupSpec creates a scheduler-plugins PodGroup with the given
// spec.
func (c *cluster) createPodGroupSpec(name string, spec map[string]any) {
	c.t.Helper()
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1",
		"kind":       "PodGroup",
		"metadata":   map[string]any{"name": name, "namespace": c.NS},
		"spec":       spec,
	}}
	if _, err := dynamic.NewForConfigOrDie(c.Config).Resource(podGroupGVR).Namespace(c.NS).Create(c.Ctx, pg, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

const stallName = "FluenceTestStall"

// stallPlugin keeps the pods it is told of out of the scheduling queue
// (PreEnqueue), as if they never came round: a group placed whole waits
// at Permit for them. Activating such a pod asks PreEnqueue again, so one
// let go is scheduled at its group's next placement.
type stallPlugin struct {
	mu   sync.Mutex
	pods map[string]bool
}

func (s *stallPlugin) Name() string { return stallName }

func (s *stallPlugin) set(pod string, stalled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods[pod] = stalled
}

func (s *stallPlugin) PreEnqueue(_ context.Context, p *corev1.Pod) *fwk.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pods[p.Name] {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("pod %s is held back by the test", p.Name))
	}
	return nil
}
