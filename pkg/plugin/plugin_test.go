package plugin_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/fluence-sched/fluence/pkg/k8sadapter"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// TestGroupLifecycle drives a labelled group of three through every
// extension point: the first two pods wait for the third, the third's
// PreFilter places the group and wakes the others, each pod is pinned to
// its node, the last Permit lets the waiting pods through, and Bind writes
// the allocation record.
func TestGroupLifecycle(t *testing.T) {
	// One pod per node: 3 CPUs each on 4-CPU nodes.
	pods := groupPods("g", 3, "3", "3")
	// The third pod is not in the cluster yet: the group is not whole when
	// the first two come to PreFilter.
	h := newHarness(t, nodes(3, "4"), pods[:2])

	for _, p := range pods[:2] {
		_, r, s := h.preFilter(p)
		if got, want := s.Code(), fwk.Unschedulable; got != want {
			t.Fatalf("PreFilter(%s) code = %v, want %v (%v)", p.Name, got, want, s)
		}
		if want := "fluence: waiting for the pods of group ns/g: 2 of 3 exist"; s.Message() != want {
			t.Errorf("PreFilter(%s) = %q, want %q", p.Name, s.Message(), want)
		}
		if s.Plugin() != plugin.Name {
			t.Errorf("PreFilter(%s) status from %q, want %q", p.Name, s.Plugin(), plugin.Name)
		}
		if r != nil {
			t.Errorf("PreFilter(%s) result = %v, want none", p.Name, r)
		}
	}
	if got := h.act.activated(); len(got) != 0 {
		t.Errorf("activated %v before the group is whole", got)
	}

	// The third pod arrives; its cycle places the whole group and wakes
	// the two waiting pods (not itself: it is in its cycle).
	h.create(pods[2])
	want := map[string]string{"g-0": "n1", "g-1": "n2", "g-2": "n3"}
	cycles := map[string]*cycle{}
	c, n := h.place(pods[2])
	cycles[pods[2].Name] = c
	if n != want[pods[2].Name] {
		t.Errorf("PreFilter(g-2) node = %s, want %s", n, want[pods[2].Name])
	}
	if got, want := h.act.activated(), names(pods[:2]...); !slices.Equal(got, want) {
		t.Errorf("activated %v, want %v", got, want)
	}
	if evs := h.rec.withReason("FluenceGroupPlaced"); len(evs) != 1 || evs[0].Object != "ns/g-0" || evs[0].Note != "pod group ns/g: 3 pods placed on n1,n2,n3" {
		t.Errorf("FluenceGroupPlaced events = %+v, want one on ns/g-0", evs)
	}

	// The woken pods get their nodes.
	for _, p := range pods[:2] {
		c, n := h.place(p)
		if n != want[p.Name] {
			t.Errorf("PreFilter(%s) node = %s, want %s", p.Name, n, want[p.Name])
		}
		cycles[p.Name] = c
	}

	// Filter admits the pinned node only.
	for _, p := range pods {
		for _, n := range []string{"n1", "n2", "n3"} {
			s := cycles[p.Name].filter(n)
			if n == want[p.Name] {
				if !s.IsSuccess() {
					t.Errorf("Filter(%s, %s) = %v, want success", p.Name, n, s)
				}
				continue
			}
			if s.Code() != fwk.UnschedulableAndUnresolvable || s.Message() != "fluence: the pod's group is placed on "+want[p.Name] {
				t.Errorf("Filter(%s, %s) = %v, want UnschedulableAndUnresolvable naming %s", p.Name, n, s, want[p.Name])
			}
		}
	}

	// Reserve, then Permit: the first two wait, the last lets them all
	// through.
	for i, p := range pods {
		c := cycles[p.Name]
		if s := c.reserve(want[p.Name]); !s.IsSuccess() {
			t.Fatalf("Reserve(%s) = %v", p.Name, s)
		}
		wait, s := c.permit(want[p.Name])
		if i < 2 {
			if !s.IsWait() {
				t.Fatalf("Permit(%s) = %v, want Wait", p.Name, s)
			}
			if wait[plugin.Name] != permitTimeout {
				t.Errorf("Permit(%s) waits %v, want the configured %v", p.Name, wait[plugin.Name], permitTimeout)
			}
			if h.fw.GetWaitingPod(p.UID) == nil {
				t.Errorf("%s is not a waiting pod", p.Name)
			}
			continue
		}
		if !s.IsSuccess() {
			t.Fatalf("Permit(%s) = %v, want success", p.Name, s)
		}
	}
	for _, p := range pods {
		if s := cycles[p.Name].waitOnPermit(); !s.IsSuccess() {
			t.Errorf("WaitOnPermit(%s) = %v, want allowed", p.Name, s)
		}
	}

	// Bind sends a Binding to the pod's node with the allocation record.
	if h.fw.APICacher() != nil {
		t.Fatal("the framework has an API cacher; Bind would not use the clientset")
	}
	for _, p := range pods {
		if s := cycles[p.Name].bind(want[p.Name]); !s.IsSuccess() {
			t.Fatalf("Bind(%s) = %v", p.Name, s)
		}
	}
	bs := h.bindings()
	if len(bs) != 3 {
		t.Fatalf("%d bindings sent, want 3", len(bs))
	}
	rec := bs[0].Annotations[plugin.AllocationKey]
	if !strings.HasPrefix(rec, "ns/g@") {
		t.Errorf("allocation record %q does not name group ns/g", rec)
	}
	for i, b := range bs {
		p := pods[i]
		if b.Namespace != ns || b.Name != p.Name || b.UID != p.UID {
			t.Errorf("binding %d is for %s/%s (%s), want %s", i, b.Namespace, b.Name, b.UID, p.Name)
		}
		if b.Target.Kind != "Node" || b.Target.Name != want[p.Name] {
			t.Errorf("binding of %s targets %+v, want node %s", p.Name, b.Target, want[p.Name])
		}
		if got := b.Annotations[plugin.AllocationKey]; got != rec {
			t.Errorf("binding of %s has allocation %q, want the group's %q", p.Name, got, rec)
		}
	}

	// The trace: every pod reserved before any bound, one allocation of 3.
	var steps []string
	for _, e := range h.traced() {
		steps = append(steps, e.Kind+" "+e.Pod)
		if e.Allocation != rec || e.Slots != 3 {
			t.Errorf("trace %+v, want allocation %q of 3 slots", e, rec)
		}
	}
	wantSteps := []string{"reserved ns/g-0", "reserved ns/g-1", "reserved ns/g-2", "bound ns/g-0", "bound ns/g-1", "bound ns/g-2"}
	if diff := cmp.Diff(wantSteps, steps); diff != "" {
		t.Errorf("trace (-want +got):\n%s", diff)
	}
}

// TestWithdrawBeforeCommit: a pod that fails after Reserve, before the
// whole group passed Permit, withdraws the allocation: the pods waiting
// at Permit are turned away with their group's message, and every pod of
// the group is sent to a new cycle.
func TestWithdrawBeforeCommit(t *testing.T) {
	for _, tc := range []struct {
		name string
		// reserved pods of the group, in order; the last one fails.
		reserved []int
		// fail: how the failing pod fails; "timeout" rejects it at Permit
		// first, as the framework's timer does.
		fail string
	}{
		{name: "the last pod fails after Reserve", reserved: []int{0, 1, 2}},
		{name: "a sibling of a waiting pod fails after Reserve", reserved: []int{0, 1}},
		{name: "a waiting pod times out", reserved: []int{0, 1}, fail: "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := groupPods("g", 3, "3", "3")
			h := newHarness(t, nodes(3, "4"), pods)
			on := map[string]string{}
			cycles := map[string]*cycle{}
			for _, p := range pods {
				cycles[p.Name], on[p.Name] = h.place(p)
			}
			last := tc.reserved[len(tc.reserved)-1]
			var waiting []*corev1.Pod
			for _, i := range tc.reserved {
				p := pods[i]
				c := cycles[p.Name]
				if s := c.reserve(on[p.Name]); !s.IsSuccess() {
					t.Fatalf("Reserve(%s) = %v", p.Name, s)
				}
				if i == last && tc.fail != "timeout" {
					break // fails after Reserve, before Permit
				}
				if _, s := c.permit(on[p.Name]); !s.IsWait() {
					t.Fatalf("Permit(%s) = %v, want Wait", p.Name, s)
				}
				if i != last {
					waiting = append(waiting, p)
				}
			}
			failing := pods[last]
			if tc.fail == "timeout" {
				h.fw.GetWaitingPod(failing.UID).Reject(plugin.Name, "rejected due to timeout")
				if s := cycles[failing.Name].waitOnPermit(); s.Code() != fwk.Unschedulable {
					t.Fatalf("WaitOnPermit(%s) = %v, want rejected", failing.Name, s)
				}
			}

			h.act.reset()
			cycles[failing.Name].unreserve(on[failing.Name])

			msg := "fluence: allocation of pod group ns/g withdrawn: pod ns/" + failing.Name + " failed after it was reserved on " + on[failing.Name]
			for _, p := range waiting {
				s := cycles[p.Name].waitOnPermit()
				if s.Code() != fwk.Unschedulable || s.Message() != msg || s.Plugin() != plugin.Name {
					t.Errorf("WaitOnPermit(%s) = %v (plugin %q), want Unschedulable from fluence: %q", p.Name, s, s.Plugin(), msg)
				}
			}
			if got, want := h.act.activated(), names(pods...); !slices.Equal(got, want) {
				t.Errorf("activated %v, want the whole group %v", got, want)
			}
			evs := h.rec.withReason("FluenceGroupWithdrawn")
			var warned []string
			for _, e := range evs {
				warned = append(warned, e.Object)
				if e.Type != corev1.EventTypeWarning || !strings.Contains(e.Note, "failed after it was reserved") {
					t.Errorf("event %+v, want a warning naming the failure", e)
				}
			}
			if want := names(pods...); !slices.Equal(warned, want) {
				t.Errorf("FluenceGroupWithdrawn on %v, want %v", warned, want)
			}
			if len(h.bindings()) != 0 {
				t.Errorf("bindings sent: %v", h.bindings())
			}
		})
	}
}

// TestPostFilterTurnedAway: when the pinned node turns the pod away (a
// stock filter disagrees with the engine), PostFilter says so and the
// group is held off before it is placed again.
func TestPostFilterTurnedAway(t *testing.T) {
	pods := groupPods("g", 2, "2", "3")
	h := newHarness(t, nodes(2, "4"), pods)
	c, n := h.place(pods[0])
	if s := c.filter(n); !s.IsSuccess() {
		t.Fatalf("Filter(%s, %s) = %v", pods[0].Name, n, s)
	}
	why := "node(s) had untolerated taint {dedicated: gpu}"
	statuses := framework.NewNodeToStatus(map[string]*fwk.Status{n: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, why)},
		fwk.NewStatus(fwk.UnschedulableAndUnresolvable))
	h.act.reset()
	r, s := c.postFilter(statuses)
	if r != nil {
		t.Errorf("PostFilter result = %v, want none (fluence nominates no node)", r)
	}
	if want := "fluence: node " + n + " turned the pod away: " + why; s.Code() != fwk.Unschedulable || s.Message() != want {
		t.Errorf("PostFilter = %v, want Unschedulable %q", s, want)
	}
	if got, want := h.act.activated(), names(pods...); !slices.Equal(got, want) {
		t.Errorf("activated %v, want %v", got, want)
	}
	if evs := h.rec.withReason("FluenceGroupWithdrawn"); len(evs) != 2 || !strings.Contains(evs[0].Note, "node "+n+" turned pod ns/g-0 away: "+why) {
		t.Errorf("FluenceGroupWithdrawn events = %+v", evs)
	}
	// The group is held: its pods wait, the first one too.
	for _, p := range pods {
		_, r, s := h.preFilter(p)
		if want := "fluence: pod group ns/g is placed again in 2s: a node turned its last placement away"; s.Code() != fwk.Unschedulable || s.Message() != want {
			t.Errorf("PreFilter(%s) = %v, want Unschedulable %q", p.Name, s, want)
		}
		if r != nil {
			t.Errorf("PreFilter(%s) result = %v during the hold", p.Name, r)
		}
	}
}

// TestImpossibleGroup: a group the cluster can never hold is turned away
// for good, with the engine's reason, and its pods get a warning.
func TestImpossibleGroup(t *testing.T) {
	pods := groupPods("big", 13, "13", "1")
	const reason = "cpu: needs 13000m in total, 12000m available"
	for _, tc := range []struct {
		name  string
		known []*corev1.Pod // in the cluster before the first cycle
		// wantOn: the pods warned.
		wantOn []string
		want   string
	}{
		{
			name: "every pod exists", known: pods, wantOn: names(pods...),
			want: "fluence: pod group ns/big cannot be placed on this cluster: ",
		},
		{
			name: "judged from its first pod", wantOn: names(pods[0]),
			want: "fluence: pod group ns/big cannot be placed on this cluster (judged from 1 of its 13 pods, each missing pod counted as the smallest seen): ",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nodes(3, "4"), tc.known)
			_, r, s := h.preFilter(pods[0])
			if r != nil {
				t.Errorf("PreFilter result = %v", r)
			}
			if s.Code() != fwk.UnschedulableAndUnresolvable || !strings.HasPrefix(s.Message(), tc.want) || !strings.HasSuffix(s.Message(), reason) {
				t.Errorf("PreFilter = %v, want UnschedulableAndUnresolvable %q...%q", s, tc.want, reason)
			}
			// The plugin's loop may have judged the group first: its
			// events come from that goroutine.
			eventually(t, "FluenceGroupRejected events", func() bool { return len(h.rec.withReason("FluenceGroupRejected")) >= len(tc.wantOn) })
			var on []string
			for _, e := range h.rec.withReason("FluenceGroupRejected") {
				on = append(on, e.Object)
				if e.Type != corev1.EventTypeWarning || !strings.HasPrefix(e.Note, "pod group ns/big (13 pods): ") || !strings.HasSuffix(e.Note, reason) {
					t.Errorf("event %+v, want a warning with the reason", e)
				}
			}
			slices.Sort(on)
			if !slices.Equal(on, tc.wantOn) {
				t.Errorf("FluenceGroupRejected on %v, want %v", on, tc.wantOn)
			}
		})
	}
}

// TestInvalidGroup: malformed group labels turn the pod away for good with
// the label named, and a warning on the pod.
func TestInvalidGroup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{
			name:   "size not a number",
			labels: map[string]string{"fluence.flux-framework.org/pod-group": "g", "fluence.flux-framework.org/group-size": "abc"},
			want:   `pod ns/bad: label fluence.flux-framework.org/group-size: "abc" is not a positive integer`,
		},
		{
			name:   "size zero",
			labels: map[string]string{"fluence.flux-framework.org/pod-group": "g", "fluence.flux-framework.org/group-size": "0"},
			want:   `pod ns/bad: label fluence.flux-framework.org/group-size: "0" is not a positive integer`,
		},
		{
			name:   "size too large",
			labels: map[string]string{"fluence.flux-framework.org/pod-group": "g", "fluence.flux-framework.org/group-size": "100001"},
			want:   `pod ns/bad: label fluence.flux-framework.org/group-size: "100001" exceeds the maximum group size 100000`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod("bad", 0, "1").Labels(tc.labels).Obj()
			h := newHarness(t, nodes(1, "4"), []*corev1.Pod{p})
			_, r, s := h.preFilter(p)
			if r != nil {
				t.Errorf("PreFilter result = %v", r)
			}
			if s.Code() != fwk.UnschedulableAndUnresolvable || s.Message() != tc.want {
				t.Errorf("PreFilter = %v, want UnschedulableAndUnresolvable %q", s, tc.want)
			}
			want := []event{{Object: "ns/bad", Type: corev1.EventTypeWarning, Reason: "FluenceInvalidGroup", Note: tc.want}}
			if diff := cmp.Diff(want, h.rec.withReason("FluenceInvalidGroup")); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}

	// Pods of one group that disagree on its size: the latecomer is turned
	// away by the core.
	t.Run("sizes disagree", func(t *testing.T) {
		a := pod("a", 0, "1").Label("fluence.flux-framework.org/pod-group", "g").Label("fluence.flux-framework.org/group-size", "2").Obj()
		b := pod("b", 1, "1").Label("fluence.flux-framework.org/pod-group", "g").Label("fluence.flux-framework.org/group-size", "3").Obj()
		h := newHarness(t, nodes(1, "4"), []*corev1.Pod{a, b})
		_, _, s := h.preFilter(b)
		want := "pods of group ns/g disagree on its size: ns/b says 3, others say 2"
		if s.Code() != fwk.UnschedulableAndUnresolvable || s.Message() != "fluence: "+want {
			t.Errorf("PreFilter(b) = %v, want UnschedulableAndUnresolvable %q", s, want)
		}
		var on []string
		for _, e := range h.rec.withReason("FluenceInvalidGroup") {
			on = append(on, e.Object)
			if e.Note != want {
				t.Errorf("event %+v, want note %q", e, want)
			}
		}
		if !slices.Equal(on, []string{"ns/a", "ns/b"}) {
			t.Errorf("FluenceInvalidGroup on %v, want every pod of the group", on)
		}
	})
}

// TestQueueingHint: a pod whose group the core knows is woken by the core
// itself, so other pods' events skip it; a pod the core does not know is
// queued by any pod event. Node events are registered without a hint.
func TestQueueingHint(t *testing.T) {
	pods := groupPods("g", 2, "3", "1") // two of three
	stranger := pod("stranger", 5, "1").Obj()
	h := newHarness(t, nodes(1, "4"), append(slices.Clone(pods), stranger))

	var nodeEvent bool
	for _, e := range h.events() {
		switch e.Event.Resource {
		case fwk.Pod:
			if want := fwk.Add | fwk.Delete | fwk.UpdatePodLabel; e.Event.ActionType != want {
				t.Errorf("pod events %v, want %v", e.Event.ActionType, want)
			}
		case fwk.Node:
			nodeEvent = true
			if e.QueueingHintFn != nil {
				t.Errorf("node events have a hint: every node change may help")
			}
		}
	}
	if !nodeEvent {
		t.Error("no node events registered")
	}

	if _, _, s := h.preFilter(pods[0]); s.Code() != fwk.Unschedulable {
		t.Fatalf("PreFilter(%s) = %v, want it to wait", pods[0].Name, s)
	}
	hint := h.podHint()
	other := pod("other", 9, "1").Obj()
	for _, tc := range []struct {
		name    string
		waiting *corev1.Pod
		want    fwk.QueueingHint
	}{
		{"a pod waiting for its group", pods[0], fwk.QueueSkip},
		{"a pod of the group not yet through a cycle", pods[1], fwk.Queue},
		{"a pod the core does not know", stranger, fwk.Queue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := hint(klog.Background(), tc.waiting, nil, other)
			if err != nil || got != tc.want {
				t.Errorf("hint = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestQueueSort: higher priority first, then older, then by namespace and
// name.
func TestQueueSort(t *testing.T) {
	h := newHarness(t, nodes(1, "4"), nil)
	less := h.fw.QueueSortFunc()
	info := func(p *corev1.Pod) fwk.QueuedEntityInfo {
		pi, err := framework.NewPodInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		return &framework.QueuedPodInfo{PodInfo: pi, QueueingParams: framework.QueueingParams{Timestamp: time.Now()}}
	}
	// Kubernetes 1.37 queues a native PodGroup in place of its pods: it
	// sorts among pods by its own priority and creation time.
	group := func(name string, created int, priority int32) fwk.QueuedEntityInfo {
		pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
			CreationTimestamp: metav1.NewTime(time.Unix(int64(1000+created), 0))}}
		pg.Spec.Priority = &priority
		return &framework.QueuedPodGroupInfo{PodGroupInfo: &framework.PodGroupInfo{Namespace: "default", Name: name,
			Type: fwk.PodGroupKeyType, PodGroup: pg}}
	}
	entity := func(p *corev1.Pod) func() fwk.QueuedEntityInfo { return func() fwk.QueuedEntityInfo { return info(p) } }
	for _, tc := range []struct {
		name string
		a, b func() fwk.QueuedEntityInfo // a goes first
	}{
		{"group of higher priority", func() fwk.QueuedEntityInfo { return group("g", 9, 10) }, entity(pod("old", 0, "1").Obj())},
		{"older group", func() fwk.QueuedEntityInfo { return group("g", 0, 0) }, func() fwk.QueuedEntityInfo { return group("f", 1, 0) }},
		{"group by name", func() fwk.QueuedEntityInfo { return group("f", 0, 0) }, func() fwk.QueuedEntityInfo { return group("g", 0, 0) }},
		{"higher priority", entity(pod("young", 9, "1").Priority(10).Obj()), entity(pod("old", 0, "1").Obj())},
		{"priority beats name", entity(pod("z", 0, "1").Priority(1).Obj()), entity(pod("a", 0, "1").Obj())},
		{"older", entity(pod("z", 0, "1").Obj()), entity(pod("a", 1, "1").Obj())},
		{"namespace", entity(pod("z", 0, "1").Namespace("a").Obj()), entity(pod("a", 0, "1").Namespace("b").Obj())},
		{"name", entity(pod("a", 0, "1").Obj()), entity(pod("b", 0, "1").Obj())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.a(), tc.b()
			if !less(a, b) {
				t.Error("Less(a, b) = false, want true")
			}
			if less(b, a) {
				t.Error("Less(b, a) = true, want false")
			}
		})
	}
	p := info(pod("same", 0, "1").Obj())
	if less(p, p) {
		t.Error("Less(p, p) = true")
	}
}

// TestBind: the Binding carries the allocation record whichever way it is
// sent (the clientset, or the scheduler's API dispatcher when the
// framework has an API cacher). A binding that fails after the group was
// let through keeps the pod's slot: its next cycle gets the same node and
// passes Permit at once.
func TestBind(t *testing.T) {
	for _, tc := range []struct {
		name      string
		apiCacher bool
	}{
		{name: "clientset"},
		{name: "API cacher", apiCacher: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := groupPods("g", 2, "2", "3")
			h := newHarness(t, nodes(2, "4"), pods)
			if tc.apiCacher {
				h.useAPICacher()
			}
			if got := h.fw.APICacher() != nil; got != tc.apiCacher {
				t.Fatalf("framework has an API cacher: %v, want %v", got, tc.apiCacher)
			}
			// The first binding of g-0 fails.
			var mu sync.Mutex
			failures := 1
			h.cs.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
				b, ok := a.(clienttesting.CreateAction).GetObject().(*corev1.Binding)
				mu.Lock()
				defer mu.Unlock()
				if a.GetSubresource() == "binding" && ok && b.Name == "g-0" && failures > 0 {
					failures--
					return true, nil, errors.New("etcdserver: request timed out")
				}
				return false, nil, nil
			})

			on := map[string]string{}
			cycles := map[string]*cycle{}
			for _, p := range pods {
				cycles[p.Name], on[p.Name] = h.place(p)
			}
			for _, p := range pods {
				c := cycles[p.Name]
				if s := c.reserve(on[p.Name]); !s.IsSuccess() {
					t.Fatalf("Reserve(%s) = %v", p.Name, s)
				}
				c.permit(on[p.Name])
			}
			for _, p := range pods {
				if s := cycles[p.Name].waitOnPermit(); !s.IsSuccess() {
					t.Fatalf("WaitOnPermit(%s) = %v", p.Name, s)
				}
			}

			c0 := cycles["g-0"]
			if s := c0.bind(on["g-0"]); s.Code() != fwk.Error || !strings.Contains(s.Message(), "etcdserver: request timed out") {
				t.Fatalf("Bind(g-0) = %v, want the API error", s)
			}
			// The framework unreserves a pod whose binding failed.
			h.act.reset()
			c0.unreserve(on["g-0"])
			if got, want := h.act.activated(), names(pods[0]); !slices.Equal(got, want) {
				t.Errorf("activated %v, want %v", got, want)
			}
			if s := cycles["g-1"].bind(on["g-1"]); !s.IsSuccess() {
				t.Fatalf("Bind(g-1) = %v", s)
			}

			// g-0's next cycle: the same node, no wait at Permit.
			c0, n := h.place(pods[0])
			if n != on["g-0"] {
				t.Errorf("g-0 placed on %s after its binding failed, want its slot on %s", n, on["g-0"])
			}
			if s := c0.reserve(n); !s.IsSuccess() {
				t.Fatalf("Reserve(g-0) = %v", s)
			}
			if _, s := c0.permit(n); !s.IsSuccess() {
				t.Fatalf("Permit(g-0) = %v, want success: its allocation was let through", s)
			}
			if s := c0.bind(n); !s.IsSuccess() {
				t.Fatalf("Bind(g-0) = %v", s)
			}

			bs := h.bindings()
			var got []string
			rec := bs[0].Annotations[plugin.AllocationKey]
			for _, b := range bs {
				got = append(got, b.Name+"->"+b.Target.Name)
				if b.Annotations[plugin.AllocationKey] != rec || !strings.HasPrefix(rec, "ns/g@") {
					t.Errorf("binding of %s has allocation %q, want the group's %q", b.Name, b.Annotations[plugin.AllocationKey], rec)
				}
			}
			want := []string{"g-0->" + on["g-0"], "g-1->" + on["g-1"], "g-0->" + on["g-0"]}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("bindings sent (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInformerEvents: what the informers deliver reaches the core: nodes
// that join, pods that go away, and resources freed by other schedulers'
// pods.
func TestInformerEvents(t *testing.T) {
	t.Run("a node joins", func(t *testing.T) {
		solo := pod("solo", 0, "1").Obj()
		h := newHarness(t, nil, []*corev1.Pod{solo})
		_, _, s := h.preFilter(solo)
		if want := "fluence: no resource graph yet (no nodes?)"; s.Code() != fwk.Unschedulable || s.Message() != want {
			t.Fatalf("PreFilter(solo) = %v, want Unschedulable %q", s, want)
		}
		if _, err := h.cs.CoreV1().Nodes().Create(h.ctx, node("n1", "4"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var got *fwk.PreFilterResult
		eventually(t, "solo placed on the new node", func() bool {
			_, got, _ = h.preFilter(solo)
			return got != nil
		})
		if !got.NodeNames.Has("n1") || got.NodeNames.Len() != 1 {
			t.Errorf("solo placed on %v, want n1", got.NodeNames)
		}
	})

	t.Run("nodes arrive while pods are placed", func(t *testing.T) {
		// Arriving nodes wait for a graph the plugin's loop builds outside
		// its lock while PreFilter goes on (run with -race).
		h := newHarness(t, nodes(2, "4"), nil)
		wide := groupPods("wide", 6, "6", "4") // six whole nodes: only with the new ones
		for _, p := range wide {
			h.create(p)
		}
		arrived := make(chan struct{})
		go func() {
			defer close(arrived)
			for i := 3; i <= 8; i++ {
				if _, err := h.cs.CoreV1().Nodes().Create(h.ctx, node(fmt.Sprintf("n%d", i), "4"), metav1.CreateOptions{}); err != nil {
					t.Error(err)
				}
			}
		}()
		for i := range 20 {
			small := pod(fmt.Sprintf("small-%d", i), i, "100m").Obj()
			h.create(small)
			h.preFilter(small)
		}
		<-arrived
		var got *fwk.PreFilterResult
		eventually(t, "the wide group placed on the new nodes", func() bool {
			_, got, _ = h.preFilter(wide[0])
			return got != nil
		})
		if got.NodeNames.Len() != 1 {
			t.Errorf("wide-0 placed on %v, want one node", got.NodeNames)
		}
	})

	t.Run("a pod goes away before its group is bound", func(t *testing.T) {
		pods := groupPods("g", 2, "2", "3")
		h := newHarness(t, nodes(2, "4"), pods)
		c, n := h.place(pods[0])
		if s := c.reserve(n); !s.IsSuccess() {
			t.Fatalf("Reserve = %v", s)
		}
		if _, s := c.permit(n); !s.IsWait() {
			t.Fatalf("Permit = %v, want Wait", s)
		}
		if err := h.cs.CoreV1().Pods(ns).Delete(h.ctx, "g-1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		want := "fluence: allocation of pod group ns/g withdrawn: pod ns/g-1 went away before its group was bound"
		if s := c.waitOnPermit(); s.Code() != fwk.Unschedulable || s.Message() != want {
			t.Errorf("WaitOnPermit(g-0) = %v, want Unschedulable %q", s, want)
		}
		_, _, s := h.preFilter(pods[0])
		if want := "fluence: waiting for the pods of group ns/g: 1 of 2 exist"; s.Message() != want {
			t.Errorf("PreFilter(g-0) = %v, want %q", s, want)
		}
	})

	t.Run("another scheduler's pod ends", func(t *testing.T) {
		other := pod("other", 0, "3").SchedulerName("default-scheduler").Node("n1").Obj()
		mine := pod("mine", 1, "2").Obj()
		h := newHarness(t, nodes(1, "4"), []*corev1.Pod{other, mine})
		_, _, s := h.preFilter(mine)
		if s.Code() != fwk.Unschedulable || !strings.Contains(s.Message(), "waiting for resources") {
			t.Fatalf("PreFilter(mine) = %v, want Unschedulable, waiting for resources", s)
		}
		h.act.reset()
		if err := h.cs.CoreV1().Pods(ns).Delete(h.ctx, "other", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// The plugin's loop places the waiting pod and wakes it.
		eventually(t, "mine activated", func() bool { return slices.Contains(h.act.activated(), "ns/mine") })
		if _, n := h.place(mine); n != "n1" {
			t.Errorf("mine placed on %s, want n1", n)
		}
	})
}

// TestFixedPodIsTriedAgain: a pod whose scheduling requirements cannot be
// read (a malformed duration annotation) has its group rejected until the
// pod changes (gang.Pod.Invalid). Once the annotation is fixed, the pod
// must be woken and placed: the queue does not requeue it by itself (an
// annotation change is no event fluence registers, and the hint skips
// pods the core knows), so the core must.
func TestFixedPodIsTriedAgain(t *testing.T) {
	bad := pod("late", 0, "1").Annotation(k8sadapter.DurationKey, "soon").Obj()
	h := newHarness(t, nodes(1, "4"), []*corev1.Pod{bad})
	_, _, s := h.preFilter(bad)
	want := `annotation fluence.flux-framework.org/duration: "soon" is neither a duration (like 10m) nor a number of seconds`
	if s.Code() != fwk.UnschedulableAndUnresolvable || !strings.HasPrefix(s.Message(), "fluence: pod group ns/pod:late cannot be placed: ") || !strings.HasSuffix(s.Message(), want) {
		t.Fatalf("PreFilter = %v, want UnschedulableAndUnresolvable ending %q", s, want)
	}

	h.act.reset()
	fixed := bad.DeepCopy()
	fixed.Annotations[k8sadapter.DurationKey] = "10m"
	if _, err := h.cs.CoreV1().Pods(ns).Update(h.ctx, fixed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the fixed pod activated", func() bool { return slices.Contains(h.act.activated(), "ns/late") })
	if _, n := h.place(fixed); n != "n1" {
		t.Errorf("fixed pod placed on %s, want n1", n)
	}
}
