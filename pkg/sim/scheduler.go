package sim

// Scheduler is what the simulator drives: fluence itself, or a model of a
// peer. It sees groups arrive and leave and binds pods through the Env.
type Scheduler interface {
	// Name is the scheduler's name in outputs ("fluence", "stock", ...).
	Name() string
	// Model is true for models of other schedulers, so every output can
	// label them as models.
	Model() bool
	// Config describes the settings (policies, timeouts) in one line.
	Config() string
	// Start is called once, before any group arrives.
	Start(env *Env) error
	// Submit: a group arrived; all its pods are Pending.
	Submit(g *Group) error
	// PodReleased: one of a completed group's pods freed its resources.
	// kube-scheduler retries pending pods at every such deletion.
	PodReleased(g *Group, pod int) error
	// Release: the group's last pod was freed (completion + release delay
	// + the pods' staggered terminations; see Options.PodReleaseGap).
	Release(g *Group) error
	// Schedule lets the scheduler bind pods at env.Now(). It is called after
	// every batch of events and at the scheduler's wake-ups.
	Schedule() error
	// Wakeup is the next time the scheduler must run even if nothing
	// happens (a Permit timeout, a back-off), and whether there is one.
	Wakeup() (float64, bool)
}

// Group is a group in flight: its spec and what happened to it.
type Group struct {
	ID   int // index in the workload
	Spec *GroupSpec
	// PodNode is the node index each pod is bound to, -1 while Pending.
	PodNode []int
	Bound   int
	// Times; -1 until they happen.
	Submit, Start, End, Released float64
	// Rejected is set when the scheduler refuses the group for good.
	Rejected     bool
	RejectReason string
	freed        int // pods released so far

	// Preemption (env_evict.go). Evictions counts the times the group
	// lost pods to a preemption, EvictedPods the pods it lost, WorkLost
	// the pod-seconds of runs cut short (pods x time run).
	Evictions   int
	EvictedPods int
	WorkLost    float64
	// evicting marks, per pod, a pod being evicted: it still holds its
	// node until it is gone (its grace period), and is bound no more.
	evicting []bool
	// released marks, per pod, a pod whose resources were given back.
	released []bool
	// run numbers the group's runs; the completion of a run cut short is
	// stale.
	run int
	// saved is the seconds of its runtime the group's checkpoints saved
	// in runs cut short: its next run needs only the rest.
	saved float64
}

// Started reports whether every pod is bound.
func (g *Group) Started() bool { return g.Start >= 0 }

// NodeObserver is a Scheduler that sees nodes join during a run.
type NodeObserver interface {
	// NodeAdded: env.Cluster().Nodes[node] joined the cluster.
	NodeAdded(node int) error
}
