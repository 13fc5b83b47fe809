package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/clock"

	"golang.org/x/sync/semaphore"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/groups"
	"github.com/fluence-sched/fluence/pkg/inspect"
	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "fluence"

// maxBindings bounds the Binding calls in flight.
const maxBindings = 64

// AllocationKey is the pod annotation written at binding; see
// k8sadapter.AllocationKey.
const AllocationKey = k8sadapter.AllocationKey

// Plugin is the fluence scheduler plugin: it translates informer events
// and the framework's extension points into events of the gang core, and
// the core's effects into framework calls and API writes.
type Plugin struct {
	h     fwk.Handle
	log   klog.Logger
	opts  k8sadapter.GraphOptions
	owns  func(*corev1.Pod) bool
	clock clock.PassiveClock
	epoch time.Time
	res   *groups.Resolver
	pods  corelisters.PodLister
	nodes corelisters.NodeLister
	// ownPods: this profile's pods in every phase (ownpods.go); nil
	// without an API client, when the scheduler's informer feeds them.
	ownPods corelisters.PodLister
	// lists encodes the inspection API's group lists, keeping what
	// did not change between answers.
	lists inspect.GroupEncoder
	// gated indexes ownPods' pods that wait for their scheduling gates
	// (gated.go), for the inspection API; nil with ownPods.
	gated   cache.Indexer
	synced  []cache.InformerSynced
	timeout time.Duration
	kick    chan struct{}
	retry   retrySet
	hints   hintSet
	conds   *groups.ConditionWriter
	status  *groups.PodGroupStatusWriter
	evict   *evictor
	metrics profileMetrics
	// waits: when each pod began to wait at Permit, to count the waits
	// that time out (permitwait.go).
	waits permitWaits
	trace func(TraceEvent)
	// binds bounds the Bindings in flight, in arrival order.
	binds *semaphore.Weighted
	// dra: devices and claims (devices.go); nil without informers.
	dra *draState
	// ends and lag keep the core's view of pods behind kube-scheduler's
	// cache (cacheorder.go).
	ends   endGate
	lag    cacheLag
	claims claimLag

	// mu serialises the core, which is not safe for concurrent use; take
	// it with lockCore. later: bindings that landed while it was held
	// (bindlock.go).
	mu    sync.Mutex
	later boundLater
	core  *gang.Core
	// active: the informers feed the core. Set under mu, so a handler
	// either finds it unset and leaves its object to activate's listing, or
	// runs after that listing.
	active atomic.Bool
	// informed are the informers' syncs; synced adds active to them.
	informed []cache.InformerSynced
}

var (
	_ fwk.QueueSortPlugin   = &Plugin{}
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.PermitPlugin      = &Plugin{}
	_ fwk.BindPlugin        = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// Options are hooks for programs that embed the plugin; New uses the zero
// value.
type Options struct {
	// Trace, if set, is told of every pod reserved and bound, in the order
	// the plugin saw them (tests check that no pod of an allocation binds
	// before all of it was reserved).
	Trace func(TraceEvent)
	// Inspectors, if set, learns of every fluence profile built, for the
	// inspection API the scheduler serves (Inspectors.Handler).
	Inspectors *Inspectors
	// Leadership, if set, holds the plugin back until it leads: until
	// then it only keeps its informers' caches. Unset, it leads at once.
	Leadership *Leadership
}

// TraceEvent is one step of a pod in its allocation.
type TraceEvent struct {
	Kind       string // "reserved" or "bound"
	Pod        string // namespace/name
	Allocation string // the allocation record
	Slots      int    // pods in the allocation
}

// New builds the plugin: it validates its arguments, subscribes to nodes
// and pods (every pod, whoever schedules it) and starts the loop that
// places waiting groups when resources free up.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	return NewWith(Options{})(ctx, obj, h)
}

// NewWith returns a plugin factory with the given options.
func NewWith(o Options) func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		p, err := newFromArgs(ctx, obj, h, o.Leadership)
		if err != nil {
			return nil, err
		}
		p.trace = o.Trace
		if o.Inspectors != nil {
			o.Inspectors.add(p)
		}
		return p, nil
	}
}

func newFromArgs(ctx context.Context, obj runtime.Object, h fwk.Handle, lead *Leadership) (*Plugin, error) {
	args, err := DecodeArgs(obj)
	if err != nil {
		return nil, err
	}
	cfg, err := args.Validate()
	if err != nil {
		return nil, err
	}
	f := h.SharedInformerFactory()
	src := groups.Sources{
		Jobs:              f.Batch().V1().Jobs().Lister(),
		StatefulSets:      f.Apps().V1().StatefulSets().Lister(),
		ExtraGPUResources: cfg.ExtraGPUResources,
	}
	p, err := newPlugin(cfg, h, clock.RealClock{}, klog.FromContext(ctx).WithName(Name))
	if err != nil {
		return nil, err
	}
	// PodGroups (scheduler-plugins and Kubernetes), JobSets and MPIJobs are read from informers over the
	// dynamic client, for the resources discovery finds served.
	var dyn dynamic.Interface
	if kc, cs := h.KubeConfig(), h.ClientSet(); kc != nil && cs != nil {
		if d, err := dynamic.NewForConfig(kc); err == nil {
			dyn = d
			src.Custom = groups.NewCustomResources(d, cs.Discovery(), p.log)
		}
	}
	p.res = groups.NewResolver(src)
	p.pods = f.Core().V1().Pods().Lister()
	p.nodes = f.Core().V1().Nodes().Lister()
	p.conds = groups.NewConditionWriter(dyn, h.EventRecorder(), p.log)
	p.conds.WriteNativeAs(src.Custom)
	if utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload) {
		p.conds.LeaveNativeConditions()
	}
	p.status = groups.NewPodGroupStatusWriter(dyn, h.ClientSet(), p.owns, p.log)
	if src.Custom != nil {
		src.Custom.OnPodGroupAdded(p.status.PodGroupAdded)
	}
	registerMetrics()

	nodeReg, err := f.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { p.onNode(o.(*corev1.Node)) },
		UpdateFunc: func(_, o any) { p.onNode(o.(*corev1.Node)) },
		DeleteFunc: func(o any) {
			if n, ok := objectOf[*corev1.Node](o); ok && !p.nodeExists(n.Name) {
				p.feed(func(now int64) { p.core.NodeRemoved(n.Name, now) })
				p.wake()
			}
		},
	})
	if err != nil {
		return nil, err
	}
	podReg, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { p.onPod(o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { p.onPod(o.(*corev1.Pod)) },
		DeleteFunc: func(o any) {
			if pod, ok := objectOf[*corev1.Pod](o); ok {
				p.retry.remove(pod.UID)
				p.hints.remove(pod.UID)
				p.waits.forget(pod.UID)
				p.claims.wait(pod.UID, false)
				p.lag.note(pod)
				if p.fromOwnInformer(pod) {
					p.settleOwn(pod)
					return
				}
				p.feed(func(now int64) { p.core.PodRemoved(string(pod.UID), now) })
				p.wake()
			}
		},
	})
	if err != nil {
		return nil, err
	}
	var ownSynced cache.InformerSynced
	startOwn := func() {}
	if cs := h.ClientSet(); cs != nil {
		if ownSynced, startOwn, err = p.watchOwnPods(ctx, cs); err != nil {
			return nil, err
		}
		// Victims are this profile's pods: the informer that feeds the
		// core knows them.
		lister := p.pods
		if p.ownPods != nil {
			lister = p.ownPods
		}
		p.evict = newEvictor(cs, lister, p.metrics, p.log)
	}
	// A group follows its defining object: when a Job's parallelism, a
	// StatefulSet's replicas or a PodGroup's spec changes, the group's
	// waiting pods are woken to read it afresh (nothing else would send
	// them round the cycle).
	if _, err := f.Batch().V1().Jobs().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(o, n any) {
			a, b := o.(*batchv1.Job), n.(*batchv1.Job)
			if !ptrEqual(a.Spec.Parallelism, b.Spec.Parallelism) || !ptrEqual(a.Spec.Completions, b.Spec.Completions) {
				p.groupChanged(b.Namespace, b.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	if _, err := f.Apps().V1().StatefulSets().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(o, n any) {
			if a, b := o.(*appsv1.StatefulSet), n.(*appsv1.StatefulSet); !ptrEqual(a.Spec.Replicas, b.Spec.Replicas) {
				p.groupChanged(b.Namespace, b.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	if src.Custom != nil {
		src.Custom.OnSpecChanged(p.groupChanged)
	}
	draSynced, err := p.watchDevices(f)
	if err != nil {
		return nil, err
	}
	// Jobs and StatefulSets size groups; their informers must run too, and
	// so must those of the custom resources served at start.
	p.informed = []cache.InformerSynced{nodeReg.HasSynced, podReg.HasSynced,
		f.Batch().V1().Jobs().Informer().HasSynced, f.Apps().V1().StatefulSets().Informer().HasSynced}
	p.informed = append(p.informed, draSynced...)
	if ownSynced != nil {
		p.informed = append(p.informed, ownSynced)
	}
	if src.Custom != nil {
		p.informed = append(p.informed, src.Custom.Synced)
		go src.Custom.Run(ctx)
	}
	p.synced = append(slices.Clone(p.informed), p.active.Load)
	if lead == nil {
		// Nothing to catch up on: the handlers feed the core from the
		// informers' first list.
		p.active.Store(true)
		p.startWriters(ctx)
	} else {
		go p.lead(ctx, lead)
	}
	startOwn()
	return p, nil
}

// newPlugin builds the plugin's core and translation state; New adds the
// informers and API clients.
func newPlugin(cfg Config, h fwk.Handle, clk clock.PassiveClock, log klog.Logger) (*Plugin, error) {
	p := &Plugin{
		h: h, log: log, clock: clk, epoch: clk.Now(), timeout: cfg.PermitTimeout,
		opts: k8sadapter.GraphOptions{RackLabel: cfg.RackLabel, TopologyLevels: cfg.TopologyLevels, ExtraGPUResources: cfg.ExtraGPUResources},
		kick: make(chan struct{}, 1), binds: semaphore.NewWeighted(maxBindings),
	}
	profile := h.ProfileName()
	p.metrics = profileMetrics{profile: profile}
	p.owns = func(pod *corev1.Pod) bool { return pod.Spec.SchedulerName == profile }
	core, err := gang.New(gang.Config{
		MatchPolicy:     cfg.MatchPolicy,
		Queue:           cfg.Queue,
		RackLabel:       cfg.RackLabel,
		TopologyLevels:  cfg.TopologyLevels,
		DefaultDuration: cfg.DefaultDuration,
		Preemption:      cfg.Preemption,
		TicksPerSecond:  ticksPerSecond,
		RunID:           fmt.Sprint(p.epoch.UnixNano()),
		FormatTime:      func(t int64) string { return p.timeOf(t).Format(time.RFC3339) },
		Observe:         p.metrics.observeLoop,
		// New nodes join graphs the loop builds outside mu (prebuild):
		// scheduling cycles do not wait for a build.
		BuildOutside: true,
	})
	if err != nil {
		return nil, err
	}
	p.core = core
	return p, nil
}

func objectOf[T any](o any) (T, bool) {
	if t, ok := o.(T); ok {
		return t, true
	}
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		t, ok := d.Obj.(T)
		return t, ok
	}
	var zero T
	return zero, false
}

// ticksPerSecond is the core's unit: milliseconds, as the simulator's.
const ticksPerSecond = 1000

// now is core time: milliseconds since the plugin started.
func (p *Plugin) now() int64 { return p.clock.Since(p.epoch).Milliseconds() }

// ticksOf is a wall time in core time (negative before the plugin
// started); timeOf the reverse, in UTC.
func (p *Plugin) ticksOf(t time.Time) int64 {
	return t.Sub(p.epoch).Milliseconds() * ticksPerSecond / 1000
}
func (p *Plugin) timeOf(ticks int64) time.Time {
	return p.epoch.Add(time.Duration(ticks) * time.Second / ticksPerSecond).UTC()
}

// do runs f on the core under its lock and carries out the effects after
// the lock is released: the framework's queue calls QueueSort and the
// queueing hints under its own lock.
func (p *Plugin) do(f func(now int64)) {
	p.lockCore()
	f(p.now())
	p.unlockCore()
}

// published is the core's state now, for inspection and the gauges. Only
// bringing the published state up to date takes mu (gang.Core.Publish
// renders again what changed since it was last asked, not every group and
// node); readers build their answers from it after mu is released, so an
// inspection request costs scheduling what changed since the last one,
// not a scan. Nothing is published unless asked: the scheduling path
// never pays for it.
func (p *Plugin) published() *gang.Published {
	p.lockCore()
	defer p.mu.Unlock()
	return p.core.Publish()
}

// groupChanged wakes the waiting pods of the groups an object named
// ns/name defines.
func (p *Plugin) groupChanged(ns, name string) {
	p.feed(func(now int64) { p.core.GroupChanged(ns, name, now) })
}

func ptrEqual[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

func (p *Plugin) onNode(n *corev1.Node) {
	n, ok := p.currentNode(n)
	if !ok {
		return
	}
	cn := p.coreNode(n)
	p.feed(func(now int64) { p.core.NodeSet(cn, now) })
	p.wake()
}

func (p *Plugin) onPod(pod *corev1.Pod) {
	if podEnded(pod) {
		// A client that ignores field selectors: the scheduler's
		// informer keeps ended pods, and the cache stops counting them.
		p.lag.note(pod)
	}
	if p.fromOwnInformer(pod) {
		p.settleOwn(pod) // onOwnPod translates it, once
		return
	}
	pod, ok := p.currentPod(pod)
	if !ok {
		return
	}
	cp := p.corePod(pod, p.owns(pod))
	if cp.NodeName != "" || cp.Done {
		p.hints.remove(pod.UID)
	}
	p.feed(func(now int64) { p.core.PodSeen(cp, now) })
	if cp.Done {
		p.wake()
	}
}

// Name returns the plugin name.
func (p *Plugin) Name() string { return Name }

// ready reports whether the initial lists of nodes and pods were seen and
// the plugin acts: nothing is placed before the plugin knows what already
// runs.
func (p *Plugin) ready() bool {
	for _, s := range p.synced {
		if !s() {
			return false
		}
	}
	return true
}

func (p *Plugin) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run places waiting groups when resources are freed, and once a second
// so reservations come due, holds end and overruns are extended.
func (p *Plugin) run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	gauges := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			gauges = true
		case <-p.kick:
		}
		if !p.ready() {
			continue
		}
		p.prebuild()
		p.do(func(now int64) {
			start := time.Now()
			p.core.Tick(now)
			p.metrics.observeLoopTime(time.Since(start).Seconds())
		})
		// The gauges once a second, not at every kick: a burst of events
		// (thousands of nodes arriving) kicks the loop at each.
		if gauges {
			gauges = false
			p.metrics.publish(p.published().Stats())
		}
		p.apply(gang.Effects{Activate: p.retry.take()})
	}
}

// prebuild builds the graph arriving nodes wait for outside mu, so that
// no scheduling cycle waits for a build (gang.Core.PlanGraph); only the
// install, which replays what holds resources, takes mu. A graph the
// node set moved past while it was built is dropped; the next pass plans
// again.
func (p *Plugin) prebuild() {
	p.lockCore()
	plan := p.core.PlanGraph(p.now())
	p.mu.Unlock()
	if plan == nil {
		return
	}
	b := plan.Build()
	p.do(func(now int64) { p.core.InstallGraph(b, now) })
}

// apply makes the framework calls and API writes the core asked for.
func (p *Plugin) apply(fx gang.Effects) {
	for _, e := range fx.Errors {
		p.log.Error(e.Err, "Internal error in the gang core", "op", e.Op, "group", e.Group)
		p.metrics.internalError(e.Op)
	}
	for _, pl := range fx.Placements {
		p.metrics.placed(pl)
	}
	p.metrics.groupsDecided(fx, ticksPerSecond)
	if len(fx.Activate) > 0 && p.pods != nil {
		pods := map[string]*corev1.Pod{}
		for _, r := range fx.Activate {
			if pod, err := p.pods.Pods(r.Namespace).Get(r.Name); err == nil && string(pod.UID) == r.UID {
				pods[r.Namespace+"/"+r.Name] = pod
			}
		}
		if len(pods) > 0 {
			p.h.Activate(p.log, pods)
		}
	}
	// A pod let through or turned away by the core did not time out,
	// however long it waited: forget its wait before the framework may
	// unreserve it.
	for _, r := range fx.Reject {
		p.waits.forget(typesUID(r.Pod.UID))
		if wp := p.h.GetWaitingPod(typesUID(r.Pod.UID)); wp != nil {
			wp.Reject(Name, r.Message)
		}
	}
	for _, r := range fx.Allow {
		p.waits.forget(typesUID(r.UID))
		if wp := p.h.GetWaitingPod(typesUID(r.UID)); wp != nil {
			wp.Allow(Name)
		}
	}
	for _, c := range fx.Conditions {
		p.conds.Set(c)
	}
	if len(fx.Evictions) > 0 {
		// One preemption per preempting group, however many pods it
		// evicts.
		by := map[string]bool{}
		for _, e := range fx.Evictions {
			by[e.By] = true
			p.evict.add(e)
		}
		p.metrics.preempted(len(by))
	}
	if rec := p.h.EventRecorder(); rec != nil {
		for _, e := range fx.Events {
			typ := corev1.EventTypeNormal
			if e.Warning {
				typ = corev1.EventTypeWarning
			}
			ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: e.Pod.Namespace, Name: e.Pod.Name, UID: typesUID(e.Pod.UID)}
			rec.Eventf(ref, nil, typ, e.Reason, "Scheduling", "%s", e.Note)
		}
	}
}

// Less orders the scheduling queue as QueueSort does.
func (p *Plugin) Less(a, b fwk.QueuedEntityInfo) bool { return lessEntities(a, b) }

const stateKey fwk.StateKey = Name + "/node"

type pinned struct{ node string }

func (s *pinned) Clone() fwk.StateData { return s }

// PreFilter finds the pod's group and asks the core for the pod's node:
// the group is placed whole by one engine match, so every pod of it has
// its node before any binds.
func (p *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if !p.ready() {
		// Only at start: wait until every node and pod was seen rather
		// than turn pods away (they would sit out a back-off).
		if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
			return nil, fwk.NewStatus(fwk.Unschedulable, "fluence: still reading the cluster's nodes and pods")
		}
	}
	id, err := p.res.Resolve(ctx, pod)
	if err != nil {
		var re *groups.ResolveError
		if errors.As(err, &re) && !re.Retryable {
			p.apply(gang.Effects{Events: []gang.Event{{Pod: gang.Ref{UID: string(pod.UID), Namespace: pod.Namespace, Name: pod.Name}, Warning: true, Reason: "FluenceInvalidGroup", Note: err.Error()}}})
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
		}
		p.retry.add(pod)
		return nil, fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	cp := p.corePod(pod, true)
	var v gang.Verdict
	p.do(func(now int64) { v = p.core.Place(cp, id, now) })
	if v.Node == "" {
		p.hints.add(pod.UID)
		code := fwk.Unschedulable
		if v.Final {
			code = fwk.UnschedulableAndUnresolvable
		}
		return nil, fwk.NewStatus(code, v.Reason)
	}
	p.hints.remove(pod.UID)
	if who := p.lag.cached(p.h.SnapshotSharedLister(), v.Node); who != "" {
		// The pod's node has the room in the core, not yet in the cache
		// this cycle's filters read: wait for the cache (cacheorder.go).
		p.metrics.cacheWait()
		return nil, fwk.NewStatus(fwk.Unschedulable, "fluence: waiting for the scheduler's cache to let go of ended pod "+who+" on node "+v.Node+"; pod group "+id.Key+" keeps its placement")
	}
	if len(cp.Devices) > 0 {
		if who := p.claims.allocated(p.h.SharedDRAManager(), v.Node); who != "" {
			p.claims.wait(pod.UID, true)
			p.metrics.cacheWait()
			return nil, fwk.NewStatus(fwk.Unschedulable, "fluence: waiting for the scheduler's DRA manager to see the devices of claim "+who+" on node "+v.Node+" released; pod group "+id.Key+" keeps its placement")
		}
		p.claims.wait(pod.UID, false)
	}
	state.Write(stateKey, &pinned{node: v.Node})
	return &fwk.PreFilterResult{NodeNames: sets.New(v.Node)}, nil
}

// PreFilterExtensions is nil: the pod's node does not depend on the other
// pods the framework considers in a cycle.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter admits only the node the engine chose.
func (p *Plugin) Filter(_ context.Context, state fwk.CycleState, pod *corev1.Pod, n fwk.NodeInfo) *fwk.Status {
	d, err := state.Read(stateKey)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if want := d.(*pinned).node; n.Node().Name != want {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "fluence: the pod's group is placed on "+want)
	}
	return nil
}

// PostFilter runs when the pod's node turned it away although the engine
// placed it there: the core withdraws the group's allocation and places it
// again after a short hold.
func (p *Plugin) PostFilter(_ context.Context, state fwk.CycleState, pod *corev1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	d, err := state.Read(stateKey)
	if err != nil {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	node := d.(*pinned).node
	why := "filtered out"
	lagging := false
	if s := m.Get(node); s != nil {
		if s.Message() != "" {
			why = s.Message()
		}
		lagging = p.opts.CountedRefusal(s.Plugin(), s.Reasons())
	}
	p.do(func(now int64) { p.core.TurnedAway(string(pod.UID), why, lagging, now) })
	return nil, fwk.NewStatus(fwk.Unschedulable, "fluence: node "+node+" turned the pod away: "+why)
}

// Reserve marks the pod's slot taken.
func (p *Plugin) Reserve(_ context.Context, state fwk.CycleState, pod *corev1.Pod, node string) *fwk.Status {
	var err error
	var note *bindNote
	p.do(func(int64) {
		if err = p.core.Reserve(string(pod.UID), node); err == nil {
			p.traceStep("reserved", pod)
			note = p.noteLocked(string(pod.UID))
		}
	})
	if err == nil && state != nil {
		// For Bind, which then need not wait for the lock (bindlock.go).
		state.Write(bindNoteKey, note)
	}
	return fwk.AsStatus(err)
}

// traceStep reports a pod's step to the trace hook; the core's lock is
// held, so steps are reported in the order the core took them.
func (p *Plugin) traceStep(kind string, pod *corev1.Pod) {
	if p.trace != nil {
		rec, slots := p.core.Allocation(string(pod.UID))
		p.trace(TraceEvent{Kind: kind, Pod: pod.Namespace + "/" + pod.Name, Allocation: rec, Slots: slots})
	}
}

// Unreserve tells the core the pod failed after Reserve, and counts a
// wait at Permit that ran out (the framework says not why it unreserves).
func (p *Plugin) Unreserve(_ context.Context, state fwk.CycleState, pod *corev1.Pod, node string) {
	if state != nil && state.IsPodGroupSchedulingCycle() {
		// kube-scheduler 1.37's workload cycle reverts the Reserves of
		// the placements it tries, then reserves the chosen one again:
		// the group's allocation must outlive the revert.
		p.do(func(int64) { p.core.Unreserved(string(pod.UID), node) })
		return
	}
	if p.waits.end(pod.UID, p.clock.Now()) {
		p.metrics.permitTimedOut()
	}
	p.do(func(now int64) { p.core.Unreserve(string(pod.UID), node, now) })
}

// Permit holds each pod until every pod of its allocation is reserved; the
// core then lets them all through together. A pod waits its group's own
// timeout (Core.PermitTimeout), else permitTimeout; when that is over the
// framework rejects and unreserves it, and Unreserve withdraws the whole
// allocation, so the group is placed again whole.
func (p *Plugin) Permit(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.Status, time.Duration) {
	var ready bool
	var err error
	at, timeout := p.clock.Now(), p.timeout
	p.do(func(int64) {
		ready, err = p.core.Permit(string(pod.UID))
		if s := p.core.PermitTimeout(string(pod.UID)); s > 0 {
			// The group's own wait: a PodGroup's scheduleTimeoutSeconds.
			timeout = time.Duration(s) * time.Second
		}
	})
	if err != nil {
		return fwk.AsStatus(err), 0
	}
	if !ready {
		// Remembered with the timeout the framework is given: Unreserve
		// takes the pod's failure for a timeout only once it is past.
		p.waits.start(pod.UID, at.Add(timeout))
		return fwk.NewStatus(fwk.Wait), timeout
	}
	return nil, 0
}

// Bind binds the pod with the allocation recorded in an annotation (the
// API server copies a Binding's annotations onto the pod), so a restarted
// scheduler can rebuild its allocations without extra writes.
func (p *Plugin) Bind(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, node string) *fwk.Status {
	p.waits.forget(pod.UID) // through Permit: a later failure is no timeout
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if n := p.bindNoteOf(state, pod); n.rec != "" {
		b.Annotations = map[string]string{AllocationKey: n.rec}
		if n.domain != "" {
			b.Annotations[k8sadapter.DomainKey] = n.domain
		}
		if n.moved {
			// Read back after a restart: no second move within moveEvery.
			b.Annotations[k8sadapter.MovedAtKey] = p.timeOf(n.movedAt).Format(time.RFC3339Nano)
		}
	}
	// Bindings wait their turn, first come first served: a group let
	// through Permit queues all its Bindings at once, so they go out
	// together, and the API server never sees more than maxBindings at a
	// time. (kube-scheduler v1.36 binds with direct calls unless the
	// SchedulerAsyncAPICalls gate is on, and even then runs each call on
	// its own goroutine: nothing else bounds them. Thousands in flight at
	// once made every Binding take about 15 s.)
	if err := p.binds.Acquire(ctx, 1); err != nil {
		return fwk.AsStatus(err)
	}
	err := p.h.ClientSet().CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{})
	p.binds.Release(1)
	if err != nil {
		p.metrics.bindFailed()
		return fwk.AsStatus(err)
	}
	p.bound(pod)
	return nil
}

// EventsToRegister: pods wait for other pods (their group's) and for
// freed resources; nodes change what fits. The core wakes the pods of the
// groups it knows itself, so other pods' events skip them (podEventHint).
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add | fwk.Delete | fwk.UpdatePodLabel}, QueueingHintFn: p.podEventHint},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.Delete | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint | fwk.UpdateNodeCondition}},
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceClaim, ActionType: fwk.Update | fwk.Delete}, QueueingHintFn: p.claimEventHint},
	}, nil
}
