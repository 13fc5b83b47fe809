package integration

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"

	"github.com/fluence-sched/fluence/pkg/plugin"
)

// podGroupLabel names the pod group (gang) of a pod; the group is the pod's
// namespace plus the label's value.
const podGroupLabel = "fluence.flux-framework.org/pod-group"

// checkedResources are compared against node allocatable.
var checkedResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, gpuResource}

// invariants watches Nodes and Pods and records, as they happen:
//   - a node whose non-terminal bound pods request more cpu, memory or
//     nvidia.com/gpu than it has allocatable (once per episode: recorded
//     again only after the node was back within its allocatable);
//   - a pod bound to a node that does not exist at the time it is bound.
//
// Because the Node and Pod watches are separate streams, a suspected
// violation is confirmed with a live GET of the node before it is recorded.
// A pod counts against its node from the moment it is seen bound until it is
// seen terminal (Succeeded/Failed) or deleted from the API; a terminating pod
// still counts, as it does for the scheduler.
type invariants struct {
	client kubernetes.Interface
	ctx    context.Context

	mu          sync.Mutex
	nodes       map[string]corev1.ResourceList // allocatable of existing nodes
	pods        map[string]*invPod             // namespace/name
	byNode      map[string]map[string]*invPod
	overloaded  map[string]bool // nodes in a recorded violation episode
	groups      map[string]*groupState
	violationsL []violation
	// steps are the scheduler's own record of reservations and bindings.
	steps []plugin.TraceEvent
}

type invPod struct {
	uid      types.UID
	node     string
	requests corev1.ResourceList
	terminal bool
	group    string
}

type groupState struct {
	members map[types.UID]*groupMember
}

type groupMember struct {
	key     string
	boundAt time.Time // zero: not bound
	live    bool      // exists in the API and is not being deleted
}

type violation struct {
	at  time.Time
	msg string
}

// startInvariants starts the checker; it stops with c.Ctx. It returns once
// its informers have synced.
func startInvariants(c *cluster) *invariants {
	c.t.Helper()
	v := &invariants{
		client:     c.newClient("fluence-it-invariants"),
		ctx:        c.Ctx,
		nodes:      map[string]corev1.ResourceList{},
		pods:       map[string]*invPod{},
		byNode:     map[string]map[string]*invPod{},
		overloaded: map[string]bool{},
		groups:     map[string]*groupState{},
	}
	factory := informers.NewSharedInformerFactory(v.client, 0)
	unwrap := func(obj any) any {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			return tomb.Obj
		}
		return obj
	}
	_, err := factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { v.nodeChanged(obj.(*corev1.Node)) },
		UpdateFunc: func(_, obj any) { v.nodeChanged(obj.(*corev1.Node)) },
		DeleteFunc: func(obj any) {
			if node, ok := unwrap(obj).(*corev1.Node); ok {
				v.nodeDeleted(node)
			}
		},
	})
	if err != nil {
		c.t.Fatalf("invariants: %v", err)
	}
	_, err = factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { v.podChanged(obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { v.podChanged(obj.(*corev1.Pod)) },
		DeleteFunc: func(obj any) {
			if pod, ok := unwrap(obj).(*corev1.Pod); ok {
				v.podDeleted(pod)
			}
		},
	})
	if err != nil {
		c.t.Fatalf("invariants: %v", err)
	}
	factory.Start(c.Ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(c.Ctx.Done()) {
		if !ok {
			c.t.Fatalf("invariants: informer for %v did not sync", typ)
		}
	}
	go func() {
		<-c.Ctx.Done()
		factory.Shutdown()
	}()
	return v
}

// violations returns the recorded violations, oldest first, each as
// "<RFC3339 time> <details>".
func (v *invariants) violations() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]string, 0, len(v.violationsL))
	for _, x := range v.violationsL {
		out = append(out, x.at.Format(time.RFC3339Nano)+" "+x.msg)
	}
	return out
}

// partialGroups returns, sorted, a description of every pod group where
// some but not all of the group's current pods are bound (current: not
// deleted and not terminating).
func (v *invariants) partialGroups() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for name, g := range v.groups {
		live, liveBound := 0, 0
		var unbound []string
		for _, m := range g.members {
			if m.live {
				live++
				if !m.boundAt.IsZero() {
					liveBound++
				} else {
					unbound = append(unbound, m.key)
				}
			}
		}
		var problems []string
		if liveBound > 0 && liveBound < live {
			sort.Strings(unbound)
			problems = append(problems, fmt.Sprintf("%d of %d pods bound, unbound: %s", liveBound, live, strings.Join(unbound, ",")))
		}
		if len(problems) > 0 {
			out = append(out, name+": "+strings.Join(problems, "; "))
		}
	}
	sort.Strings(out)
	return out
}

// traced records a step the scheduler reported (plugin.Options.Trace).
func (v *invariants) traced(e plugin.TraceEvent) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.steps = append(v.steps, e)
}

// earlyBindings checks the order the scheduler itself recorded: no pod of
// an allocation is bound before every pod of it was reserved (the gang
// waits at Permit until it is whole). It returns one line per allocation
// that broke the rule.
func (v *invariants) earlyBindings() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	reserved := map[string]map[string]bool{} // allocation -> pods reserved so far
	checked := map[string]bool{}
	var out []string
	for _, e := range v.steps {
		if e.Allocation == "" {
			continue
		}
		switch e.Kind {
		case "reserved":
			if reserved[e.Allocation] == nil {
				reserved[e.Allocation] = map[string]bool{}
			}
			reserved[e.Allocation][e.Pod] = true
		case "bound":
			if checked[e.Allocation] {
				continue
			}
			checked[e.Allocation] = true
			if n := len(reserved[e.Allocation]); n < e.Slots {
				out = append(out, fmt.Sprintf("%s: %s bound when %d of its %d pods were reserved", e.Allocation, e.Pod, n, e.Slots))
			}
		}
	}
	if len(v.steps) == 0 {
		out = append(out, "the scheduler reported no steps (was it started with the checker's registry?)")
	}
	return out
}

// bindOrder returns the pods (namespace/name) the scheduler bound, in the
// order it bound them.
func (v *invariants) bindOrder() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for _, e := range v.steps {
		if e.Kind == "bound" {
			out = append(out, e.Pod)
		}
	}
	return out
}

// record appends a violation; v.mu must be held.
func (v *invariants) record(format string, args ...any) {
	v.violationsL = append(v.violationsL, violation{at: time.Now(), msg: fmt.Sprintf(format, args...)})
}

func (v *invariants) nodeChanged(node *corev1.Node) {
	v.mu.Lock()
	v.nodes[node.Name] = node.Status.Allocatable.DeepCopy()
	v.mu.Unlock()
	v.checkNode(node.Name)
}

func (v *invariants) nodeDeleted(node *corev1.Node) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.nodes, node.Name)
	delete(v.overloaded, node.Name)
}

func (v *invariants) podChanged(pod *corev1.Pod) {
	now := time.Now()
	key := cache.MetaObjectToName(pod).String()
	v.mu.Lock()
	old := v.pods[key]
	if old != nil && old.uid != pod.UID { // re-created under the same name
		v.removePod(key, old)
		old = nil
	}
	p := &invPod{
		uid:      pod.UID,
		node:     pod.Spec.NodeName,
		requests: resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}),
		terminal: podutil.IsPodTerminal(pod),
	}
	if name, ok := pod.Labels[podGroupLabel]; ok {
		p.group = pod.Namespace + "/" + name
	}
	newlyBound := p.node != "" && (old == nil || old.node == "")
	if old != nil && old.node != "" && old.node != p.node {
		v.record("pod %s moved from node %s to %s", key, old.node, p.node) // cannot happen in Kubernetes
	}
	if old != nil {
		v.removePod(key, old)
	}
	v.pods[key] = p
	if p.node != "" {
		if v.byNode[p.node] == nil {
			v.byNode[p.node] = map[string]*invPod{}
		}
		v.byNode[p.node][key] = p
	}
	if p.group != "" {
		g := v.groups[p.group]
		if g == nil {
			g = &groupState{members: map[types.UID]*groupMember{}}
			v.groups[p.group] = g
		}
		m := g.members[pod.UID]
		if m == nil {
			m = &groupMember{key: key}
			g.members[pod.UID] = m
		}
		m.live = pod.DeletionTimestamp == nil
		if p.node != "" && m.boundAt.IsZero() {
			m.boundAt = now
		}
	}
	_, nodeKnown := v.nodes[p.node]
	v.mu.Unlock()

	if newlyBound && !nodeKnown {
		// The node watch may lag behind the pod watch: ask the API.
		node, err := v.client.CoreV1().Nodes().Get(v.ctx, p.node, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			v.mu.Lock()
			v.record("pod %s bound to node %s, which does not exist", key, p.node)
			v.mu.Unlock()
		case err == nil:
			v.nodeChanged(node) // includes checkNode
			return
		}
	}
	if p.node != "" {
		v.checkNode(p.node)
	}
}

func (v *invariants) podDeleted(pod *corev1.Pod) {
	key := cache.MetaObjectToName(pod).String()
	v.mu.Lock()
	defer v.mu.Unlock()
	if p := v.pods[key]; p != nil && p.uid == pod.UID {
		v.removePod(key, p)
	}
	if name, ok := pod.Labels[podGroupLabel]; ok {
		if g := v.groups[pod.Namespace+"/"+name]; g != nil {
			if m := g.members[pod.UID]; m != nil {
				m.live = false
			}
		}
	}
	// Removing load cannot overload a node, but it ends an episode.
	if node := pod.Spec.NodeName; node != "" && v.overloaded[node] {
		if _, over := v.overload(node, v.nodes[node]); !over {
			delete(v.overloaded, node)
		}
	}
}

// removePod forgets p's load; v.mu must be held.
func (v *invariants) removePod(key string, p *invPod) {
	delete(v.pods, key)
	if p.node != "" {
		delete(v.byNode[p.node], key)
		if len(v.byNode[p.node]) == 0 {
			delete(v.byNode, p.node)
		}
	}
}

// overload sums the requests of node's non-terminal pods and compares them
// with allocatable; v.mu must be held.
func (v *invariants) overload(node string, allocatable corev1.ResourceList) (string, bool) {
	sum := corev1.ResourceList{}
	var pods []string
	for key, p := range v.byNode[node] {
		if p.terminal {
			continue
		}
		pods = append(pods, key)
		for _, r := range checkedResources {
			if q, ok := p.requests[r]; ok {
				total := sum[r]
				total.Add(q)
				sum[r] = total
			}
		}
	}
	var over []string
	for _, r := range checkedResources {
		req, ok := sum[r]
		if !ok || req.IsZero() {
			continue
		}
		alloc := allocatable[r] // missing: zero
		if req.Cmp(alloc) > 0 {
			over = append(over, fmt.Sprintf("%s requested %s > allocatable %s", r, req.String(), quantityString(alloc)))
		}
	}
	if len(over) == 0 {
		return "", false
	}
	slices.Sort(pods)
	return fmt.Sprintf("node %s over-committed: %s; pods: %s", node, strings.Join(over, ", "), strings.Join(pods, ",")), true
}

func quantityString(q resource.Quantity) string {
	if q.IsZero() {
		return "0"
	}
	return q.String()
}

// checkNode records a violation when node (if it exists) is over-committed,
// confirming it against the node as the API has it now.
func (v *invariants) checkNode(node string) {
	v.mu.Lock()
	allocatable, known := v.nodes[node]
	if !known {
		v.mu.Unlock()
		return // deleted, or not seen yet (podChanged asks the API)
	}
	_, over := v.overload(node, allocatable)
	if !over {
		delete(v.overloaded, node)
	}
	if !over || v.overloaded[node] {
		v.mu.Unlock()
		return
	}
	v.mu.Unlock()

	// The node watch may lag behind the pod watch (e.g. allocatable grew).
	live, err := v.client.CoreV1().Nodes().Get(v.ctx, node, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) && v.ctx.Err() == nil {
			v.mu.Lock()
			v.record("node %s: cannot confirm a suspected over-commitment: %v", node, err)
			v.mu.Unlock()
		}
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, known := v.nodes[node]; !known {
		return
	}
	v.nodes[node] = live.Status.Allocatable.DeepCopy()
	if msg, over := v.overload(node, v.nodes[node]); over && !v.overloaded[node] {
		v.overloaded[node] = true
		v.record("%s", msg)
	}
}
