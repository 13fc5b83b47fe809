package plugin

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// Leadership says whether this process is the scheduler that acts. With
// leader election kube-scheduler builds its plugins before it knows: a
// standby's plugin must then decide, report and write nothing, or it
// places groups the leader places elsewhere and tells users so.
//
// A nil *Leadership leads from the start (a scheduler without leader
// election, tests, embedded uses). Leadership is never handed back:
// kube-scheduler exits when it loses its lease.
type Leadership struct {
	once    sync.Once
	started chan struct{}
	on      atomic.Bool
}

// NewLeadership returns a Leadership that does not lead until Start.
func NewLeadership() *Leadership { return &Leadership{started: make(chan struct{})} }

// Start records that this process leads from now on.
func (l *Leadership) Start() {
	l.once.Do(func() {
		l.on.Store(true)
		close(l.started)
	})
}

// Leading reports whether Start was called.
func (l *Leadership) Leading() bool { return l == nil || l.on.Load() }

// Started is closed when this process leads.
func (l *Leadership) Started() <-chan struct{} {
	if l == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return l.started
}

// feed runs f on the core as do does, unless the plugin does not act yet:
// what the informers deliver before then is read back from their caches
// by activate.
func (p *Plugin) feed(f func(now int64)) {
	p.lockCore()
	if !p.active.Load() {
		p.mu.Unlock()
		return
	}
	f(p.now())
	p.unlockCore()
}

// lead waits until the process leads and the informers have listed the
// cluster, makes the plugin act and starts what writes: the condition and
// status writers and the loop (which also publishes the gauges, so a
// standby has no fluence series rather than an empty cluster's).
func (p *Plugin) lead(ctx context.Context, l *Leadership) {
	select {
	case <-ctx.Done():
		return
	case <-l.Started():
	}
	if !cache.WaitForCacheSync(ctx.Done(), p.informed...) {
		return
	}
	if err := p.activate(); err != nil {
		// The listers read caches: this does not happen. Without the
		// cluster's state the core would place over running pods.
		p.log.Error(err, "fluence: cannot read the cluster from the informers' caches; not scheduling")
		return
	}
	p.log.Info("fluence: leading; the cluster's nodes and pods were read")
	p.startWriters(ctx)
}

// startWriters starts the goroutines that write to the API server and
// publish the gauges, and makes the profile's counters exist (at zero):
// only a plugin that acts exports fluence series.
func (p *Plugin) startWriters(ctx context.Context) {
	p.metrics.start()
	go p.conds.Run(ctx)
	go p.status.Run(ctx)
	go p.evict.Run(ctx)
	go p.run(ctx)
}

// activate gives the core every node, then every pod, from the informers'
// caches, in name order so two replicas build the same state, and makes
// the handlers feed the core from then on. It holds the core's lock
// throughout: a handler waiting on it runs after, with an object the cache
// had already stored (PodSeen and NodeSet take the same object twice
// without harm), and one that ran before found the plugin inactive and
// left its object to this listing.
func (p *Plugin) activate() error {
	// The handlers of this profile's pods wait until the core has the
	// listing (cacheorder.go).
	p.ends.mu.Lock()
	defer p.ends.mu.Unlock()
	ns, err := p.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	pods, err := p.pods.List(labels.Everything())
	if err != nil {
		return err
	}
	if p.ownPods != nil {
		if pods, err = p.withOwnPods(pods); err != nil {
			return err
		}
	}
	slices.SortFunc(ns, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	p.mu.Lock()
	now := p.now()
	for _, n := range ns {
		p.core.NodeSet(p.coreNode(n), now)
	}
	for _, pod := range pods {
		p.core.PodSeen(p.corePod(pod, p.owns(pod)), now)
	}
	p.active.Store(true)
	p.unlockCore()
	p.wake()
	return nil
}

// withOwnPods replaces this profile's pods in the scheduler's informer's
// list by those of the plugin's own informer (ended ones too,
// ownpods.go), except where the two disagree on what holds a node: a pod
// the plugin's informer has ended or deleted, or not yet bound, while the
// scheduler's holds it bound and live is taken as the scheduler's
// informer has it, and its end waits (cacheorder.go). p.ends.mu is held.
func (p *Plugin) withOwnPods(pods []*corev1.Pod) ([]*corev1.Pod, error) {
	own, err := p.ownPods.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	listed := map[types.UID]bool{}
	out := slices.DeleteFunc(slices.Clone(pods), p.owns)
	for _, pod := range own {
		if !p.owns(pod) {
			continue
		}
		listed[pod.UID] = true
		if live, held := p.heldByScheduler(pod.Namespace, pod.Name, pod.UID); held && podEnded(pod) {
			p.ends.wait(pod.UID)
			pod = live
		}
		out = append(out, p.boundCopy(pod))
	}
	for _, pod := range pods {
		if !p.owns(pod) || listed[pod.UID] {
			continue
		}
		if live, held := p.heldByScheduler(pod.Namespace, pod.Name, pod.UID); held {
			p.ends.wait(pod.UID)
			out = append(out, live)
		}
	}
	return out, nil
}

// currentPod returns the cache's version of a pod a handler was given,
// false when the cache no longer holds it (its deletion is on the way).
// Handlers run behind the cache: one that waited out activate would
// otherwise hand the core an older version than the one activate listed
// (a pod unbound again, or back after its deletion) until the handlers
// catch up, and a Tick in between would act on it.
func (p *Plugin) currentPod(pod *corev1.Pod) (*corev1.Pod, bool) {
	if p.pods == nil {
		return pod, true
	}
	cur, err := p.pods.Pods(pod.Namespace).Get(pod.Name)
	if err != nil || cur.UID != pod.UID {
		return nil, false
	}
	return cur, true
}

// currentNode is currentPod for nodes.
func (p *Plugin) currentNode(n *corev1.Node) (*corev1.Node, bool) {
	if p.nodes == nil {
		return n, true
	}
	cur, err := p.nodes.Get(n.Name)
	if err != nil || cur.UID != n.UID {
		return nil, false
	}
	return cur, true
}

// nodeExists: a node deleted and created again under its name before its
// deletion reached the handler is not removed (the core knows nodes by
// name).
func (p *Plugin) nodeExists(name string) bool {
	if p.nodes == nil {
		return false
	}
	_, err := p.nodes.Get(name)
	return err == nil
}
