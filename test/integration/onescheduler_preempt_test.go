package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// TestStockPreemptionTakesWholeGang: in one-scheduler mode
// (deploy/one-scheduler-config.yaml: the stock default-scheduler profile
// and fluence's in one process) a high-priority stock pod that needs a
// node held by a fluence gang evicts that whole gang, or nothing.
//
// Four 4-CPU nodes are filled by a gang of four 4-CPU pods (an Indexed
// Job of priority 10, one pod a node). A stock pod (schedulerName
// default-scheduler) of priority 100000 asking 4 CPUs arrives. The stock
// profile's DefaultPreemption takes one gang member, pod by pod
// (DisruptionTarget PreemptionByScheduler, then delete); fluence, seeing
// that condition on a member of a running gang, evicts the other three
// the same way (pkg/gang evictRest). Within 30 s:
//
//   - every pod of the original gang is marked DisruptionTarget
//     (PreemptionByScheduler) and deleted: one by default-scheduler, the
//     other three by fluence, with FluencePreempted events on them (all
//     within about 0.1 s);
//   - the stock pod is bound, to one of the freed nodes (it is nominated
//     to the taken member's, but all four are freed). The node simulator
//     ends the deleted pods at once (Failed, as a kubelet), and the Job
//     controller's finalizer (batch.kubernetes.io/job-tracking) keeps them
//     in the API, ended, about 10 s, until the sync that also creates
//     their replacements;
//   - the replacements stay Pending: fluence finds 3 free nodes for a
//     gang of 4 and says so (FluenceGroupWaiting or FluenceGroupReserved)
//     rather than binding part of it, and never places them: the stock
//     pod is nominated for the fourth before the old pods go (fluence
//     counts nominated pods, pkg/gang nominated), then bound there.
//
// Every 200 ms throughout: no node over-committed, and no gang with some
// but not all of its live pods bound (sampleGangs), nor holding nodes
// with fewer live bound pods than its size (sampleHeld); each only in two
// samples in a row, as a single sample may fall between two API writes of
// one step. The invariant checker watches too.
func TestStockPreemptionTakesWholeGang(t *testing.T) {
	const nodes, size = 4, 4
	start := time.Now()
	admission := slices.DeleteFunc(slices.Clone(itDisabledAdmission), func(s string) bool { return s == "Priority" })
	c := startCluster(t, localcluster.Options{JobController: true, DisabledAdmission: admission})
	c.addNodes("node", nodes, "4", "8Gi")
	classes := map[string]int32{preemptLow: 10, preemptHigh: 100000}
	for name, value := range classes {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if _, err := c.Client.SchedulingV1().PriorityClasses().Create(c.Ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("PriorityClass %s: %v", name, err)
		}
	}
	inv := startInvariants(c)
	startNodeSim(c, simOptions{})
	c.startScheduler(oneSchedulerConfig(t), inv.registry())
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpWaiting(5)
		}
	})
	w := watchPreemption(c)

	c.createJob(gangJob("gang", preemptLow))
	c.runningIndexes("gang", size)
	var gang []corev1.Pod
	for _, p := range c.listPods(t) {
		if p.Labels["job-name"] == "gang" {
			gang = append(gang, p)
		}
	}
	if got := nodesOf(gang); len(gang) != size || len(slices.Compact(slices.Clone(got))) != nodes {
		t.Fatalf("the gang runs on %v, want its %d pods on the %d nodes, one each", got, size, nodes)
	}
	t.Logf("the gang runs on %v, %.1fs after the start", nodesOf(gang), time.Since(start).Seconds())

	before := takeMetrics()
	s := c.sampleGangs(200 * time.Millisecond)
	held := c.sampleHeld(200*time.Millisecond, size)

	stock := newTestPod("stock", "default-scheduler", "4", "", 0, nil)
	stock.Spec.PriorityClassName = preemptHigh
	created := time.Now()
	c.createPods(stock)

	// The whole gang goes: each pod marked and deleted.
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return w.evicted(gang) == size, nil
	})
	if err != nil {
		t.Fatalf("the gang was not evicted whole within 30 s: %d of its %d pods marked DisruptionTarget and deleted; events: %v", w.evicted(gang), size, w.log())
	}
	t.Logf("the gang was marked and being deleted %.2fs after the stock pod was created", time.Since(created).Seconds())
	for _, p := range c.listPods(t) {
		if p.DeletionTimestamp != nil {
			// The Job controller's finalizer keeps them, ended, until it
			// has counted them.
			t.Logf("%s: terminating, finalizers %v", p.Name, p.Finalizers)
		}
	}

	// The stock pod binds.
	bound, err := c.waitPodsBound(30*time.Second, 1, metav1.ListOptions{FieldSelector: "metadata.name=stock"}, nil)
	if err != nil || len(bound) != 1 {
		t.Fatalf("the stock pod did not bind within 30 s: %v; events: %v", describePods(bound), w.log())
	}
	stockNode := bound[0].Spec.NodeName
	if bound[0].Spec.Priority == nil || *bound[0].Spec.Priority != 100000 {
		t.Errorf("the stock pod has priority %v, want 100000 from its PriorityClass", bound[0].Spec.Priority)
	}
	t.Logf("the stock pod bound to %s %.2fs after it was created; the gang's pods were removed from the API %v after", stockNode, time.Since(created).Seconds(), w.removedAfter(gang, created))

	// Who took which: kube-scheduler one member, fluence the rest. (The
	// stock pod is nominated to the node of the member it took, but may
	// bind to another: all four are freed, one after another.)
	var byStock, byFluence []string
	for _, p := range gang {
		cond := w.disruption(p.UID)
		switch {
		case cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != corev1.PodReasonPreemptionByScheduler:
			t.Errorf("pod %s on %s: DisruptionTarget %+v, want True/PreemptionByScheduler", p.Name, p.Spec.NodeName, cond)
		case strings.HasPrefix(cond.Message, "default-scheduler: "):
			byStock = append(byStock, p.Name+" on "+p.Spec.NodeName)
		case strings.Contains(cond.Message, "is being preempted by a scheduler other than fluence"):
			byFluence = append(byFluence, p.Name)
			t.Logf("%s on %s: %s", p.Name, p.Spec.NodeName, cond.Message)
		default:
			t.Errorf("pod %s on %s: DisruptionTarget from neither default-scheduler nor fluence's whole-gang eviction: %q", p.Name, p.Spec.NodeName, cond.Message)
		}
	}
	t.Logf("taken by default-scheduler's preemption: %v; evicted by fluence after it: %v", byStock, byFluence)
	if len(byStock) != 1 || len(byFluence) != size-1 {
		t.Errorf("%d pods taken by default-scheduler and %d by fluence, want 1 and %d", len(byStock), len(byFluence), size-1)
	}
	for _, name := range byFluence {
		c.waitForEvent(10*time.Second, name, "FluencePreempted", "is being preempted by a scheduler other than fluence")
	}

	// The Job controller recreates the gang (after each index's 10 s
	// back-off); fluence sees 3 free nodes for a gang of 4 and leaves it
	// Pending, whole.
	old := map[types.UID]bool{}
	for _, p := range gang {
		old[p.UID] = true
	}
	replacement := func(p *corev1.Pod) bool {
		return p.Labels["job-name"] == "gang" && !old[p.UID] && p.DeletionTimestamp == nil
	}
	var news []corev1.Pod
	err = wait.PollUntilContextTimeout(c.Ctx, 200*time.Millisecond, 45*time.Second, true, func(context.Context) (bool, error) {
		news = news[:0]
		for _, p := range c.listPods(t) {
			if replacement(&p) {
				news = append(news, p)
			}
		}
		return len(news) == size, nil
	})
	if err != nil {
		t.Fatalf("the gang's pods were not recreated within 45 s: %v", describePods(news))
	}
	t.Logf("the gang's replacements were created %.1fs after the stock pod", time.Since(created).Seconds())
	var verdict string
	err = wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		for _, p := range news {
			for _, reason := range []string{"FluenceGroupWaiting", "FluenceGroupReserved"} {
				if w.eventOn(p.Name, reason) {
					verdict = reason + " on " + p.Name
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("fluence did not say within 20 s that the replacements wait; events: %v", w.log())
	}
	for _, p := range news {
		if w.eventOn(p.Name, "FluenceGroupPlaced") {
			// Three nodes are free for a gang of four at any time: the
			// fourth is the stock pod's, nominated (fluence counts
			// kube-scheduler's nominated pods where they are nominated,
			// as its filters do), then bound.
			t.Errorf("the replacements were placed (%q), though the stock pod holds or is nominated for one of the four nodes",
				c.eventNotes(p.Name, "FluenceGroupPlaced"))
		}
	}
	t.Logf("fluence on the replacements: %s", verdict)
	for _, p := range c.listPods(t) {
		if replacement(&p) && (p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending) {
			t.Errorf("the gang's replacement %s is %s on %q, want Pending", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
		if p.Name == "stock" && (p.Spec.NodeName != stockNode || p.DeletionTimestamp != nil) {
			t.Errorf("the stock pod is on %q (deleting %v), was bound to %s", p.Spec.NodeName, p.DeletionTimestamp != nil, stockNode)
		}
	}

	after := takeMetrics()
	t.Logf("fluence_preemptions_total +%v, fluence_evicted_pods_total +%v",
		metricDelta(before, after, "fluence_preemptions_total", "profile", plugin.Name),
		metricDelta(before, after, "fluence_evicted_pods_total", "profile", plugin.Name))
	s.stop(t)
	held.stop(t)
	c.checkInvariants(inv)
	t.Logf("%d samples; the test took %.1fs; events seen, in order: %v", s.count(), time.Since(start).Seconds(), w.log())
}

// log lists the events seen, "reason object", in the order they came.
func (w *preemptWatch) log() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events)
}

// sampleHeld samples, at an interval, the gangs (pods labelled with one
// group) of size pods that have some live pods bound (not ended, not
// being deleted) but fewer than size: a gang bound in part, or one that
// lost members and holds its other nodes. As in sampleGangs, a gang so
// seen in two samples in a row is a violation, in one sample only a
// glimpse (the API writes of one binding or eviction are not atomic).
func (c *cluster) sampleHeld(every time.Duration, size int) *gangSampler {
	ctx, cancel := context.WithCancel(c.Ctx)
	s := &gangSampler{cancel: cancel, done: make(chan struct{})}
	c.t.Cleanup(cancel)
	var last map[string]bool
	go func() {
		defer close(s.done)
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			pods, err := c.Client.CoreV1().Pods(c.NS).List(ctx, metav1.ListOptions{LabelSelector: podGroupLabel})
			if err != nil {
				return
			}
			held := map[string][]string{}
			for _, p := range pods.Items {
				if p.Spec.NodeName != "" && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
					g := p.Labels[podGroupLabel]
					held[g] = append(held[g], p.Name+"@"+p.Spec.NodeName)
				}
			}
			now := map[string]bool{}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.samples++
			for g, on := range held {
				if len(on) == size {
					continue
				}
				now[g] = true
				msg := fmt.Sprintf("%s gang %s: %d of %d pods bound and live: %v", time.Now().Format(time.StampMilli), g, len(on), size, on)
				if last[g] {
					s.violations = append(s.violations, msg+" (two samples in a row)")
				} else {
					s.glimpses = append(s.glimpses, msg)
				}
			}
			last = now
		}, every)
	}()
	return s
}
