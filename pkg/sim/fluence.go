package sim

import (
	"fmt"
	"math"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/queue"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// Engine time is integer milliseconds: arrivals 0.2 s apart must not
// collapse onto one tick.
const msPerSecond = 1000

func toMs(t float64) int64 { return int64(math.Round(t * msPerSecond)) }

// FluenceConfig selects the engine's match policy and queue policy.
type FluenceConfig struct {
	MatchPolicy string // default lonode, as in the measured run
	Queue       queue.Config
}

// fluence drives the real engine: one match per group over the whole
// graph, queue policies with reservations and backfill.
type fluence struct {
	cfg  FluenceConfig
	env  *Env
	m    *match.Matcher
	q    *queue.Manager
	node map[string]int // node name -> cluster index
	// dirty: something changed since the last loop (an arrival, a release);
	// a loop with nothing new would decide exactly what the last one did.
	dirty bool
	// nextReservation is the earliest reserved start (engine ms), when the
	// queue must run again even if nothing else happens.
	nextReservation int64
	shapes          map[int][]shapeSlots // group id -> its pods by shape
}

type shapeSlots = jobspec.ShapeSlots

// NewFluence returns the fluence scheduler for the simulator.
func NewFluence(cfg FluenceConfig) (Scheduler, error) {
	if cfg.MatchPolicy == "" {
		cfg.MatchPolicy = "lonode"
	}
	if _, err := match.LookupPolicy(cfg.MatchPolicy); err != nil {
		return nil, err
	}
	if err := cfg.Queue.Validate(); err != nil {
		return nil, err
	}
	return &fluence{cfg: cfg, nextReservation: -1}, nil
}

func (f *fluence) Name() string { return "fluence" }
func (f *fluence) Model() bool  { return false }
func (f *fluence) Config() string {
	q := f.cfg.Queue
	s := fmt.Sprintf("the fluence engine: match policy %s, queue policy %s, queue-depth %d", f.cfg.MatchPolicy, q.Policy, q.QueueDepth)
	if q.Policy == queue.Hybrid {
		s += fmt.Sprintf(", reservation-depth %d", q.ReservationDepth)
	}
	return s
}

func (f *fluence) Start(env *Env) error {
	f.env = env
	g, err := clusterGraph(env.Cluster())
	if err != nil {
		return err
	}
	f.m, err = match.New(g, match.Options{Policy: f.cfg.MatchPolicy})
	if err != nil {
		return err
	}
	f.q, err = queue.New(f.m, f.cfg.Queue)
	if err != nil {
		return err
	}
	f.node = map[string]int{}
	for i, n := range env.Cluster().Nodes {
		f.node[n.Name] = i
	}
	f.shapes = map[int][]shapeSlots{}
	return nil
}

// clusterGraph builds cluster -> node -> {core x cpu, gpu x n, memory
// pool in MiB}, node labels as properties. Fractional cores are not
// schedulable and are dropped.
func clusterGraph(c *Cluster) (*resource.Graph, error) {
	b := resource.Build("cluster")
	for _, n := range c.Nodes {
		opts := []resource.NodeOption{resource.Props(n.Labels)}
		if cores := n.CPU / 1000; cores > 0 {
			opts = append(opts, resource.Cores(int(cores)))
		}
		if n.GPU > 0 {
			opts = append(opts, resource.GPUs(int(n.GPU)))
		}
		if mib := n.Memory >> 20; mib > 0 {
			opts = append(opts, resource.Pool("memory", 1, mib, "MiB"))
		}
		b.Node(n.Name, opts...)
	}
	return b.Finish()
}

// groupJobspec turns a group into one slot request per distinct pod shape
// (jobspec.PodGroup, as the Kubernetes adapter does): each pod is a slot of
// {core, memory, gpu}, requests rounded up to whole cores and MiB as the
// graph counts them.
func groupJobspec(g *Group, releaseGap float64) (*jobspec.Jobspec, []shapeSlots, error) {
	shapes := make([]jobspec.PodShape, len(g.Spec.Pods))
	for i, p := range g.Spec.Pods {
		shapes[i] = jobspec.PodShape{Cores: (p.CPU + 999) / 1000, MemoryMiB: (p.Memory + 1<<20 - 1) >> 20, GPU: p.GPU}
	}
	rs, slots, err := jobspec.PodGroup(shapes)
	if err != nil {
		return nil, nil, fmt.Errorf("group %s: %w", g.Spec.Name, err)
	}
	// Plans use the declared time. The group holds its last node until its
	// last pod is released, so the plan covers that; a shorter declared
	// time would be overrun (Kubernetes' activeDeadlineSeconds and Flux's
	// walltime end jobs at it instead).
	hold := g.Spec.Hold() + float64(len(g.Spec.Pods)-1)*releaseGap
	declared := max(g.Spec.Duration, hold)
	dur := int64(math.Ceil(declared*msPerSecond)) + 1
	js := jobspec.New(rs...).Duration(dur).Obj()
	return js, slots, nil
}

func (f *fluence) Submit(g *Group) error {
	js, slots, err := groupJobspec(g, f.env.PodReleaseGap())
	if err != nil {
		f.env.Reject(g, err.Error())
		return nil
	}
	d, err := f.q.Submit(&queue.Group{ID: int64(g.ID), Name: g.Spec.Name, Priority: g.Spec.Priority, Submit: toMs(f.env.Now()), Jobspec: js})
	if err != nil {
		return err
	}
	if d.State == queue.Rejected {
		f.env.Reject(g, d.Reason)
		return nil
	}
	f.shapes[g.ID] = slots
	f.dirty = true
	return nil
}

// PodReleased: fluence frees a group's allocation only when the whole group
// is gone (Release), never pod by pod.
func (f *fluence) PodReleased(*Group, int) error { return nil }

func (f *fluence) Release(g *Group) error {
	delete(f.shapes, g.ID)
	f.dirty = true
	return f.q.Complete(int64(g.ID))
}

func (f *fluence) Schedule() error {
	now := toMs(f.env.Now())
	if !f.dirty && (f.nextReservation < 0 || now < f.nextReservation) {
		return nil
	}
	f.dirty = false
	ds, err := f.q.Schedule(now)
	if err != nil {
		return err
	}
	f.nextReservation = -1
	groups := f.env.Groups()
	for _, d := range ds {
		g := groups[d.Group.ID]
		switch d.State {
		case queue.Running:
			if err := f.bind(g); err != nil {
				return err
			}
		case queue.Reserved:
			if f.nextReservation < 0 || d.At < f.nextReservation {
				f.nextReservation = d.At
			}
		case queue.Rejected:
			f.env.Reject(g, d.Reason)
		}
	}
	return nil
}

// bind pins each pod to the node its slot landed on.
func (f *fluence) bind(g *Group) error {
	ji, ok := f.m.Info(int64(g.ID))
	if !ok {
		return fmt.Errorf("group %s started but the matcher has no job", g.Spec.Name)
	}
	next := map[string]int{}
	for _, sl := range ji.Slots {
		var shape *shapeSlots
		for k := range f.shapes[g.ID] {
			if f.shapes[g.ID][k].Label == sl.Label {
				shape = &f.shapes[g.ID][k]
			}
		}
		if shape == nil || next[sl.Label] >= len(shape.Pods) {
			return fmt.Errorf("group %s: slot %q has no pod left", g.Spec.Name, sl.Label)
		}
		pod := shape.Pods[next[sl.Label]]
		next[sl.Label]++
		node, ok := f.node[sl.Node]
		if !ok {
			return fmt.Errorf("group %s: unknown node %q", g.Spec.Name, sl.Node)
		}
		if err := f.env.Bind(g, pod, node); err != nil {
			return err
		}
	}
	if g.Bound != len(g.PodNode) {
		return fmt.Errorf("group %s: %d of %d pods placed", g.Spec.Name, g.Bound, len(g.PodNode))
	}
	return nil
}

func (f *fluence) Wakeup() (float64, bool) {
	if f.nextReservation < 0 {
		return 0, false
	}
	return float64(f.nextReservation) / msPerSecond, true
}
