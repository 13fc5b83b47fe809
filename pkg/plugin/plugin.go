package plugin

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "fluence"

// Plugin is the fluence scheduler plugin.
type Plugin struct {
	h       fwk.Handle
	c       *cluster
	res     *Resolver
	dyn     dynamic.Interface
	synced  []cache.InformerSynced
	timeout time.Duration
	kick    chan struct{}
	retry   retrySet
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

// New builds the plugin: it validates its arguments, subscribes to nodes
// and pods (every pod, whoever schedules it) and starts the loop that
// places waiting groups when resources free up.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := DecodeArgs(obj)
	if err != nil {
		return nil, err
	}
	cfg, err := args.Validate()
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx).WithName(Name)
	profile := h.ProfileName()
	owns := func(p *corev1.Pod) bool { return p.Spec.SchedulerName == profile }

	f := h.SharedInformerFactory()
	src := ResolverSources{
		Jobs:         f.Batch().V1().Jobs().Lister(),
		StatefulSets: f.Apps().V1().StatefulSets().Lister(),
	}
	if kc := h.KubeConfig(); kc != nil {
		if d, err := dynamic.NewForConfig(kc); err == nil {
			src.Dynamic = d
		}
	}
	p := &Plugin{h: h, res: NewResolver(src), dyn: src.Dynamic, timeout: cfg.PermitTimeout, kick: make(chan struct{}, 1)}
	p.c = newCluster(cfg, owns, clock.RealClock{}, logger)
	registerMetrics()

	nodeReg, err := f.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { p.c.onNode(o.(*corev1.Node)); p.wake() },
		UpdateFunc: func(_, o any) { p.c.onNode(o.(*corev1.Node)); p.wake() },
		DeleteFunc: func(o any) {
			if n, ok := objectOf[*corev1.Node](o); ok {
				p.c.onNodeGone(n.Name)
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
				fx := &effects{}
				p.retry.remove(pod.UID)
				p.c.onPodGone(pod, fx)
				p.apply(ctx, fx)
				p.wake()
			}
		},
	})
	if err != nil {
		return nil, err
	}
	// Jobs and StatefulSets size groups; their informers must run too.
	jobsSynced := f.Batch().V1().Jobs().Informer().HasSynced
	stsSynced := f.Apps().V1().StatefulSets().Informer().HasSynced
	p.synced = []cache.InformerSynced{nodeReg.HasSynced, podReg.HasSynced, jobsSynced, stsSynced}
	go p.run(ctx)
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

func (p *Plugin) onPod(pod *corev1.Pod) {
	fx := &effects{}
	p.c.onPod(pod, fx)
	p.apply(context.Background(), fx)
	if podDone(pod) {
		p.wake()
	}
}

// Name returns the plugin name.
func (p *Plugin) Name() string { return Name }

// ready reports whether the initial lists of nodes and pods were seen:
// nothing is placed before the plugin knows what already runs.
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
// so reservations come due and overrunning allocations are extended.
func (p *Plugin) run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.kick:
		}
		if !p.ready() {
			continue
		}
		fx := &effects{}
		p.c.loop(fx)
		p.retry.take(fx)
		p.apply(ctx, fx)
	}
}

// apply makes the framework calls a state change asked for.
func (p *Plugin) apply(ctx context.Context, fx *effects) {
	if len(fx.activate) > 0 {
		p.h.Activate(klog.FromContext(ctx), fx.activate)
	}
	for _, uid := range fx.reject {
		if wp := p.h.GetWaitingPod(uid); wp != nil {
			wp.Reject(Name, fx.rejectMsg)
		}
	}
	for _, uid := range fx.allow {
		if wp := p.h.GetWaitingPod(uid); wp != nil {
			wp.Allow(Name)
		}
	}
	if len(fx.podGroups) > 0 {
		go writePodGroupConditions(context.WithoutCancel(ctx), p.dyn, p.h.EventRecorder(), fx.podGroups)
	}
	if r := p.h.EventRecorder(); r != nil {
		for _, e := range fx.events {
			r.Eventf(e.pod, nil, e.typ, e.reason, "Scheduling", "%s", e.note)
		}
	}
}

// Less orders the scheduling queue: higher priority first, then older
// groups, then by group and pod name, so a group's pods come together.
func (p *Plugin) Less(a, b fwk.QueuedPodInfo) bool {
	pa, pb := a.GetPodInfo().GetPod(), b.GetPodInfo().GetPod()
	if x, y := podPriority(pa), podPriority(pb); x != y {
		return x > y
	}
	ta, tb := p.groupTime(pa, a), p.groupTime(pb, b)
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if pa.Namespace != pb.Namespace {
		return pa.Namespace < pb.Namespace
	}
	return pa.Name < pb.Name
}

func (p *Plugin) groupTime(pod *corev1.Pod, qi fwk.QueuedPodInfo) time.Time {
	if k, ok := p.c.sortKeyOf(pod.UID); ok {
		return k
	}
	return pod.CreationTimestamp.Time
}

func podPriority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

const stateKey fwk.StateKey = Name + "/node"

type pinned struct{ node string }

func (s *pinned) Clone() fwk.StateData { return s }

// PreFilter finds the pod's group and its node: the group is placed whole
// by one engine match, so every pod of it has its node before any binds.
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
		var re *ResolveError
		if errors.As(err, &re) && !re.Retryable {
			p.apply(ctx, &effects{events: []event{{pod: pod, typ: corev1.EventTypeWarning, reason: "FluenceInvalidGroup", note: err.Error()}}})
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
		}
		p.retry.add(pod)
		return nil, fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	fx := &effects{}
	v := p.c.place(pod, id, fx)
	p.apply(ctx, fx)
	if v.node == "" {
		code := fwk.Unschedulable
		if v.final {
			code = fwk.UnschedulableAndUnresolvable
		}
		return nil, fwk.NewStatus(code, v.reason)
	}
	state.Write(stateKey, &pinned{node: v.node})
	return &fwk.PreFilterResult{NodeNames: sets.New(v.node)}, nil
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
// placed it there: the group's allocation is withdrawn and placed again.
func (p *Plugin) PostFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	d, err := state.Read(stateKey)
	if err != nil {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	node := d.(*pinned).node
	why := "filtered out"
	if s := m.Get(node); s != nil && s.Message() != "" {
		why = s.Message()
	}
	fx := &effects{}
	p.c.failed(pod, why, fx)
	p.apply(ctx, fx)
	return nil, fwk.NewStatus(fwk.Unschedulable, "fluence: node "+node+" turned the pod away: "+why)
}

// Reserve marks the pod's slot taken.
func (p *Plugin) Reserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, node string) *fwk.Status {
	if err := p.c.reserve(pod, node); err != nil {
		return fwk.AsStatus(err)
	}
	return nil
}

// Unreserve withdraws the whole allocation while none of its pods is bound.
func (p *Plugin) Unreserve(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	fx := &effects{}
	p.c.unreserve(pod, fx)
	p.apply(ctx, fx)
}

// Permit holds each pod until every pod of its allocation is reserved, then
// lets them all through together.
func (p *Plugin) Permit(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.Status, time.Duration) {
	ready, siblings, err := p.c.permit(pod)
	if err != nil {
		return fwk.AsStatus(err), 0
	}
	if !ready {
		return fwk.NewStatus(fwk.Wait), p.timeout
	}
	p.apply(ctx, &effects{allow: siblings})
	return nil, 0
}

// Bind binds the pod with the allocation recorded in an annotation (the
// API server copies a Binding's annotations onto the pod), so a restarted
// scheduler can rebuild its allocations without extra writes.
func (p *Plugin) Bind(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, node string) *fwk.Status {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if rec := p.c.recordOf(pod); rec != "" {
		b.Annotations = map[string]string{AllocationKey: rec}
	}
	if c := p.h.APICacher(); c != nil {
		// The scheduler's API dispatcher bounds how many calls are in
		// flight, as for the stock binder; unbounded concurrent binds
		// overload the API server and open a connection each.
		done, err := c.BindPod(b)
		if err == nil {
			err = c.WaitOnFinish(ctx, done)
		}
		if err != nil {
			return fwk.AsStatus(err)
		}
	} else if err := p.h.ClientSet().CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		return fwk.AsStatus(err)
	}
	p.c.boundOK(pod)
	return nil
}

// EventsToRegister: pods wait for other pods (their group's) and for
// freed resources; nodes change what fits. The plugin also wakes the pods
// of a group it placed directly. Pods of groups that can never fit skip
// other pods' events (podEventHint).
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add | fwk.Delete | fwk.UpdatePodLabel}, QueueingHintFn: p.podEventHint},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.Delete | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint | fwk.UpdateNodeCondition}},
	}, nil
}
