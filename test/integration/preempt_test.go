package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// TestPreemption: whole-group preemption on a real API server, with the
// Priority admission plugin (pods take their priority and preemption
// policy from PriorityClasses) and the real Job controller. Eight nodes of
// 4 CPUs are filled by two gangs of four 4-CPU pods, Indexed Jobs of
// priority 10 (low-a, then low-b); then a gang of four of priority 100000
// arrives. fluence is given preemption.after 1s, so the newcomer, whose
// reserved start is an hour away (the low gangs' default duration),
// preempts at once.
//
//   - evicts: exactly one low gang is evicted, whole (low-b, the one that
//     has done less work): each of its pods gets the DisruptionTarget
//     condition (PreemptionByScheduler) and is deleted; the high gang binds
//     whole on low-b's nodes; low-a keeps running untouched (same pods,
//     same nodes); the Job controller recreates low-b's pods, which stay
//     Pending behind the high gang. Events FluencePreempted and
//     FluencePreempting are recorded, and the metrics count one
//     preemption of four pods.
//   - never: the same gang with a PriorityClass whose preemptionPolicy is
//     Never waits and evicts nothing.
//
// Every 200 ms throughout, the pods are listed: no node may be
// over-committed, and no gang partly running (some of its live pods bound,
// others not) in two samples in a row. The invariant checker watches too.
func TestPreemption(t *testing.T) {
	t.Run("evicts", testPreemptionEvicts)
	t.Run("never", testPreemptionNever)
}

const (
	preemptLow       = "fluence-it-low"
	preemptHigh      = "fluence-it-high"
	preemptHighNever = "fluence-it-high-never"
)

// preemptionCluster starts the cluster both cases share: eight 4-CPU
// nodes, the Job controller, Priority admission, three PriorityClasses,
// and fluence preempting after 1 s; then low-a and low-b running. It
// returns the low gangs' pods by name.
func preemptionCluster(t *testing.T) (*cluster, *invariants, *preemptWatch, map[string]corev1.Pod) {
	t.Helper()
	admission := slices.DeleteFunc(slices.Clone(itDisabledAdmission), func(s string) bool { return s == "Priority" })
	c := startCluster(t, localcluster.Options{JobController: true, DisabledAdmission: admission})
	c.addNodes("node", 8, "4", "8Gi")
	for _, pc := range []schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: preemptLow}, Value: 10},
		{ObjectMeta: metav1.ObjectMeta{Name: preemptHigh}, Value: 100000},
		{ObjectMeta: metav1.ObjectMeta{Name: preemptHighNever}, Value: 100000, PreemptionPolicy: ptr.To(corev1.PreemptNever)},
	} {
		if _, err := c.Client.SchedulingV1().PriorityClasses().Create(c.Ctx, &pc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("PriorityClass %s: %v", pc.Name, err)
		}
	}
	inv, _, _ := c.runFluence(map[string]string{"preemption": "{enabled: true, after: 1s, minRuntime: 0s, timeout: 2m}"})
	w := watchPreemption(c)

	c.createJob(gangJob("low-a", preemptLow))
	c.runningIndexes("low-a", 4)
	c.createJob(gangJob("low-b", preemptLow))
	c.runningIndexes("low-b", 4)
	low := map[string]corev1.Pod{}
	for _, p := range c.listPods(t) {
		low[p.Name] = p
		if p.Spec.Priority == nil || *p.Spec.Priority != 10 {
			t.Fatalf("pod %s has priority %v, want 10 from its PriorityClass", p.Name, p.Spec.Priority)
		}
	}
	return c, inv, w, low
}

func testPreemptionEvicts(t *testing.T) {
	start := time.Now()
	c, inv, w, low := preemptionCluster(t)
	before := takeMetrics()
	s := c.sampleGangs(200 * time.Millisecond)

	created := time.Now()
	c.createJob(gangJob("high", preemptHigh))

	// low-b goes whole, within 30 s.
	lowB := podsOf(low, "low-b")
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return w.evicted(lowB) == len(lowB), nil
	})
	if err != nil {
		t.Fatalf("low-b not evicted within 30 s: %d of its %d pods marked and deleted; events: %v", w.evicted(lowB), len(lowB), w.reasons())
	}
	t.Logf("low-b evicted %.1fs after the high gang was created", time.Since(created).Seconds())
	for _, p := range lowB {
		cond := w.disruption(p.UID)
		if cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != corev1.PodReasonPreemptionByScheduler ||
			!strings.Contains(cond.Message, "preempted by pod group "+c.NS+"/high (priority 100000)") {
			t.Errorf("pod %s: DisruptionTarget %+v, want True/PreemptionByScheduler naming the high gang", p.Name, cond)
		}
	}

	// The high gang binds whole on low-b's nodes.
	high, err := c.waitPodsBound(30*time.Second, 4, metav1.ListOptions{LabelSelector: "job-name=high"}, nil)
	if err != nil {
		t.Fatalf("the high gang did not bind: %v", describePods(high))
	}
	if len(high) != 4 {
		t.Errorf("high gang: %d pods, want 4", len(high))
	}
	t.Logf("the high gang bound %.1fs after it was created, on %v; low-b's pods were removed from the API %v after", time.Since(created).Seconds(), nodesOf(high), w.removedAfter(lowB, created))
	if got, want := nodesOf(high), nodesOf(lowB); !slices.Equal(got, want) {
		t.Errorf("the high gang runs on %v, want low-b's nodes %v", got, want)
	}

	// low-a is untouched; nothing of it was marked.
	now := map[types.UID]corev1.Pod{}
	for _, p := range c.listPods(t) {
		now[p.UID] = p
	}
	for _, p := range podsOf(low, "low-a") {
		cur, ok := now[p.UID]
		switch {
		case !ok:
			t.Errorf("low-a: pod %s is gone", p.Name)
		case cur.Spec.NodeName != p.Spec.NodeName || cur.DeletionTimestamp != nil || cur.Status.Phase != corev1.PodRunning:
			t.Errorf("low-a: pod %s is %s on %s (deleting %v), was Running on %s", p.Name, cur.Status.Phase, cur.Spec.NodeName, cur.DeletionTimestamp != nil, p.Spec.NodeName)
		}
		if w.disruption(p.UID) != nil {
			t.Errorf("low-a: pod %s was marked DisruptionTarget", p.Name)
		}
	}

	// The Job controller recreates low-b's pods (after its 10 s back-off
	// per index); they wait, unbound, behind the high gang.
	old := map[types.UID]bool{}
	for _, p := range lowB {
		old[p.UID] = true
	}
	var replacements []corev1.Pod
	err = wait.PollUntilContextTimeout(c.Ctx, 200*time.Millisecond, 45*time.Second, true, func(ctx context.Context) (bool, error) {
		replacements = replacements[:0]
		for _, p := range c.listPods(t) {
			if p.Labels["job-name"] == "low-b" && !old[p.UID] && p.DeletionTimestamp == nil {
				replacements = append(replacements, p)
			}
		}
		return len(replacements) == 4, nil
	})
	if err != nil {
		t.Fatalf("low-b's pods were not recreated: %v", describePods(replacements))
	}
	time.Sleep(3 * time.Second)
	for _, p := range c.listPods(t) {
		if p.Labels["job-name"] == "low-b" && !old[p.UID] && (p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending) {
			t.Errorf("low-b's replacement %s is %s on %q, want Pending", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
	}

	// Events, on the victims and on the preemptor.
	t.Logf("FluencePreempting: %s", c.waitForEvent(10*time.Second, "", "FluencePreempting", "pod group "+c.NS+"/high (priority 100000) evicts "+c.NS+"/low-b (priority 10, 4 pods, "))
	for _, p := range lowB {
		c.waitForEvent(10*time.Second, p.Name, "FluencePreempted", "preempted by pod group "+c.NS+"/high")
	}
	for _, p := range podsOf(low, "low-a") {
		if w.eventOn(p.Name, "FluencePreempted") {
			t.Errorf("low-a's pod %s got a FluencePreempted event", p.Name)
		}
	}
	after := takeMetrics()
	if d := after.get("fluence_preemptions_total", "profile", plugin.Name) - before.get("fluence_preemptions_total", "profile", plugin.Name); d != 1 {
		t.Errorf("fluence_preemptions_total rose by %v, want 1", d)
	}
	if d := after.get("fluence_evicted_pods_total", "profile", plugin.Name) - before.get("fluence_evicted_pods_total", "profile", plugin.Name); d != 4 {
		t.Errorf("fluence_evicted_pods_total rose by %v, want 4", d)
	}

	s.stop(t)
	c.checkInvariants(inv)
	t.Logf("%d samples; the case took %.1fs; events seen: %v", s.count(), time.Since(start).Seconds(), w.reasons())
}

func testPreemptionNever(t *testing.T) {
	start := time.Now()
	c, inv, w, low := preemptionCluster(t)
	before := takeMetrics()
	s := c.sampleGangs(200 * time.Millisecond)

	c.createJob(gangJob("never", preemptHighNever))
	var never []corev1.Pod
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		never = never[:0]
		for _, p := range c.listPods(t) {
			if p.Labels["job-name"] == "never" {
				never = append(never, p)
			}
		}
		return len(never) == 4, nil
	})
	if err != nil {
		t.Fatalf("the Job's pods were not created: %v", describePods(never))
	}
	for _, p := range never {
		if p.Spec.PreemptionPolicy == nil || *p.Spec.PreemptionPolicy != corev1.PreemptNever || p.Spec.Priority == nil || *p.Spec.Priority != 100000 {
			t.Fatalf("pod %s: priority %v, preemptionPolicy %v; want 100000 and Never from its PriorityClass", p.Name, p.Spec.Priority, p.Spec.PreemptionPolicy)
		}
	}
	// Well past after (1 s) and the core's 5 s between attempts.
	t.Logf("FluenceGroupReserved: %s", c.waitForEvent(10*time.Second, "", "FluenceGroupReserved", "pod group "+c.NS+"/never (4 pods)"))
	time.Sleep(8 * time.Second)

	now := map[types.UID]corev1.Pod{}
	for _, p := range c.listPods(t) {
		now[p.UID] = p
	}
	for _, p := range low {
		if cur, ok := now[p.UID]; !ok || cur.DeletionTimestamp != nil || cur.Spec.NodeName != p.Spec.NodeName {
			t.Errorf("%s was disturbed: %+v", p.Name, cur.ObjectMeta)
		}
		if w.disruption(p.UID) != nil {
			t.Errorf("%s was marked DisruptionTarget", p.Name)
		}
	}
	for _, p := range c.listPods(t) {
		if p.Labels["job-name"] == "never" && p.Spec.NodeName != "" {
			t.Errorf("%s bound to %s, want it waiting", p.Name, p.Spec.NodeName)
		}
	}
	if r := w.reasons(); slices.Contains(r, "FluencePreempted") || slices.Contains(r, "FluencePreempting") {
		t.Errorf("events %v, want no preemption", r)
	}
	after := takeMetrics()
	for _, m := range []string{"fluence_preemptions_total", "fluence_evicted_pods_total"} {
		if d := after.get(m, "profile", plugin.Name) - before.get(m, "profile", plugin.Name); d != 0 {
			t.Errorf("%s rose by %v, want 0", m, d)
		}
	}
	s.stop(t)
	c.checkInvariants(inv)
	t.Logf("%d samples; the case took %.1fs", s.count(), time.Since(start).Seconds())
}

// gangJob is an Indexed Job of four 4-CPU fluence pods (completions =
// parallelism = 4), labelled as one group of four, of the PriorityClass
// class; its pods run until deleted. An evicted pod counts as a failure
// of its index, and is replaced after the index's back-off.
func gangJob(name, class string) *batchv1.Job {
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			"fluence.flux-framework.org/pod-group":  name,
			"fluence.flux-framework.org/group-size": "4",
		}},
		Spec: corev1.PodSpec{
			SchedulerName:     plugin.Name,
			PriorityClassName: class,
			RestartPolicy:     corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}},
		},
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Completions:    ptr.To[int32](4),
			Parallelism:    ptr.To[int32](4),
			// The back-off before an index is run again is then the
			// index's own, 10 s for its first failure; a Job-wide
			// one would count the four pods evicted together as four
			// failures in a row (80 s).
			BackoffLimitPerIndex: ptr.To[int32](10),
			Template:             tmpl,
		},
	}
}

func (c *cluster) listPods(t *testing.T) []corev1.Pod {
	t.Helper()
	list, err := c.Client.CoreV1().Pods(c.NS).List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// podsOf returns the pods of a Job among pods, by name.
func podsOf(pods map[string]corev1.Pod, job string) []corev1.Pod {
	var out []corev1.Pod
	for _, name := range slices.Sorted(maps.Keys(pods)) {
		if pods[name].Labels["job-name"] == job {
			out = append(out, pods[name])
		}
	}
	return out
}

func nodesOf(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Spec.NodeName)
	}
	slices.Sort(out)
	return out
}

func describePods(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, fmt.Sprintf("%s %s on %q", p.Name, p.Status.Phase, p.Spec.NodeName))
	}
	return out
}

// preemptWatch records, from a watch on the test namespace's pods and
// events, the DisruptionTarget condition each pod was seen with, the pods
// deleted, and the events' reasons.
type preemptWatch struct {
	mu         sync.Mutex
	disrupted  map[types.UID]*corev1.PodCondition
	terminated map[types.UID]bool // being deleted, or gone
	removed    map[types.UID]time.Time
	events     []string // reason on object
}

func watchPreemption(c *cluster) *preemptWatch {
	c.t.Helper()
	w := &preemptWatch{disrupted: map[types.UID]*corev1.PodCondition{}, terminated: map[types.UID]bool{}, removed: map[types.UID]time.Time{}}
	ctx, cancel := context.WithCancel(c.Ctx)
	f := informers.NewSharedInformerFactoryWithOptions(c.newClient("fluence-it-preempt-watch"), 0, informers.WithNamespace(c.NS))
	seen := func(o any) {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		p, ok := o.(*corev1.Pod)
		if !ok {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		for i := range p.Status.Conditions {
			if cond := p.Status.Conditions[i]; cond.Type == corev1.DisruptionTarget {
				w.disrupted[p.UID] = &cond
			}
		}
		if p.DeletionTimestamp != nil {
			w.terminated[p.UID] = true
		}
	}
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, o any) { seen(o) },
		DeleteFunc: func(o any) {
			seen(o)
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if p, ok := o.(*corev1.Pod); ok {
				w.mu.Lock()
				w.terminated[p.UID] = true
				w.removed[p.UID] = time.Now()
				w.mu.Unlock()
			}
		},
	}); err != nil {
		c.t.Fatal(err)
	}
	if _, err := f.Events().V1().Events().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if ev, ok := o.(*eventsv1.Event); ok {
				w.mu.Lock()
				w.events = append(w.events, ev.Reason+" "+ev.Regarding.Name)
				w.mu.Unlock()
			}
		},
	}); err != nil {
		c.t.Fatal(err)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	c.t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	return w
}

// evicted counts the pods marked DisruptionTarget and deleted.
func (w *preemptWatch) evicted(pods []corev1.Pod) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, p := range pods {
		if w.disrupted[p.UID] != nil && w.terminated[p.UID] {
			n++
		}
	}
	return n
}

// removedAfter lists how long after t each pod was removed from the API.
func (w *preemptWatch) removedAfter(pods []corev1.Pod, t time.Time) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, p := range pods {
		if at, ok := w.removed[p.UID]; ok {
			out = append(out, fmt.Sprintf("%.1fs", at.Sub(t).Seconds()))
		} else {
			out = append(out, "not yet")
		}
	}
	return out
}

func (w *preemptWatch) disruption(uid types.UID) *corev1.PodCondition {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.disrupted[uid]
}

// reasons lists the events' reasons seen, each once, sorted.
func (w *preemptWatch) reasons() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, e := range w.events {
		out = append(out, strings.Fields(e)[0])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (w *preemptWatch) eventOn(pod, reason string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.events, reason+" "+pod)
}

// gangSampler lists the pods and nodes at an interval and records what
// no sample may show: a node whose live pods ask more CPU than it has,
// and a gang (pods labelled with one group) with some of its live pods
// bound and others not. The Bindings of one group go out together but not
// atomically, so a single sample may fall between two of them; a gang seen
// partly bound in two samples in a row is a violation.
type gangSampler struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	samples    int
	violations []string
	glimpses   []string // a gang partly bound in one sample only
}

func (c *cluster) sampleGangs(every time.Duration) *gangSampler {
	ctx, cancel := context.WithCancel(c.Ctx)
	s := &gangSampler{cancel: cancel, done: make(chan struct{})}
	c.t.Cleanup(cancel)
	go func() {
		defer close(s.done)
		partial := map[string]bool{} // in the previous sample
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			pods, err := c.Client.CoreV1().Pods(c.NS).List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			now := map[string]bool{}
			var found []string
			// A pod holds its node until it is gone or ended (a
			// terminating pod still does).
			used := map[string]int64{}
			bound, unbound := map[string][]string{}, map[string][]string{}
			for _, p := range pods.Items {
				ended := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
				if p.Spec.NodeName != "" && !ended {
					used[p.Spec.NodeName] += p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
				}
				g := p.Labels[podGroupLabel]
				if g == "" || ended || p.DeletionTimestamp != nil {
					continue
				}
				if p.Spec.NodeName != "" {
					bound[g] = append(bound[g], p.Name)
				} else {
					unbound[g] = append(unbound[g], p.Name)
				}
			}
			for _, n := range nodes.Items {
				if u, have := used[n.Name], n.Status.Allocatable.Cpu().MilliValue(); u > have {
					found = append(found, fmt.Sprintf("node %s: %dm of %dm CPU asked", n.Name, u, have))
				}
			}
			s.mu.Lock()
			s.samples++
			for g := range bound {
				if len(unbound[g]) == 0 {
					continue
				}
				now[g] = true
				msg := fmt.Sprintf("gang %s partly bound: %v bound, %v not", g, bound[g], unbound[g])
				if partial[g] {
					s.violations = append(s.violations, time.Now().Format(time.StampMilli)+" "+msg+" (two samples in a row)")
				} else {
					s.glimpses = append(s.glimpses, time.Now().Format(time.StampMilli)+" "+msg)
				}
			}
			for _, f := range found {
				s.violations = append(s.violations, time.Now().Format(time.StampMilli)+" "+f)
			}
			s.mu.Unlock()
			partial = now
		}
	}()
	return s
}

// stop ends the sampling and fails the test on what it saw.
func (s *gangSampler) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.samples < 10 {
		t.Errorf("only %d samples were taken", s.samples)
	}
	sort.Strings(s.violations)
	if len(s.violations) > 0 {
		t.Errorf("samples showed:\n%s", strings.Join(s.violations, "\n"))
	}
	if len(s.glimpses) > 0 {
		t.Logf("gangs seen partly bound in one sample (between two Bindings):\n%s", strings.Join(s.glimpses, "\n"))
	}
}

func (s *gangSampler) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples
}
