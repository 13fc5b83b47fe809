package plugin

import (
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

// The core must never see room that kube-scheduler's cache does not: a
// group placed on it would be turned away by the node's resource filter
// and withdrawn. Three orders make sure of it.
//
// Ends. The pods of this profile reach the core from the plugin's own
// informer (every phase, ownpods.go), while kube-scheduler's cache counts
// them from the scheduler's informer, which drops a pod when it ends or
// is deleted. The two are separate watches and either may be first. So an
// end or a deletion the plugin's informer reports while the scheduler's
// still holds the pod live on a node waits (endGate), and reaches the core
// when the scheduler's informer lets the pod go: until then the core
// counts the pod where it runs.
//
// Bindings. The other way round, the scheduler's informer may hear of a
// binding (the last ones a leader made before it died, or any binding on
// a loaded API server) before the plugin's informer does, and
// kube-scheduler's cache counts the pod on its node from then on. A
// binding is never undone for a pod's UID, so whichever informer has the
// pod bound is the newer: the core is given the bound copy (boundCopy),
// from either informer, and counts the pod where it runs as soon as the
// cache can.
//
// Handlers. kube-scheduler's cache and the plugin handle the scheduler's
// informer's events in separate handlers, so the core may hear that a pod
// left a node an instant before the cache does. PreFilter checks the
// cycle's snapshot (taken from that cache) for pods the plugin let go on
// the node it chose (cacheLag); while one is there the pod waits, its
// group keeping its placement, and kube-scheduler's own handler, which
// removes the pod from its cache and then requeues waiting pods, sends it
// round again.

// endGate holds the ends of this profile's pods that the scheduler's
// informer has not seen yet.
type endGate struct {
	// mu orders the handlers of both informers for this profile's pods,
	// and activate, with the core's feed: taken before Plugin.mu.
	mu sync.Mutex
	// waiting: pods whose end or deletion waits for the scheduler's
	// informer.
	waiting map[types.UID]bool
}

func (g *endGate) wait(uid types.UID) {
	if g.waiting == nil {
		g.waiting = map[types.UID]bool{}
	}
	g.waiting[uid] = true
}

// heldByScheduler returns the scheduler's informer's copy of a pod when
// it holds the pod live and bound, as kube-scheduler's cache counts it.
func (p *Plugin) heldByScheduler(namespace, name string, uid types.UID) (*corev1.Pod, bool) {
	if p.pods == nil {
		return nil, false
	}
	cur, err := p.pods.Pods(namespace).Get(name)
	if err != nil || cur.UID != uid || cur.Spec.NodeName == "" || podEnded(cur) {
		return nil, false
	}
	return cur, true
}

func podEnded(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// boundCopy returns the copy of a pod of this profile the core is to
// have: the plugin's informer's, unless that is not bound yet while the
// scheduler's informer holds the pod bound (cacheorder.go).
func (p *Plugin) boundCopy(own *corev1.Pod) *corev1.Pod {
	if own.Spec.NodeName != "" || podEnded(own) {
		return own
	}
	if live, held := p.heldByScheduler(own.Namespace, own.Name, own.UID); held {
		return live
	}
	return own
}

// feedOwnLocked gives the core a pod of this profile as the plugin's
// informer stores it (or bound, as the scheduler's informer may have it
// first), unless it ended while the scheduler's informer still holds it.
// p.ends.mu is held.
func (p *Plugin) feedOwnLocked(cur *corev1.Pod) {
	cur = p.boundCopy(cur)
	cp := p.corePod(cur, true)
	if cp.Done {
		if _, held := p.heldByScheduler(cur.Namespace, cur.Name, cur.UID); held {
			p.ends.wait(cur.UID)
			return
		}
		delete(p.ends.waiting, cur.UID)
		// The scheduler's informer let the pod go, but kube-scheduler's
		// cache, a handler of that informer like the plugin's, may
		// still count it: PreFilter checks (cacheLag).
		p.lag.note(cur)
	}
	if cp.NodeName != "" || cp.Done {
		p.hints.remove(cur.UID)
	}
	p.feed(func(now int64) { p.core.PodSeen(cp, now) })
	if cp.Done {
		p.wake()
	}
}

// ownPodDeleted tells the core a pod of this profile was deleted, once the
// scheduler's informer does not hold it either.
func (p *Plugin) ownPodDeleted(pod *corev1.Pod) {
	p.ends.mu.Lock()
	defer p.ends.mu.Unlock()
	if _, held := p.heldByScheduler(pod.Namespace, pod.Name, pod.UID); held {
		p.ends.wait(pod.UID)
		return
	}
	delete(p.ends.waiting, pod.UID)
	p.lag.note(pod) // as in feedOwnLocked
	p.feed(func(now int64) { p.core.PodRemoved(string(pod.UID), now) })
	p.wake()
}

// settleOwn runs when the scheduler's informer changes or drops a pod of
// this profile: a binding it heard of first reaches the core, and an end
// or deletion that waited for it does.
func (p *Plugin) settleOwn(pod *corev1.Pod) {
	p.ends.mu.Lock()
	defer p.ends.mu.Unlock()
	if !p.ends.waiting[pod.UID] {
		p.boundFirstLocked(pod)
		return
	}
	if _, held := p.heldByScheduler(pod.Namespace, pod.Name, pod.UID); held {
		return
	}
	delete(p.ends.waiting, pod.UID)
	if cur, err := p.ownPods.Pods(pod.Namespace).Get(pod.Name); err == nil && cur.UID == pod.UID {
		p.feedOwnLocked(cur)
		return
	}
	p.feed(func(now int64) { p.core.PodRemoved(string(pod.UID), now) })
	p.wake()
}

// boundFirstLocked gives the core the scheduler's informer's copy of a
// pod of this profile when that informer has it bound and the plugin's
// informer does not yet (or has not seen the pod at all). p.ends.mu is
// held.
func (p *Plugin) boundFirstLocked(pod *corev1.Pod) {
	live, held := p.heldByScheduler(pod.Namespace, pod.Name, pod.UID)
	if !held {
		return
	}
	own, err := p.ownPods.Pods(pod.Namespace).Get(pod.Name)
	switch {
	case err == nil && own.UID == pod.UID:
		if own.Spec.NodeName == "" && !podEnded(own) {
			p.feedOwnLocked(own) // bound through boundCopy
		}
	case err != nil:
		p.feedOwnLocked(live)
	}
	// Another UID under the name: the plugin's informer has the pod's
	// successor, and this one's deletion is on its way.
}

// lagSet remembers what the plugin let go while kube-scheduler may still
// count it, keyed by K, until a check shows kube-scheduler let it go too.
type lagSet[K comparable] struct {
	mu   sync.Mutex
	gone map[K]lagged
	// order is gone's keys, oldest first: the oldest are forgotten past
	// maxLagged (a burst of deletions while nothing of this profile is
	// scheduled; by the next cycle kube-scheduler has long caught up).
	order []K
}

// lagged is what was let go: its node, and the pod or claim
// (namespace/name, and the claim's UID) that held it.
type lagged struct {
	node, name string
	uid        types.UID
}

const maxLagged = 4096

// add remembers k, the newest.
func (l *lagSet[K]) add(k K, e lagged) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone == nil {
		l.gone = map[K]lagged{}
	}
	if _, ok := l.gone[k]; !ok {
		l.order = append(l.order, k)
	}
	l.gone[k] = e
	for len(l.order) > maxLagged {
		delete(l.gone, l.order[0])
		l.order = l.order[1:]
	}
}

// stillHeld forgets what held no longer reports kube-scheduler holding,
// and returns the least name of what it still holds on node, "" when
// none.
func (l *lagSet[K]) stillHeld(node string, held func(K, lagged) bool) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	who := ""
	kept := l.order[:0]
	for _, k := range l.order {
		e := l.gone[k]
		if !held(k, e) {
			delete(l.gone, k)
			continue
		}
		kept = append(kept, k)
		if e.node == node && (who == "" || e.name < who) {
			who = e.name
		}
	}
	clear(l.order[len(kept):])
	l.order = kept
	return who
}

func (l *lagSet[K]) empty() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.gone) == 0
}

// cacheLag remembers the pods the scheduler's informer let go from a
// node, until a cycle's snapshot shows kube-scheduler's cache did too.
type cacheLag struct{ lagSet[types.UID] }

// note records that the scheduler's informer let pod go from its node.
func (l *cacheLag) note(pod *corev1.Pod) {
	if pod.Spec.NodeName != "" {
		l.add(pod.UID, lagged{node: pod.Spec.NodeName, name: pod.Namespace + "/" + pod.Name})
	}
}

// cached returns a pod the scheduler's informer let go from node that the
// snapshot still holds there, "" when none; it forgets the pods the
// snapshot no longer holds anywhere.
func (l *cacheLag) cached(snap fwk.SharedLister, node string) string {
	if snap == nil || l.empty() {
		return ""
	}
	onNode := map[string]map[types.UID]bool{}
	return l.stillHeld(node, func(uid types.UID, e lagged) bool {
		pods, ok := onNode[e.node]
		if !ok {
			pods = map[types.UID]bool{}
			if ni, err := snap.NodeInfos().Get(e.node); err == nil && ni != nil {
				for _, pi := range ni.GetPods() {
					pods[pi.GetPod().UID] = true
				}
			}
			onNode[e.node] = pods
		}
		return pods[uid]
	})
}

// Claims. The same holds for devices: the plugin's informer of
// ResourceClaims and kube-scheduler's DRA manager (an assume cache over
// the same informer, with a handler of its own) may see a claim's
// devices released an instant apart, and the DynamicResources filter
// refuses a pod whose devices it still counts allocated. So the devices a
// claim gave back are remembered (claimLag) until the DRA manager no
// longer counts them; while it counts one on the node chosen for a pod
// with device requests, the pod waits, and the claim's event, which
// kube-scheduler sends on after its DRA manager has it, requeues the pod.

// claimLag remembers the devices claims gave back, by ID
// (driver/pool/device), with the claim that held each.
type claimLag struct {
	lagSet[string]
	// waiting: pods that wait for the DRA manager, for the claim event's
	// queueing hint.
	waiting hintSet
}

func (l *claimLag) note(uid types.UID, released []k8sadapter.ReleasedDevice) {
	for _, d := range released {
		l.add(d.ID, lagged{node: d.Node, name: d.Claim, uid: uid})
	}
}

// allocated returns a claim that gave back a device on node which the DRA
// manager still has that claim hold, "" when none; it forgets the devices
// the manager saw released. (Whether another claim holds the device
// since is the engine's business, not a lag.)
func (l *claimLag) allocated(m fwk.SharedDRAManager, node string) string {
	if l.empty() || m == nil || m.ResourceClaims() == nil {
		return ""
	}
	t := m.ResourceClaims()
	return l.stillHeld(node, func(id string, e lagged) bool { return stillHolds(t, e, id) })
}

// stillHolds reports whether the DRA manager's copy of the claim that
// released device id still has it allocated.
func stillHolds(t fwk.ResourceClaimTracker, e lagged, id string) bool {
	ns, name, _ := strings.Cut(e.name, "/")
	c, err := t.Get(ns, name)
	if err != nil || c == nil || c.UID != e.uid || c.Status.Allocation == nil {
		return false
	}
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver+"/"+r.Pool+"/"+r.Device == id {
			return true
		}
	}
	return false
}

func (l *claimLag) wait(uid types.UID, on bool) {
	if on {
		l.waiting.add(uid)
	} else {
		l.waiting.remove(uid)
	}
}

// claimEventHint requeues a pod that waits for the DRA manager to see a
// claim's devices released; the core wakes the others itself (a claim's
// devices reach it as its nodes changing).
func (p *Plugin) claimEventHint(_ klog.Logger, waiting *corev1.Pod, _, _ any) (fwk.QueueingHint, error) {
	if p.claims.waiting.has(waiting.UID) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
