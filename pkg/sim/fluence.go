package sim

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/queue"
)

// Core time in the simulator is integer milliseconds: arrivals 0.2 s apart
// must not collapse onto one tick.
const msPerSecond = 1000

func toMs(t float64) int64 { return int64(math.Round(t * msPerSecond)) }

// FluenceConfig selects the engine's match policy and queue policy.
type FluenceConfig struct {
	MatchPolicy string // default lonode, as in the measured run
	Queue       queue.Config
	// DefaultDuration is the planned run time, in seconds, of a group
	// that declares none, as the scheduler's defaultDuration. Default
	// 3600.
	DefaultDuration int64
	// TopologyLevels are node label keys, outermost first, each a level of
	// the core's graph, as the scheduler's topologyLevels. Default: the
	// workload's (Workload.TopologyLevels), else none: the zone level
	// only, as before.
	TopologyLevels []string
	// DomainOrder is the core's order of a level's domains for a group
	// kept within one: tightest (the default) or first (gang.Config).
	DomainOrder string
	// Oracle plans every group with its true hold time (runtime plus
	// release delay), which no scheduler knows; every output says so.
	Oracle bool
	// Preemption, when set, lets waiting groups evict running groups of
	// lower priority (gang.Config.Preemption, the scheduler's preemption
	// block); nil: off. The evicted pods go after EvictionGrace and their
	// group comes back as new pods (fluence_preempt.go).
	Preemption *gang.Preemption
	// EvictionGrace is the seconds from an eviction until the pod is gone
	// and its node free. 0: DefaultEvictionGrace; negative: at once.
	EvictionGrace float64
	// HideCheckpoints keeps the groups' checkpoints and movability
	// (GroupSpec.CheckpointEvery, Movable) from the core, as pods without
	// the checkpointed-at and movable annotations: it chooses victims by
	// their run time and moves nothing. The groups still checkpoint: an
	// evicted one loses only the work since its last checkpoint.
	HideCheckpoints bool
	// CheckInvariants checks the core's invariants after every event and
	// fails the run at the first violation. It costs a pass over the whole
	// core per event; the package's tests turn it on for every run.
	CheckInvariants bool
}

// checkAlways turns CheckInvariants on for every run (set by the tests).
var checkAlways bool

// fluence runs the scheduler's own lifecycle: the gang core (pkg/gang),
// driven by gang.Framework the way kube-scheduler drives the plugin. Pods
// are translated as the plugin translates them; groups are planned with
// their declared duration (or the default), as in the scheduler, unless
// Oracle is set.
type fluence struct {
	cfg  FluenceConfig
	env  *Env
	core *gang.Core
	fw   *gang.Framework
	node map[string]int // node name -> cluster index
	// levels are the topology levels of this run: the config's, else the
	// workload's; fromWorkload says which.
	levels       []string
	fromWorkload bool
	// devices: the cluster publishes GPUs as DRA devices (HasGPUDevices),
	// so every pod's gpu request is a device request (devices.go).
	devices bool
	// within is the domain ("key=value") each group's placement event
	// named, by group index, for the tests to check against the nodes.
	within map[int]string
	// errs are the core's internal errors not yet reported: the run fails
	// with them at the end of the event.
	errs []gang.InternalError
	// Preemption (fluence_preempt.go): each group's pods' generation
	// (replacements of evicted pods are new pods) and when its current
	// pods were made; the preemptions carried out; an eviction that
	// could not be.
	gen      map[int]int
	created  map[int]float64
	preempts []PreemptionRecord
	evictErr error
	// told is the checkpoint last told the core of each group that
	// checkpoints, by group index (fluence_checkpoint.go).
	told map[int]float64
	ckpt []*Group
}

// NewFluence returns the fluence scheduler for the simulator.
func NewFluence(cfg FluenceConfig) (Scheduler, error) {
	if cfg.MatchPolicy == "" {
		cfg.MatchPolicy = "lonode"
	}
	if err := cfg.Queue.Validate(); err != nil {
		return nil, err
	}
	if cfg.DefaultDuration <= 0 {
		cfg.DefaultDuration = 3600
	}
	f := &fluence{cfg: cfg, levels: cfg.TopologyLevels}
	core, err := f.newCore()
	if err != nil {
		return nil, err
	}
	f.core = core
	return f, nil
}

func (f *fluence) newCore() (*gang.Core, error) {
	return gang.New(gang.Config{
		MatchPolicy: f.cfg.MatchPolicy, Queue: f.cfg.Queue, DefaultDuration: f.cfg.DefaultDuration,
		TopologyLevels: f.levels, DomainOrder: f.cfg.DomainOrder, TicksPerSecond: msPerSecond, RunID: "sim",
		Preemption: f.cfg.Preemption,
	})
}

func (f *fluence) Name() string { return "fluence" }
func (f *fluence) Model() bool  { return false }
func (f *fluence) Config() string {
	q := f.cfg.Queue
	s := fmt.Sprintf("the fluence gang core: match policy %s, queue policy %s, queue-depth %d", f.cfg.MatchPolicy, q.Policy, q.QueueDepth)
	if q.Policy == queue.Hybrid {
		s += fmt.Sprintf(", reservation-depth %d", q.ReservationDepth)
	}
	if q.Packing {
		s += ", packing-aware backfill"
	}
	if len(f.levels) > 0 {
		s += ", topology levels " + strings.Join(f.levels, " > ")
		if f.fromWorkload {
			s += " (the workload's)"
		}
	}
	s += f.preemptionNote()
	if f.cfg.Oracle {
		return s + "; planned with true runtimes (oracle durations, which no scheduler knows)"
	}
	return s + fmt.Sprintf("; planned with declared durations (default %ds)", f.cfg.DefaultDuration)
}

func (f *fluence) Start(env *Env) error {
	f.env = env
	f.levels, f.fromWorkload = f.cfg.TopologyLevels, false
	if w := env.Workload(); len(f.levels) == 0 && w != nil && len(w.TopologyLevels) > 0 {
		f.levels, f.fromWorkload = w.TopologyLevels, true
	}
	f.within = map[int]string{}
	f.devices = HasGPUDevices(env.Workload())
	if err := checkGPUDevices(env.Workload()); err != nil {
		return err
	}
	f.gen, f.created, f.preempts, f.evictErr, f.told = map[int]int{}, map[int]float64{}, nil, nil, map[int]float64{}
	f.ckpt = f.checkpointing()
	core, err := f.newCore()
	if err != nil {
		return err
	}
	f.core = core
	f.fw = gang.NewFramework(core, f.bind)
	f.fw.Observe = f.observe
	f.fw.PreEnqueue = true // as the scheduler's profile: labelled groups gather before the queue
	f.node = map[string]int{}
	for i, n := range env.Cluster().Nodes {
		f.node[n.Name] = i
		core.NodeSet(coreNode(n), 0)
	}
	return nil
}

// coreNode is a node as the scheduler's node informer would show it; a
// node that publishes its GPUs as DRA devices offers them as devices (as
// its ResourceSlice would), not in its allocatable.
func coreNode(n NodeSpec) gang.Node {
	out := gang.Node{Name: n.Name, Labels: n.Labels,
		Allocatable: gang.Resources{MilliCPU: n.CPU, MemoryBytes: n.Memory, GPU: n.GPU}}
	if n.GPUDevices {
		out.Allocatable.GPU = 0
		out.Devices = gpuDevices(n)
	}
	return out
}

// pod is the core's view of one pod of a group.
func (f *fluence) pod(g *Group, i int) gang.Pod {
	p := g.Spec.Pods[i]
	created := g.Submit
	if t, ok := f.created[g.ID]; ok {
		created = t
	}
	out := gang.Pod{
		UID: f.uid(g, i), Namespace: "sim", Name: f.podName(g, i),
		Created:  toMs(created)*1000 + int64(i),
		Requests: gang.Resources{MilliCPU: p.CPU, MemoryBytes: p.Memory, GPU: p.GPU},
		Priority: int32(g.Spec.Priority), Owned: true,
		Duration: int64(math.Ceil(g.Spec.Duration)),
	}
	if f.devices && p.GPU > 0 {
		// A cluster whose GPUs are devices serves every gpu request from
		// devices, as an extended resource a DeviceClass serves is.
		out.Requests.GPU = 0
		out.Devices = gpuRequest(p.GPU)
	}
	if f.cfg.Oracle {
		// The group holds its last node until its last pod is released.
		hold := g.Spec.Hold() + float64(len(g.Spec.Pods)-1)*f.env.PodReleaseGap()
		out.Duration = int64(math.Ceil(max(g.Spec.Duration, hold))) + 1
	}
	if n := g.PodNode[i]; n >= 0 {
		out.NodeName = f.env.Cluster().Nodes[n].Name
	}
	f.annotate(g, &out)
	return out
}

// groupID is the group's id as the plugin would read it from the pods'
// labels and annotations, topology included.
func (f *fluence) groupID(g *Group) gang.GroupID {
	id := gang.NewGroupID("sim", g.Spec.Name, int32(len(g.Spec.Pods)), gang.SourceLabel)
	id.TopologyKey = g.Spec.TopologyRequired
	id.TopologyPreferred = g.Spec.TopologyPreferred
	return id
}

// podOf finds a group and pod index from a pod's UID, of any generation.
func (f *fluence) podOf(uid string) (*Group, int, bool) {
	g, i, _, ok := f.podGen(uid)
	return g, i, ok
}

func (f *fluence) Submit(g *Group) error {
	id := f.groupID(g)
	now := toMs(f.env.Now())
	for i := range g.Spec.Pods {
		p := f.pod(g, i)
		p.Labeled = id
		f.fw.Add(p, id, now)
	}
	return f.check()
}

func (f *fluence) bind(p *gang.Pod, node string) error {
	g, i, ok := f.podOf(p.UID)
	n, nok := f.node[node]
	if !ok || !nok {
		return fmt.Errorf("sim: cannot bind %s to %s", p, node)
	}
	return f.env.Bind(g, i, n)
}

// observe turns the core's rejections into the simulator's, carries out
// its evictions (fluence_preempt.go), and keeps its internal errors for
// check.
func (f *fluence) observe(fx gang.Effects) {
	f.errs = append(f.errs, fx.Errors...)
	f.evict(fx.Evictions)
	for _, e := range fx.Events {
		switch e.Reason {
		case "FluenceGroupRejected":
			if g, _, ok := f.podOf(e.Pod.UID); ok {
				f.env.Reject(g, e.Note)
			}
		case "FluenceGroupPlaced":
			if g, _, ok := f.podOf(e.Pod.UID); ok {
				if _, after, found := strings.Cut(e.Note, " within "); found {
					f.within[g.ID], _, _ = strings.Cut(after, " ")
				}
			}
		}
	}
}

// PodReleased: the pod ended and freed its node; the core releases the
// group's allocation when its last pod has.
func (f *fluence) PodReleased(g *Group, pod int) error {
	p := f.pod(g, pod)
	p.Done = true
	f.core.PodSeen(p, toMs(f.env.Now()))
	return f.check()
}

// check fails the event on an internal error of the core, which a result
// would otherwise hide, and, when asked, on a broken invariant.
func (f *fluence) check() error {
	if err := f.evictErr; err != nil {
		f.evictErr = nil
		return err
	}
	if len(f.errs) > 0 {
		errs := make([]error, len(f.errs))
		for i, e := range f.errs {
			errs[i] = e
		}
		f.errs = nil
		return fmt.Errorf("internal errors in the gang core: %w", errors.Join(errs...))
	}
	if f.cfg.CheckInvariants || checkAlways {
		if err := f.core.CheckInvariants(); err != nil {
			return fmt.Errorf("the gang core's invariants are broken: %w", err)
		}
	}
	return nil
}

func (f *fluence) Release(*Group) error { return nil }

// NodeAdded tells the core a node joined, as the node informer would.
func (f *fluence) NodeAdded(i int) error {
	n := f.env.Cluster().Nodes[i]
	f.node[n.Name] = i
	f.core.NodeSet(coreNode(n), toMs(f.env.Now()))
	return f.check()
}

func (f *fluence) Schedule() error {
	now := toMs(f.env.Now())
	f.checkpoints()
	f.core.Tick(now)
	f.fw.Run(now)
	return f.check()
}

func (f *fluence) Wakeup() (float64, bool) {
	t, ok := f.core.Wakeup()
	if b, bok := f.fw.Wakeup(); bok && (!ok || b < t) {
		t, ok = b, true
	}
	return float64(t) / msPerSecond, ok
}
