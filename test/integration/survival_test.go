package integration

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/groups"
	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// Gangs after they start, on a real API server with the real Job
// controller and fluence as its own process:
//   - a node hosting one member of a running 4-pod Job group is deleted
//     (its pod with it, as the pod garbage collector does): the Job's
//     replacement is bound beside the three survivors, the Job completes,
//     and a group needing every remaining node is placed after it;
//   - an Indexed Job (completions = parallelism = 4) whose index 0
//     succeeded and index 2 then failed runs index 2 again and completes
//     (the case kubernetes#142330 reports hanging for the in-tree gang);
//   - a PodGroup of minCount 4 with six pods on room for five: five run,
//     the sixth joins when room frees, and the group's FluenceGroupWhole
//     condition says so.
func TestMembersLostAndReplaced(t *testing.T) {
	c := startCluster(t, localcluster.Options{FeatureGates: map[string]bool{"GenericWorkload": true}, JobController: true})
	for i := range 5 {
		c.addNode(fmt.Sprintf("node-%d", i), "1", "4Gi", 0, nil)
	}
	sim := startNodeSim(c, simOptions{})
	proc := c.startFluenceProcess(t)

	// A Job claiming two billion pods gets its pod a clear refusal; the
	// scheduler does not set memory aside for the pods it claims.
	rss := residentBytes(t, proc)
	c.createPods(ownedPod("huge-0", c.createOwnedJob("huge", 2_000_000_000, nil, nil)))
	c.waitForEvent(30*time.Second, "huge-0", "FluenceInvalidGroup", "exceeds the maximum group size")
	if after := residentBytes(t, proc); after > rss+256<<20 {
		t.Errorf("the scheduler grew from %d MiB to %d MiB on a Job of two billion pods", rss>>20, after>>20)
	}

	// A node with a member on it is deleted.
	c.createJob(lostJob("lost", 4, "15s"))
	before := c.runningIndexes("lost", 4)
	victim := before["1"]
	if err := c.Client.CoreV1().Nodes().Delete(c.Ctx, victim.Spec.NodeName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.CoreV1().Pods(c.NS).Delete(c.Ctx, victim.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	after := c.jobPodsWhere("lost", func(m map[string]*corev1.Pod) bool {
		p := m["1"]
		return p != nil && p.UID != victim.UID && p.Spec.NodeName != ""
	})
	if n := after["1"].Spec.NodeName; n == victim.Spec.NodeName {
		t.Errorf("the replacement was bound to the deleted node %s", n)
	}
	// The Job controller creates the replacement after its back-off; from
	// then on it is fluence's, and binds at once (times in whole seconds).
	if d := scheduledAfter(after["1"]); d < 0 || d > 5*time.Second {
		t.Errorf("the replacement was scheduled %s after it was created, want within seconds", d)
	}
	for _, idx := range []string{"0", "2", "3"} {
		if a, b := before[idx], after[idx]; b == nil || a.UID != b.UID || a.Spec.NodeName != b.Spec.NodeName {
			t.Errorf("index %s: a survivor changed: before %s on %s, after %v", idx, a.Name, a.Spec.NodeName, b)
		}
	}
	c.waitJobSucceeded("lost", 4)
	// Nothing of the Job is held: a group of four fills the four nodes left.
	fill := make([]*corev1.Pod, 4)
	for i := range fill {
		fill[i] = newTestPod(fmt.Sprintf("fill-%d", i), plugin.Name, "1", "", time.Second,
			map[string]string{"fluence.flux-framework.org/pod-group": "fill", "fluence.flux-framework.org/group-size": "4"})
	}
	c.createPods(fill...)
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(fill)...)

	// Index 0 succeeds, then index 2 fails: index 2 runs again alone.
	c.createJob(lostJob("indexed", 4, ""))
	pods := c.runningIndexes("indexed", 4)
	c.succeed(sim, pods["0"].Name)
	failed := pods["2"]
	if _, err := c.Client.CoreV1().Pods(c.NS).Patch(c.Ctx, failed.Name, types.MergePatchType,
		[]byte(`{"status":{"phase":"Failed","reason":"Error"}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	again := c.jobPodsWhere("indexed", func(m map[string]*corev1.Pod) bool {
		p := m["2"]
		return p != nil && p.UID != failed.UID && p.Spec.NodeName != ""
	})
	if again["2"].Spec.NodeName != failed.Spec.NodeName {
		// Its slot was kept on its node, which still takes work.
		t.Errorf("index 2 again on %s, want its slot on %s", again["2"].Spec.NodeName, failed.Spec.NodeName)
	}
	for _, idx := range []string{"1", "2", "3"} {
		c.succeed(sim, again[idx].Name)
	}
	c.waitJobSucceeded("indexed", 4)

	// Six pods, minCount 4, room for five: four nodes are left, two are
	// added, and a lone pod takes one.
	c.addNode("node-5", "1", "4Gi", 0, nil)
	c.addNode("node-6", "1", "4Gi", 0, nil)
	spacer := newTestPod("spacer", plugin.Name, "1", "", 0, nil)
	c.createPods(spacer)
	c.waitForPodPhase(time.Minute, corev1.PodRunning, spacer.Name)
	c.createNativePodGroup("elastic", 4)
	el := nativePods("elastic", 6, "1")
	for _, p := range el {
		p.Annotations = nil // they run until the test ends them
	}
	c.createPods(el...)
	var running []*corev1.Pod
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := c.Client.CoreV1().Pods(c.NS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		running = running[:0]
		for i := range list.Items {
			if p := &list.Items[i]; strings.HasPrefix(p.Name, "elastic-") && p.Status.Phase == corev1.PodRunning {
				running = append(running, p)
			}
		}
		return len(running) == 5, nil
	})
	if err != nil {
		t.Fatalf("%d pods of the elastic group run, want 5", len(running))
	}
	c.wholeCondition("elastic", metav1.ConditionTrue, "Elastic", "1 more waits to join")
	if n := c.boundCount(names(el)...); n != 5 {
		t.Fatalf("%d pods of the elastic group bound on room for five", n)
	}
	// The lone pod ends: the sixth joins in its room.
	c.succeed(sim, spacer.Name)
	c.waitForPodPhase(time.Minute, corev1.PodRunning, names(el)...)
	c.wholeCondition("elastic", metav1.ConditionTrue, "Elastic", "6 members running or finished for a size of 4")
	// A member ends: the group is still whole.
	c.succeed(sim, running[0].Name)
	c.wholeCondition("elastic", metav1.ConditionTrue, "Elastic", "(1 finished)")
}

// lostJob is an Indexed Job of n one-CPU fluence pods (completions =
// parallelism = n) that may lose pods: each runs for runtime ("" until
// the test ends it).
func lostJob(name string, n int32, runtime string) *batchv1.Job {
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		SchedulerName: plugin.Name,
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
	}}
	if runtime != "" {
		tmpl.Annotations = map[string]string{runtimeAnnotation: runtime}
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Completions:    ptr.To(n),
			Parallelism:    ptr.To(n),
			BackoffLimit:   ptr.To[int32](4),
			Template:       tmpl,
		},
	}
}

func (c *cluster) createJob(j *batchv1.Job) {
	c.t.Helper()
	if _, err := c.Client.BatchV1().Jobs(c.NS).Create(c.Ctx, j, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("creating Job %s: %v", j.Name, err)
	}
}

// runningIndexes waits until the Job's n indexes each have a bound pod that has
// not ended and returns them by index.
func (c *cluster) runningIndexes(job string, n int) map[string]*corev1.Pod {
	c.t.Helper()
	return c.jobPodsWhere(job, func(m map[string]*corev1.Pod) bool {
		if len(m) != n {
			return false
		}
		for _, p := range m {
			if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
				return false
			}
		}
		return true
	})
}

// jobPodsWhere waits until ok holds for the Job's live pods (neither ended
// nor being deleted), by completion index.
func (c *cluster) jobPodsWhere(job string, ok func(map[string]*corev1.Pod) bool) map[string]*corev1.Pod {
	c.t.Helper()
	var last map[string]*corev1.Pod
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := c.Client.CoreV1().Pods(c.NS).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
		if err != nil {
			return false, nil
		}
		last = map[string]*corev1.Pod{}
		for i := range list.Items {
			p := &list.Items[i]
			if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			last[p.Labels[batchv1.JobCompletionIndexAnnotation]] = p
		}
		return ok(last), nil
	})
	if err != nil {
		var seen []string
		for idx, p := range last {
			seen = append(seen, fmt.Sprintf("%s: %s on %q (%s)", idx, p.Name, p.Spec.NodeName, p.Status.Phase))
		}
		c.t.Fatalf("Job %s: pods did not reach the state wanted: %v", job, seen)
	}
	return last
}

// wholeCondition waits for a PodGroup's FluenceGroupWhole condition with
// the status, reason and a message containing msg.
func (c *cluster) wholeCondition(name string, status metav1.ConditionStatus, reason, msg string) {
	c.t.Helper()
	var last *metav1.Condition
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pg, err := c.Client.SchedulingV1beta1().PodGroups(c.NS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = meta.FindStatusCondition(pg.Status.Conditions, groups.WholeConditionType)
		return last != nil && last.Status == status && last.Reason == reason && strings.Contains(last.Message, msg), nil
	})
	if err != nil {
		c.t.Fatalf("PodGroup %s: condition %s is %+v, want %s/%s with %q", name, groups.WholeConditionType, last, status, reason, msg)
	}
}

// residentBytes reads a process's resident memory (VmRSS) from /proc.
func residentBytes(t *testing.T, p *process) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("reading the scheduler's memory: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", p.cmd.Process.Pid)
	return 0
}

// succeed ends a running pod as its kubelet would, retrying on the
// conflicts of the pod's other writers.
func (c *cluster) succeed(sim *localcluster.NodeSim, name string) {
	c.t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := c.Client.CoreV1().Pods(c.NS).Get(c.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return sim.MarkSucceeded(c.Ctx, p)
	}); err != nil {
		c.t.Fatalf("pod %s: marking it succeeded: %v", name, err)
	}
}

// scheduledAfter is how long after its creation a pod was scheduled, by
// its PodScheduled condition; -1 when it has none.
func scheduledAfter(p *corev1.Pod) time.Duration {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Sub(p.CreationTimestamp.Time)
		}
	}
	return -1
}
