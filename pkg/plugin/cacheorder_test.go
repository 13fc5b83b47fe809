package plugin_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/fluence-sched/fluence/pkg/inspect"
)

// laggingWatch relays a watch, holding its events while held: the
// scheduler's informer (and so kube-scheduler's cache) behind the
// plugin's own informer of its profile's pods, as two watches on a loaded
// API server can be.
type laggingWatch struct {
	src  watch.Interface
	out  chan watch.Event
	done chan struct{}
	once sync.Once
	mu   sync.Mutex
	cond *sync.Cond
	held bool
}

func newLaggingWatch(src watch.Interface) *laggingWatch {
	w := &laggingWatch{src: src, out: make(chan watch.Event), done: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	go w.relay()
	return w
}

func (w *laggingWatch) relay() {
	defer close(w.out)
	for ev := range w.src.ResultChan() {
		w.mu.Lock()
		for w.held {
			w.cond.Wait()
		}
		w.mu.Unlock()
		select {
		case w.out <- ev:
		case <-w.done:
			return
		}
	}
}

func (w *laggingWatch) hold(on bool) {
	w.mu.Lock()
	w.held = on
	w.mu.Unlock()
	w.cond.Broadcast()
}

func (w *laggingWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *laggingWatch) Stop() {
	w.once.Do(func() {
		close(w.done)
		w.hold(false)
		w.src.Stop()
	})
}

// knowsGroup reports whether the inspection API knows the group ns/name.
func (h *harness) knowsGroup(name string) bool {
	rec := httptest.NewRecorder()
	h.insp.Handler(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, inspect.Path(inspect.ResourceGroups, ns, name, ""), nil))
	return rec.Code == http.StatusOK
}

// A pod of fluence's profile that ended frees its node for the core only
// once kube-scheduler's cache has let it go: the plugin's own informer of
// its profile's pods (every phase) may hear of the end before the
// scheduler's informer (which drops ended pods) does, and a group placed
// on the room in between would be turned away by the node's resource
// filter and withdrawn. Here the scheduler's informer is held back while
// the end arrives: the waiting group is not placed on the full node until
// it catches up, then is.
func TestEndedPodFreesRoomAfterSchedulerCache(t *testing.T) {
	running := pod("a-0", 0, "4").Node("n1").Phase(corev1.PodRunning).Obj()
	waiting := groupPods("b", 1, "1", "4")[0]
	var lag *laggingWatch
	h := newHarnessWith(t, harnessConfig{schedulerPodWatch: func(w watch.Interface) watch.Interface {
		lag = newLaggingWatch(w)
		return lag
	}}, nodes(1, "4"), []*corev1.Pod{running, waiting})
	h.awaitReady()
	h.setSnapshot(running)
	if _, _, s := h.preFilter(waiting); s.IsSuccess() {
		t.Fatalf("PreFilter(b-0) = %v while a-0 runs on the only node, want it refused", s)
	}

	lag.hold(true)
	ended := running.DeepCopy()
	ended.Status.Phase = corev1.PodSucceeded
	if _, err := h.cs.CoreV1().Pods(ns).UpdateStatus(h.ctx, ended, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A later pod of the profile: once the core knows it, the plugin's
	// informer has delivered a-0's end (one watch, in order).
	h.create(groupPods("fence", 1, "2", "1")[0])
	eventually(t, "the core to hear of fence-0", func() bool { return h.knowsGroup("fence") })
	if _, r, s := h.preFilter(waiting); s.IsSuccess() {
		t.Fatalf("PreFilter(b-0) placed it on %v while kube-scheduler's cache still holds a-0 there", r.NodeNames.UnsortedList())
	} else if s.Code() != fwk.Unschedulable {
		t.Fatalf("PreFilter(b-0) = %v, want Unschedulable (the room comes)", s)
	}

	lag.hold(false)
	h.setSnapshot()
	eventually(t, "b-0 placed once the scheduler's informer saw a-0 end", func() bool {
		_, r, s := h.preFilter(waiting)
		return s.IsSuccess() && r.NodeNames.Has("n1")
	})
}

// When the scheduler's informer has let an ended pod go but the cycle's
// snapshot (taken from kube-scheduler's cache, whose handler may run after
// the plugin's on the same event) still holds it, PreFilter does not send
// the pod to a node the resource filter would refuse: the pod waits, its
// group keeps its placement (no withdrawal, no hold), and the next cycle,
// on a snapshot without the ended pod, takes the node.
func TestPlacementWaitsForSnapshot(t *testing.T) {
	running := pod("a-0", 0, "4").Node("n1").Phase(corev1.PodRunning).Obj()
	waiting := groupPods("b", 1, "1", "4")[0]
	h := newHarness(t, nodes(1, "4"), []*corev1.Pod{running, waiting})
	h.awaitReady()
	h.setSnapshot(running)

	ended := running.DeepCopy()
	ended.Status.Phase = corev1.PodSucceeded
	if _, err := h.cs.CoreV1().Pods(ns).UpdateStatus(h.ctx, ended, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var c *cycle
	var s *fwk.Status
	eventually(t, "PreFilter(b-0) to see n1 freed", func() bool {
		c, _, s = h.preFilter(waiting)
		return strings.Contains(s.Message(), "a-0")
	})
	if s.Code() != fwk.Unschedulable || !strings.Contains(s.Message(), "n1") {
		t.Fatalf("PreFilter(b-0) = %v, want Unschedulable, waiting for kube-scheduler's cache to let ns/a-0 go on n1", s)
	}
	// The framework runs PostFilter after a failed PreFilter: it must not
	// withdraw the group (a withdrawal holds it off for seconds).
	c.postFilter(nil)
	if ev := h.rec.withReason("FluenceGroupWithdrawn"); len(ev) > 0 {
		t.Fatalf("the group was withdrawn: %v", ev)
	}

	h.setSnapshot()
	_, node := h.place(waiting)
	if node != "n1" {
		t.Fatalf("b-0 placed on %s, want n1", node)
	}
}

// The scheduler's informer drops an ended pod from its store before its
// handlers run, kube-scheduler's cache among them: the plugin's own
// informer may report the end in between, finding the scheduler's
// informer no longer holding the pod, while the cycle's snapshot still
// does. The room is not taken until the snapshot lets the pod go. Here
// the scheduler's informer never hears of a-0 (its store is past it, its
// handlers not), and the snapshot holds a-0 on the only node.
func TestEndedPodWaitsForCacheBehindInformer(t *testing.T) {
	running := pod("a-0", 0, "4").Node("n1").Phase(corev1.PodRunning).Obj()
	waiting := groupPods("b", 1, "1", "4")[0]
	notA := func(p *corev1.Pod) bool { return p.Name != "a-0" }
	h := newHarnessWith(t, harnessConfig{
		schedulerLists: notA,
		schedulerPodWatch: func(w watch.Interface) watch.Interface {
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				p, ok := e.Object.(*corev1.Pod)
				return e, !ok || notA(p)
			})
		},
	}, nodes(1, "4"), []*corev1.Pod{running, waiting})
	h.awaitReady()
	h.setSnapshot(running)
	if _, _, s := h.preFilter(waiting); s.IsSuccess() {
		t.Fatalf("PreFilter(b-0) = %v while a-0 runs on the only node, want it refused", s)
	}

	ended := running.DeepCopy()
	ended.Status.Phase = corev1.PodSucceeded
	if _, err := h.cs.CoreV1().Pods(ns).UpdateStatus(h.ctx, ended, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var s *fwk.Status
	eventually(t, "PreFilter(b-0) to see a-0 end", func() bool {
		_, _, s = h.preFilter(waiting)
		return strings.Contains(s.Message(), "a-0")
	})
	if s.Code() != fwk.Unschedulable || !strings.Contains(s.Message(), "n1") {
		t.Fatalf("PreFilter(b-0) = %v, want Unschedulable, waiting for kube-scheduler's cache to let ns/a-0 go on n1", s)
	}
	h.setSnapshot()
	if _, node := h.place(waiting); node != "n1" {
		t.Fatalf("b-0 placed on %s once the cache let a-0 go, want n1", node)
	}
}

// A binding the scheduler's informer hears of before the plugin's own
// informer (a pod the leader bound just before it died, seen by the new
// leader's two watches an instant apart) counts on its node at once:
// kube-scheduler's cache already counts it, and a group placed on the
// room would be turned away. Here the plugin's informer is held back while
// x-0 is bound to the only node.
func TestBindingSeenFirstBySchedulerInformer(t *testing.T) {
	first := pod("x-0", 0, "4").Obj()
	waiting := groupPods("b", 1, "1", "4")[0]
	var lag *laggingWatch
	h := newHarnessWith(t, harnessConfig{ownPodWatch: func(w watch.Interface) watch.Interface {
		lag = newLaggingWatch(w)
		return lag
	}}, nodes(1, "4"), []*corev1.Pod{first})
	h.awaitReady()

	lag.hold(true)
	bound := first.DeepCopy()
	bound.Spec.NodeName = "n1"
	if _, err := h.cs.CoreV1().Pods(ns).Update(h.ctx, bound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.setSnapshot(bound)
	// b-0 reaches the scheduler's informer after x-0's binding (one watch,
	// in order); the plugin's informer hears of neither.
	h.create(waiting)
	eventually(t, "the scheduler's informer to hold b-0", func() bool {
		_, err := h.fw.SharedInformerFactory().Core().V1().Pods().Lister().Pods(ns).Get("b-0")
		return err == nil
	})
	if _, r, s := h.preFilter(waiting); s.IsSuccess() {
		t.Fatalf("PreFilter(b-0) placed it on %v, where x-0 is bound (kube-scheduler's cache counts it)", r.NodeNames.UnsortedList())
	}
	lag.hold(false)
}
