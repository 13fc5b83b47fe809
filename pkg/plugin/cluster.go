package plugin

import (
	"cmp"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/fluence-sched/fluence/pkg/k8sadapter"
	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/queue"
)

// AllocationKey is the pod annotation written at binding: the group key and
// an allocation id, so a restarted scheduler knows which bound pods form
// one allocation.
const AllocationKey = "fluence.flux-framework.org/allocation"

// event is a Kubernetes event to record once the lock is released.
type event struct {
	pod    *corev1.Pod
	typ    string // corev1.EventTypeNormal or EventTypeWarning
	reason string
	note   string
}

// effects are the calls into the scheduler framework that a state change
// asks for. They are made after the cluster lock is released: the
// framework's queue calls back into the plugin (QueueSort) under its own
// lock.
type effects struct {
	activate  map[string]*corev1.Pod
	reject    []types.UID // waiting pods to reject at Permit
	allow     []types.UID // waiting pods to allow at Permit
	rejectMsg string
	events    []event
	// podGroups are PodGroup objects whose condition changed.
	podGroups []podGroupCondition
}

// podGroupCondition is the Schedulable condition of a scheduler-plugins
// PodGroup, written as the annotation ConditionKey.
type podGroupCondition struct {
	namespace, name string
	schedulable     bool
	reason, message string
}

func (e *effects) activatePod(p *corev1.Pod) {
	if e.activate == nil {
		e.activate = map[string]*corev1.Pod{}
	}
	e.activate[p.Namespace+"/"+p.Name] = p
}

// cluster is the plugin's picture of the cluster: nodes, every pod that
// holds resources, the groups, and the engine placing them. All methods
// take the lock; the engine is not safe for concurrent use.
type cluster struct {
	mu    sync.Mutex
	cfg   Config
	opts  k8sadapter.GraphOptions
	owns  func(*corev1.Pod) bool // pods this scheduler places
	clock clock.PassiveClock
	epoch time.Time
	log   klog.Logger

	nodes map[string]*corev1.Node
	// nodesSorted caches the nodes in name order; nil after a change.
	nodesSorted []*corev1.Node
	// dirty: the nodes changed in a way the graph shows (capacity, labels,
	// taints, up/down): rebuild before the next decision.
	dirty      bool
	m          *match.Matcher
	q          *queue.Manager
	lastExtend int64
	// nextID numbers engine jobs; never reused within a process.
	nextID int64

	groups  map[string]*group // by GroupID.Key
	podKey  map[types.UID]string
	byAlloc map[int64]*group
	// held: groups a node turned away, waiting out their hold. Their pods
	// sit in the framework's unschedulable pool and no cluster event may
	// come to wake them, so the loop places them when the hold ends.
	held map[string]bool

	// foreign pods (bound by others, or by us before the allocation
	// annotation existed) by node; each node's sum is one engine job.
	foreign    map[string]map[types.UID]k8sadapter.Requests
	foreignJob map[string]int64
	// overloaded nodes hold more foreign load than the engine had free:
	// nothing new goes there until it fits again.
	overloaded map[string]bool

	// sortKeys holds each group's queue-sort key, read by QueueSort under
	// the framework queue's lock: it has its own lock, never held while
	// calling out.
	sortMu   sync.RWMutex
	sortKeys map[string]time.Time // group key -> earliest pod creation
	sortPods map[types.UID]string // pod -> group key

	// rebuilds counts graph rebuilds: the graph's generation.
	rebuilds int64
}

func newCluster(cfg Config, owns func(*corev1.Pod) bool, clk clock.PassiveClock, log klog.Logger) *cluster {
	return &cluster{
		cfg:        cfg,
		opts:       k8sadapter.GraphOptions{RackLabel: cfg.RackLabel, ExtraGPUResources: cfg.ExtraGPUResources},
		owns:       owns,
		clock:      clk,
		epoch:      clk.Now(),
		log:        log,
		nodes:      map[string]*corev1.Node{},
		dirty:      true,
		groups:     map[string]*group{},
		podKey:     map[types.UID]string{},
		byAlloc:    map[int64]*group{},
		held:       map[string]bool{},
		foreign:    map[string]map[types.UID]k8sadapter.Requests{},
		foreignJob: map[string]int64{},
		overloaded: map[string]bool{},
		sortKeys:   map[string]time.Time{},
		sortPods:   map[types.UID]string{},
	}
}

// now is engine time: whole seconds since the plugin started.
func (c *cluster) now() int64 { return int64(c.clock.Since(c.epoch) / time.Second) }

func (c *cluster) newID() int64 {
	c.nextID++
	return c.nextID
}

// sortedGroups returns the groups in key order (deterministic walks).
func (c *cluster) sortedGroups() []*group {
	out := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *group) int { return cmp.Compare(a.id.Key, b.id.Key) })
	return out
}

func (c *cluster) setSortKey(key string, uid types.UID, created time.Time) {
	c.sortMu.Lock()
	defer c.sortMu.Unlock()
	c.sortPods[uid] = key
	if k, ok := c.sortKeys[key]; !ok || created.Before(k) {
		c.sortKeys[key] = created
	}
}

func (c *cluster) dropSortKey(key string) {
	c.sortMu.Lock()
	defer c.sortMu.Unlock()
	delete(c.sortKeys, key)
}

func (c *cluster) dropSortPod(uid types.UID) {
	c.sortMu.Lock()
	defer c.sortMu.Unlock()
	delete(c.sortPods, uid)
}

// sortKeyOf returns the sort key of the pod's group, if it has one yet.
func (c *cluster) sortKeyOf(uid types.UID) (time.Time, bool) {
	c.sortMu.RLock()
	defer c.sortMu.RUnlock()
	k, ok := c.sortKeys[c.sortPods[uid]]
	return k, ok
}

// podDone reports whether a pod no longer holds resources.
func podDone(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func describePod(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
