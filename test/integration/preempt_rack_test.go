package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/k8sadapter"
	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// Making room inside one rack, on a real API server: six 4-CPU nodes in
// three racks (node-0 and node-1 in r1, node-2 and node-3 in r2, node-4
// and node-5 in r3), fluence configured with the rack level and
// preempting after 1 s. In every step a gang of priority 1000 that
// requires one rack arrives while no rack has room for it; each step
// starts and ends with no pod.
//
//   - cheapest: every rack runs two groups of two 2-CPU pods (r1 of
//     priority 20 and 30, r2 both 10, r3 50 and 40), and the gang asks two
//     2-CPU pods. One group of r2 is all it needs: the younger one (less
//     work lost), evicted whole; the gang binds in r2; no other pod is
//     touched, and the event names the rack and the dearer room passed
//     over (a-p, of priority 20, in r1).
//   - checkpoints: the same, all six groups of priority 10. The oldest
//     group's pods say (the checkpointed-at annotation, set while they
//     run) that their workload has just saved its state: it loses least
//     and is evicted, though by run time alone it is the dearest.
//   - nothing fits: in every rack one node runs a pod of priority 5000
//     and the other a group of priority 10. Even with every group it may
//     evict gone, no rack has two free nodes: nothing is evicted, the gang
//     holds a reservation, and `kubectl fluence explain` says why. When
//     r2's high pod ends, evicting r2's group makes room, and it does.
//   - move: a one-pod Job marked movable, of the gang's own priority,
//     runs on node-0; node-2 and node-5 are taken by another scheduler's
//     pods. No rack has two free nodes and nothing of lower priority runs,
//     but the movable group fits elsewhere now: it is evicted as moved,
//     the gang binds in r1, and the Job's new pod is placed outside r1.
//
// The invariant checker watches throughout.
func TestPreemptionInsideRack(t *testing.T) {
	c := startCluster(t, localcluster.Options{JobController: true})
	for i := range 6 {
		c.addNode(fmt.Sprintf("node-%d", i), "4", "8Gi", 0, map[string]string{rackKey: fmt.Sprintf("r%d", 1+i/2)})
	}
	inv, kubectl := c.runFluenceInspected(map[string]string{
		"topologyLevels": "[" + rackKey + "]",
		"preemption":     "{enabled: true, after: 1s, minRuntime: 0s, timeout: 2m}",
	})
	w := watchPreemption(c)

	t.Run("cheapest", func(t *testing.T) {
		c := c.on(t)
		defer c.clearPods()
		c.runRackGroups("a", 2, map[string]int32{"p": 20, "q": 30}, "r1")
		c.runRackGroups("a", 2, map[string]int32{"x": 10}, "r2")
		c.runRackGroups("a", 2, map[string]int32{"y": 10}, "r2") // younger than x
		c.runRackGroups("a", 2, map[string]int32{"u": 50, "v": 40}, "r3")
		before := c.podsByName()

		h := rackGang("a-h", 2, "2")
		c.createPods(h...)
		c.waitBoundOrExplain(kubectl, "a-h", h)
		if racks := c.domainsOf(h, rackKey); !slices.Equal(racks, []string{"r2"}) {
			t.Errorf("a-h runs in racks %v (nodes %v); want r2", racks, c.nodesOf(names(h)...))
		}
		c.wantEvicted(w, before, "a-y")
		c.waitForEvent(30*time.Second, "a-h-0", "FluencePreempting",
			"evicts "+c.NS+"/a-y (priority 10, 2 pods, ")
		c.waitForEvent(30*time.Second, "a-h-0", "FluencePreempting",
			"to start now within "+rackKey+"=r2, rather than "+c.NS+"/a-p (priority 20, 2 pods, ")
	})

	t.Run("checkpoints", func(t *testing.T) {
		c := c.on(t)
		defer c.clearPods()
		// Oldest first: without checkpoints b-x would lose the most.
		c.runRackGroups("b", 2, map[string]int32{"x": 10}, "r2")
		c.runRackGroups("b", 2, map[string]int32{"y": 10}, "r2")
		c.runRackGroups("b", 2, map[string]int32{"p": 10, "q": 10}, "r1")
		c.runRackGroups("b", 2, map[string]int32{"u": 10, "v": 10}, "r3")
		c.checkpoint("b-x-0", "b-x-1")
		before := c.podsByName()

		h := rackGang("b-h", 2, "2")
		c.createPods(h...)
		c.waitBoundOrExplain(kubectl, "b-h", h)
		if racks := c.domainsOf(h, rackKey); !slices.Equal(racks, []string{"r2"}) {
			t.Errorf("b-h runs in racks %v (nodes %v); want r2, where b-x checkpointed", racks, c.nodesOf(names(h)...))
		}
		c.wantEvicted(w, before, "b-x")
		c.waitForEvent(30*time.Second, "b-h-0", "FluencePreempting", "evicts "+c.NS+"/b-x (priority 10, 2 pods, ")
		c.waitForEvent(30*time.Second, "b-h-0", "FluencePreempting", "since its checkpoint) to start now within "+rackKey+"=r2")
	})

	t.Run("nothing fits", func(t *testing.T) {
		c := c.on(t)
		defer c.clearPods()
		for i, rack := range []string{"r1", "r2", "r3"} {
			c.runRackGroups("c", 1, map[string]int32{fmt.Sprintf("k%d", i+1): 5000}, rack)
			c.runRackGroups("c", 1, map[string]int32{fmt.Sprintf("l%d", i+1): 10}, rack)
		}
		before := c.podsByName()

		h := rackGang("c-h", 2, "4")
		c.createPods(h...)
		if reason := c.waitForEventOf(30*time.Second, "c-h-0", "FluenceGroupReserved", "FluencePreempting"); reason != "FluenceGroupReserved" {
			t.Fatalf("c-h: %s while no rack can be freed for it (nodes %v)", reason, c.nodesOf(names(h)...))
		}
		want := "It does not preempt: even with all 3 running groups of lower priority it may evict gone, it would not fit now in any of the 3 domains of " + rackKey
		err := wait.PollUntilContextTimeout(c.Ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return strings.Contains(kubectl(t, "explain", "c-h"), want), nil
		})
		if err != nil {
			t.Fatalf("kubectl fluence explain c-h does not say %q:\n%s", want, kubectl(t, "explain", "c-h"))
		}
		// The search has run (explain says so): nothing was marked or
		// deleted, and the gang has no pod bound.
		for name, p := range before {
			if w.disruption(p.UID) != nil {
				t.Errorf("pod %s was marked for eviction though no rack could hold c-h", name)
			}
		}
		if n := c.boundCount(names(h)...); n != 0 {
			t.Errorf("c-h has %d pods bound while no rack can hold it", n)
		}

		// r2's high pod ends: evicting c-l2 now makes room in r2.
		c.deletePods("c-k2-0")
		c.waitBoundOrExplain(kubectl, "c-h", h)
		if racks := c.domainsOf(h, rackKey); !slices.Equal(racks, []string{"r2"}) {
			t.Errorf("c-h runs in racks %v; want r2", racks)
		}
		delete(before, "c-k2-0")
		c.wantEvicted(w, before, "c-l2")
	})

	t.Run("move", func(t *testing.T) {
		c := c.on(t)
		defer c.clearPods()
		// Another scheduler's pods hold every node but node-0 while the
		// movable Job starts, so it runs there; then all but node-2 and
		// node-5 are freed: r1, r2 and r3 each have one free node.
		c.occupy(kubectl, "4", "node-1", "node-2", "node-3", "node-4", "node-5")
		c.createJob(movableJob("d-m"))
		first := c.runningIndexes("d-m", 1)["0"]
		if first.Spec.NodeName != "node-0" {
			t.Fatalf("d-m runs on %s; want node-0, the only node free", first.Spec.NodeName)
		}
		defer func() {
			err := c.Client.BatchV1().Jobs(c.NS).Delete(c.Ctx, "d-m", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
			if err != nil {
				t.Errorf("deleting Job d-m: %v", err)
			}
		}()
		c.deletePods("fill-node-1", "fill-node-3", "fill-node-4")

		h := rackGang("d-h", 2, "4")
		c.createPods(h...)
		c.waitBoundOrExplain(kubectl, "d-h", h)
		if racks := c.domainsOf(h, rackKey); !slices.Equal(racks, []string{"r1"}) {
			t.Errorf("d-h runs in racks %v (nodes %v); want r1", racks, c.nodesOf(names(h)...))
		}
		if cond := w.disruption(first.UID); cond == nil || cond.Reason != corev1.PodReasonPreemptionByScheduler {
			t.Errorf("d-m's pod %s: DisruptionTarget %+v; want PreemptionByScheduler", first.Name, cond)
		}
		c.waitForEvent(30*time.Second, first.Name, "FluencePreempted", "is movable and fits elsewhere now")
		c.waitForEvent(30*time.Second, "d-h-0", "FluencePreempting", "evicts "+c.NS+"/d-m (priority 1000, 1 pod, ")

		// The Job makes its pod again, and it is placed outside r1.
		again := c.jobPodsWhere("d-m", func(m map[string]*corev1.Pod) bool {
			p := m["0"]
			return p != nil && p.UID != first.UID && p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning
		})["0"]
		if again.Spec.NodeName != "node-3" && again.Spec.NodeName != "node-4" {
			t.Errorf("d-m's new pod runs on %s; want node-3 or node-4, the free nodes outside r1", again.Spec.NodeName)
		}
	})
	c.checkInvariants(inv)
}

// rackGang is a gang of priority 1000 whose pods require one rack.
func rackGang(name string, n int, cpu string) []*corev1.Pod {
	pods := topologyGroup(name, n, cpu, k8sadapter.TopologyRequiredKey, rackKey)
	for _, p := range pods {
		p.Spec.Priority = ptr.To[int32](1000)
	}
	return pods
}

// runRackGroups runs, for each name, a group prefix-name of n pods asking
// 4/n CPUs each, of the given priority, pinned to the rack by a node
// selector, and waits until they all run. The groups of one call start in
// the order of their names.
func (c *cluster) runRackGroups(prefix string, n int, prios map[string]int32, rack string) {
	c.t.Helper()
	for _, name := range slices.Sorted(maps.Keys(prios)) {
		g := groupPods(prefix+"-"+name, n, fmt.Sprint(4/n), 0, 0)
		for _, p := range g {
			p.Spec.Priority = ptr.To(prios[name])
			p.Spec.NodeSelector = map[string]string{rackKey: rack}
		}
		c.createPods(g...)
		c.waitForPodPhase(time.Minute, corev1.PodRunning, names(g)...)
	}
}

// podsByName lists the namespace's pods by name.
func (c *cluster) podsByName() map[string]corev1.Pod {
	c.t.Helper()
	out := map[string]corev1.Pod{}
	for _, p := range c.listPods(c.t.(*testing.T)) {
		out[p.Name] = p
	}
	return out
}

// wantEvicted checks that the pods of group victim, and only they, of
// those listed before, were marked and deleted; the rest still run where
// they ran.
func (c *cluster) wantEvicted(w *preemptWatch, before map[string]corev1.Pod, victim string) {
	c.t.Helper()
	var gone []corev1.Pod
	for name, p := range before {
		if strings.HasPrefix(name, victim+"-") {
			gone = append(gone, p)
		}
	}
	if len(gone) == 0 {
		c.t.Fatalf("no pod of %s among %d listed", victim, len(before))
	}
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return w.evicted(gone) == len(gone), nil
	})
	if err != nil {
		c.t.Errorf("%s: %d of its %d pods marked and deleted within 30 s; events %v", victim, w.evicted(gone), len(gone), w.reasons())
	}
	now := map[types.UID]corev1.Pod{}
	for _, p := range c.listPods(c.t.(*testing.T)) {
		now[p.UID] = p
	}
	for name, p := range before {
		if strings.HasPrefix(name, victim+"-") {
			continue
		}
		if w.disruption(p.UID) != nil {
			c.t.Errorf("pod %s was marked for eviction; only %s's were to be", name, victim)
		}
		if q, ok := now[p.UID]; !ok || q.Spec.NodeName != p.Spec.NodeName || q.DeletionTimestamp != nil {
			c.t.Errorf("pod %s (on %s) is gone or moved; only %s was to be evicted", name, p.Spec.NodeName, victim)
		}
	}
}

// checkpoint sets the checkpointed-at annotation of the running pods to
// now, as a workload saving its state would, and waits a second so the
// scheduler's informers have it before anything that follows.
func (c *cluster) checkpoint(pods ...string) {
	c.t.Helper()
	at := time.Now().UTC().Format(time.RFC3339Nano)
	for _, name := range pods {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, k8sadapter.CheckpointKey, at)
		if _, err := c.Client.CoreV1().Pods(c.NS).Patch(c.Ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			c.t.Fatalf("annotating %s: %v", name, err)
		}
	}
	time.Sleep(time.Second)
}

// movableJob is a one-pod fluence Job of priority 1000 whose pods say
// they may be moved, and whose evicted pods count as no failure.
func movableJob(name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Completions:    ptr.To[int32](1),
			Parallelism:    ptr.To[int32](1),
			// As a restartable job says it: a pod evicted by a scheduler
			// is no failure. The Job controller then waits for the evicted
			// pod to be Failed (the node simulator's kubelet part) before
			// it makes the new one.
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:          batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
			}}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels: map[string]string{
						"fluence.flux-framework.org/pod-group":  name,
						"fluence.flux-framework.org/group-size": "1",
					},
					Annotations: map[string]string{k8sadapter.MovableKey: "true"},
				},
				Spec: corev1.PodSpec{
					SchedulerName: plugin.Name,
					Priority:      ptr.To[int32](1000),
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}},
				},
			},
		},
	}
}
