package plugin_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	apicache "k8s.io/kubernetes/pkg/scheduler/backend/api_cache"
	apidispatcher "k8s.io/kubernetes/pkg/scheduler/backend/api_dispatcher"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	apicalls "k8s.io/kubernetes/pkg/scheduler/framework/api_calls"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/fluence-sched/fluence/pkg/inspect"
	"github.com/fluence-sched/fluence/pkg/k8sadapter"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// The harness runs the fluence plugin inside the scheduler framework's own
// runtime (frameworkruntime.NewFramework with a profile enabling fluence
// at every extension point it implements), over a fake clientset and a
// shared informer factory: no API server, no scheduling queue. A test plays
// the scheduler: it runs a pod's cycle one extension point at a time
// (RunPreFilterPlugins, RunFilterPlugins, ...) and checks what the plugin
// answered and what it did (pods activated, waiting pods allowed or
// rejected, events, bindings).

const (
	ns            = "ns"
	schedulerName = "fluence"
	// permitTimeout is passed as plugin arguments, so a test sees them
	// applied.
	permitTimeout = 30 * time.Second
)

// base is the creation time of the first pod; pods made later are younger.
var base = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// node is a Ready node with the given CPUs and 16Gi of memory.
func node(name, cpu string) *corev1.Node {
	return st.MakeNode().Name(name).
		Capacity(map[corev1.ResourceName]string{corev1.ResourceCPU: cpu, corev1.ResourceMemory: "16Gi"}).
		Condition(corev1.NodeReady, corev1.ConditionTrue, "", "").Obj()
}

// nodes returns n nodes n1..nN with the given CPUs each.
func nodes(n int, cpu string) []*corev1.Node {
	var out []*corev1.Node
	for i := 1; i <= n; i++ {
		out = append(out, node(fmt.Sprintf("n%d", i), cpu))
	}
	return out
}

// pod is a pending pod of the fluence scheduler, created age seconds after
// base, asking for cpu; its UID is its name.
func pod(name string, age int, cpu string) *st.PodWrapper {
	return st.MakePod().Namespace(ns).Name(name).UID(name).SchedulerName(schedulerName).
		CreationTimestamp(metav1.NewTime(base.Add(time.Duration(age) * time.Second))).
		Req(map[corev1.ResourceName]string{corev1.ResourceCPU: cpu})
}

// groupPods returns a labelled group's pods name-0..name-(n-1), of size
// labels size, each asking for cpu.
func groupPods(group string, n int, size, cpu string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, pod(fmt.Sprintf("%s-%d", group, i), i, cpu).
			Label(k8sadapter.PodGroupKey, group).Label(k8sadapter.GroupSizeKey, size).Obj())
	}
	return out
}

// activator records the pods the plugin activates, one call per entry.
type activator struct {
	mu    sync.Mutex
	calls [][]string
}

func (a *activator) Activate(_ klog.Logger, pods map[string]*corev1.Pod) {
	var names []string
	for k := range pods {
		names = append(names, k)
	}
	slices.Sort(names)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, names)
}

// activated returns every pod activated since the last reset, sorted, each
// once.
func (a *activator) activated() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, c := range a.calls {
		out = append(out, c...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (a *activator) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = nil
}

// event is one recorded Kubernetes event.
type event struct {
	Object string // namespace/name of the regarding object
	Type   string
	Reason string
	Note   string
}

// recorder is an events.EventRecorderLogger keeping what it was given
// (events.FakeRecorder drops the regarding object).
type recorder struct {
	mu     sync.Mutex
	events []event
}

var _ events.EventRecorderLogger = &recorder{}

func (r *recorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	var obj string
	if ref, ok := regarding.(*corev1.ObjectReference); ok {
		obj = ref.Namespace + "/" + ref.Name
	} else if m, err := meta.Accessor(regarding); err == nil {
		obj = m.GetNamespace() + "/" + m.GetName()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{Object: obj, Type: eventtype, Reason: reason, Note: fmt.Sprintf(note, args...)})
}

func (r *recorder) WithLogger(klog.Logger) events.EventRecorderLogger { return r }

// withReason returns the events recorded with the given reason.
func (r *recorder) withReason(reason string) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, e := range r.events {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// harness is one framework with the fluence plugin, over a fake cluster.
type harness struct {
	t     *testing.T
	ctx   context.Context
	cs    *fake.Clientset
	fw    framework.Framework
	nodes []*corev1.Node
	snap  *internalcache.Snapshot
	act   *activator
	rec   *recorder
	mu    sync.Mutex
	trace []plugin.TraceEvent
	// insp is the inspection API's view of the plugin.
	insp *plugin.Inspectors
}

// newHarness builds the framework over a cluster holding the given nodes
// and pods (the informers' initial list: the plugin has seen them before
// the first cycle), starts the informers and waits for them.
func newHarness(t *testing.T, nodes []*corev1.Node, pods []*corev1.Pod) *harness {
	t.Helper()
	return newHarnessWith(t, harnessConfig{}, nodes, pods)
}

// harnessConfig changes what newHarnessWith builds.
type harnessConfig struct {
	// profile is the scheduler name, schedulerName when "": a test reading
	// the process-wide metrics reads only its own.
	profile string
	lead    *plugin.Leadership
	// permitTimeout replaces the harness's permitTimeout when set (a
	// test that lets a wait run out).
	permitTimeout time.Duration
	// schedulerPodWatch, when set, wraps the pod watch of the scheduler's
	// own informer (the one without a field selector): a test makes it
	// lag the plugin's informer of its profile's pods.
	schedulerPodWatch func(watch.Interface) watch.Interface
	// ownPodWatch is schedulerPodWatch for the plugin's own informer of
	// its profile's pods (the one with a field selector).
	ownPodWatch func(watch.Interface) watch.Interface
	// schedulerLists, when set, keeps only the pods it accepts in the
	// scheduler's informer's first list.
	schedulerLists func(*corev1.Pod) bool
}

// newHarnessWith is newHarness with a configuration.
func newHarnessWith(t *testing.T, hc harnessConfig, nodes []*corev1.Node, pods []*corev1.Pod) *harness {
	t.Helper()
	if hc.profile == "" {
		hc.profile = schedulerName
	}
	if hc.permitTimeout == 0 {
		hc.permitTimeout = permitTimeout
	}
	metrics.Register() // the framework's instrumentation needs its metrics (once per process)
	ctx, cancel := context.WithCancel(context.Background())
	var objs []runtime.Object
	for _, n := range nodes {
		objs = append(objs, n)
	}
	for _, p := range pods {
		objs = append(objs, p)
	}
	h := &harness{t: t, ctx: ctx, cs: fake.NewClientset(objs...), act: &activator{}, rec: &recorder{},
		nodes: nodes, snap: internalcache.NewSnapshot(nil, nodes), insp: plugin.NewInspectors()}
	if hc.schedulerPodWatch != nil || hc.ownPodWatch != nil {
		h.cs.PrependWatchReactor("pods", func(a clienttesting.Action) (bool, watch.Interface, error) {
			wa, ok := a.(clienttesting.WatchActionImpl)
			if !ok {
				return false, nil, nil
			}
			wrap := hc.schedulerPodWatch
			if f := wa.GetWatchRestrictions().Fields; f != nil && !f.Empty() {
				wrap = hc.ownPodWatch // the plugin's own informer
			}
			if wrap == nil {
				return false, nil, nil
			}
			w, err := h.cs.Tracker().Watch(a.GetResource(), a.GetNamespace())
			if err != nil {
				return true, nil, err
			}
			return true, wrap(w), nil
		})
	}
	if keep := hc.schedulerLists; keep != nil {
		h.cs.PrependReactor("list", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
			la, ok := a.(clienttesting.ListActionImpl)
			if !ok {
				return false, nil, nil
			}
			if f := la.GetListRestrictions().Fields; f != nil && !f.Empty() {
				return false, nil, nil // the plugin's own informer
			}
			o, err := h.cs.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), a.GetNamespace())
			if err != nil {
				return true, nil, err
			}
			list := o.(*corev1.PodList)
			list.Items = slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return !keep(&p) })
			return true, list, nil
		})
	}
	factory := informers.NewSharedInformerFactory(h.cs, 0)
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})

	enabled := config.PluginSet{Enabled: []config.Plugin{{Name: plugin.Name}}}
	profile := &config.KubeSchedulerProfile{
		SchedulerName: hc.profile,
		Plugins: &config.Plugins{
			PreEnqueue: enabled, QueueSort: enabled, PreFilter: enabled, Filter: enabled, PostFilter: enabled,
			Reserve: enabled, Permit: enabled, Bind: enabled,
		},
		PluginConfig: []config.PluginConfig{{Name: plugin.Name, Args: &plugin.Args{PermitTimeout: hc.permitTimeout.String()}}},
	}
	registry := frameworkruntime.Registry{plugin.Name: plugin.NewWith(plugin.Options{Inspectors: h.insp, Leadership: hc.lead, Trace: func(e plugin.TraceEvent) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.trace = append(h.trace, e)
	}})}
	fw, err := frameworkruntime.NewFramework(ctx, registry, profile,
		frameworkruntime.WithClientSet(h.cs),
		frameworkruntime.WithKubeConfig(nil),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithEventRecorder(h.rec),
		frameworkruntime.WithPodActivator(h.act),
		frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
		frameworkruntime.WithSnapshotSharedLister(h.snap),
	)
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	h.fw = fw
	// The plugin subscribed to its informers in New: start them now.
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	return h
}

// useAPICacher gives the framework an API cacher over an API dispatcher,
// as the scheduler has with SchedulerAsyncAPICalls: Bind then goes
// through it instead of the clientset.
func (h *harness) useAPICacher() {
	d := apidispatcher.New(h.cs, 4, apicalls.Relevances)
	d.Run(klog.Background())
	h.t.Cleanup(d.Close)
	h.fw.SetAPICacher(apicache.New(nil, internalcache.New(h.ctx, d, false, false)))
}

// setSnapshot makes the framework's snapshot (kube-scheduler's cache as a
// cycle sees it) hold the harness's nodes and the given pods.
func (h *harness) setSnapshot(pods ...*corev1.Pod) {
	*h.snap = *internalcache.NewSnapshot(pods, h.nodes)
}

// create adds a pod to the cluster after the informers started.
func (h *harness) create(p *corev1.Pod) {
	h.t.Helper()
	if _, err := h.cs.CoreV1().Pods(p.Namespace).Create(h.ctx, p, metav1.CreateOptions{}); err != nil {
		h.t.Fatalf("create pod %s: %v", p.Name, err)
	}
}

// cycle is one pod's scheduling cycle.
type cycle struct {
	h     *harness
	pod   *corev1.Pod
	state *framework.CycleState
}

// preEnqueue runs the profile's PreEnqueue plugins as the scheduling
// queue does when a pod arrives or is activated: the first that keeps the
// pod out answers.
func (h *harness) preEnqueue(p *corev1.Pod) *fwk.Status {
	for _, pl := range h.fw.PreEnqueuePlugins() {
		if s := pl.PreEnqueue(h.ctx, p); !s.IsSuccess() {
			return s
		}
	}
	return nil
}

// awaitReady waits until the plugin acts: before, PreEnqueue lets every
// pod through (PreFilter waits for the informers instead).
func (h *harness) awaitReady() {
	h.t.Helper()
	// The inspection API answers only once the plugin is ready.
	eventually(h.t, "the plugin ready", func() bool {
		rec := httptest.NewRecorder()
		h.insp.Handler(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, inspect.PathPrefix+"/"+inspect.ResourceNodes, nil))
		return rec.Code == http.StatusOK
	})
}

// preFilter starts a cycle for the pod and runs PreFilter.
func (h *harness) preFilter(p *corev1.Pod) (*cycle, *fwk.PreFilterResult, *fwk.Status) {
	c := &cycle{h: h, pod: p, state: framework.NewCycleState()}
	r, s, _ := h.fw.RunPreFilterPlugins(h.ctx, c.state, p)
	return c, r, s
}

// place runs PreFilter and requires one node for the pod.
func (h *harness) place(p *corev1.Pod) (*cycle, string) {
	h.t.Helper()
	c, r, s := h.preFilter(p)
	if !s.IsSuccess() {
		h.t.Fatalf("PreFilter(%s) = %v, want a node", p.Name, s)
	}
	if r == nil || r.NodeNames.Len() != 1 {
		h.t.Fatalf("PreFilter(%s) result = %v, want one node", p.Name, r)
	}
	return c, r.NodeNames.UnsortedList()[0]
}

func (c *cycle) filter(nodeName string) *fwk.Status {
	c.h.t.Helper()
	ni, err := c.h.snap.NodeInfos().Get(nodeName)
	if err != nil {
		c.h.t.Fatalf("node %s: %v", nodeName, err)
	}
	return c.h.fw.RunFilterPlugins(c.h.ctx, c.state, c.pod, ni)
}

func (c *cycle) postFilter(m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	return c.h.fw.RunPostFilterPlugins(c.h.ctx, c.state, c.pod, m)
}

func (c *cycle) reserve(nodeName string) *fwk.Status {
	return c.h.fw.RunReservePluginsReserve(c.h.ctx, c.state, c.pod, nodeName)
}

func (c *cycle) unreserve(nodeName string) {
	c.h.fw.RunReservePluginsUnreserve(c.h.ctx, c.state, c.pod, nodeName)
}

// permit runs Permit; a pod told to wait becomes a waiting pod, as the
// scheduler's cycle makes it.
func (c *cycle) permit(nodeName string) (map[string]time.Duration, *fwk.Status) {
	wait, s := c.h.fw.RunPermitPlugins(c.h.ctx, c.state, c.pod, nodeName)
	if s.IsWait() {
		c.h.fw.AddWaitingPod(c.pod, wait)
	}
	return wait, s
}

// waitOnPermit is the binding cycle's wait; it fails the test instead of
// blocking when the pod is neither allowed nor rejected.
func (c *cycle) waitOnPermit() *fwk.Status {
	c.h.t.Helper()
	done := make(chan *fwk.Status, 1)
	go func() { done <- c.h.fw.WaitOnPermit(c.h.ctx, c.pod) }()
	select {
	case s := <-done:
		return s
	case <-time.After(10 * time.Second):
		c.h.t.Fatalf("pod %s still waits at Permit", c.pod.Name)
		return nil
	}
}

func (c *cycle) bind(nodeName string) *fwk.Status {
	return c.h.fw.RunBindPlugins(c.h.ctx, c.state, c.pod, nodeName)
}

// bindings returns the Bindings sent to the API, in order.
func (h *harness) bindings() []*corev1.Binding {
	var out []*corev1.Binding
	for _, a := range h.cs.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" && a.GetSubresource() == "binding" {
			out = append(out, a.(clienttesting.CreateAction).GetObject().(*corev1.Binding))
		}
	}
	return out
}

func (h *harness) traced() []plugin.TraceEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.trace)
}

// podHint returns the plugin's queueing hint for pod events.
func (h *harness) podHint() fwk.QueueingHintFn {
	h.t.Helper()
	for _, e := range h.events() {
		if e.Event.Resource == fwk.Pod {
			return e.QueueingHintFn
		}
	}
	h.t.Fatal("fluence registers no pod event")
	return nil
}

// events returns what fluence registered with EventsToRegister, through
// the framework's list of enqueue extensions.
func (h *harness) events() []fwk.ClusterEventWithHint {
	h.t.Helper()
	for _, ext := range h.fw.EnqueueExtensions() {
		if ext.Name() != plugin.Name {
			continue
		}
		evs, err := ext.EventsToRegister(h.ctx)
		if err != nil {
			h.t.Fatalf("EventsToRegister: %v", err)
		}
		return evs
	}
	h.t.Fatal("fluence is not among the framework's enqueue extensions")
	return nil
}

// eventually polls cond until it holds, for what other goroutines deliver
// (the informers, the plugin's loop).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func names(pods ...*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	slices.Sort(out)
	return out
}
