package sim

import (
	"errors"
	"math/rand/v2"
	"strconv"
)

// shuffleStream is the PCG stream of StockOptions.ShuffleRetries; the seed
// picks the sequence.
const shuffleStream = 0x73687566666c65 // "shuffle"

// The stock model: kube-scheduler with its default profile and no gang
// support (experiments.md 5.3 "default", peers.md 2.5).
//
//   - QueueSort (PrioritySort): priority descending, then the pod's queue
//     timestamp, then queueing order (group index, pod index for pods
//     created together). The timestamp is the pod's creation (its group's
//     arrival), refreshed to the time of its last failed attempt as
//     upstream does (see podLessStock); StockOptions.FIFO keeps creation
//     order instead.
//   - Filter (NodeResourcesFit): the request fits the node's free cpu,
//     memory and GPUs.
//   - Score (NodeResourcesFit LeastAllocated): see leastAllocatedScore;
//     ties to the lowest node index.
//   - A pod that fits nowhere goes to the unschedulable pool and is retried,
//     in queue order, at the first Schedule call after a cluster event (a
//     group's release frees resources) once its back-off is over.
//
// Scheduling is instantaneous at event times: the scheduler places
// hundreds of pods per second, far faster than the experiments' 0.2-0.3 s
// between submissions, so each Schedule call tries every eligible pod once,
// in queue order. Bound pods hold their resources until the whole group is
// released; the env starts a group when its last pod binds.

// StockOptions tune the stock model.
type StockOptions struct {
	// Backoff is the per-pod back-off after a failed attempt; the zero
	// value turns it off (every unschedulable pod is retried at the first
	// Schedule call after a release). NewStock uses DefaultBackoff.
	Backoff Backoff
	// FIFO orders the queue by creation time for good: a failed pod keeps
	// its place instead of having its queue timestamp refreshed as
	// upstream does. For comparison only.
	FIFO bool
	// ShuffleRetries retries the pods a release makes eligible in a random
	// order drawn from ShuffleSeed, instead of queue order. It is a
	// sensitivity option, off by default: the env releases a group's pods
	// all at once and the model schedules instantaneously, so without it the
	// oldest waiting gang takes all freed capacity; on a real cluster the
	// pods of a deleted job disappear one by one over their termination
	// and per-pod back-off timers interleave, so freed capacity is spread
	// over several gangs (experiments.md 3.7 and 4.4 list the partial gangs).
	ShuffleRetries bool
	ShuffleSeed    uint64
}

// NewStock returns the model of kube-scheduler without gangs, with
// kube-scheduler's default pod back-off.
func NewStock() Scheduler { return NewStockWith(StockOptions{Backoff: DefaultBackoff}) }

// NewStockWith returns the stock model with the given options.
func NewStockWith(opts StockOptions) Scheduler {
	s := &stock{opts: opts}
	s.placer = newPlacer(opts)
	return s
}

type stock struct {
	opts StockOptions
	placer
}

func (s *stock) Name() string { return "stock" }
func (s *stock) Model() bool  { return true }
func (s *stock) Config() string {
	c := "model of kube-scheduler: pod by pod, LeastAllocated, no gangs" + backoffNote(s.opts.Backoff)
	if s.opts.FIFO {
		c += ", FIFO retries"
	}
	if s.opts.ShuffleRetries {
		c += ", shuffled retries (seed " + strconv.FormatUint(s.opts.ShuffleSeed, 10) + ")"
	}
	return c
}

// Start resets all state, so a model can be run more than once.
func (s *stock) Start(env *Env) error {
	s.placer = newPlacer(s.opts)
	s.start(env)
	return nil
}

func (s *stock) Submit(g *Group) error {
	if s.env == nil {
		return errors.New("not started")
	}
	s.enqueue(g, g.Submit)
	return nil
}

// PodReleased is a cluster event (an assigned pod deleted): unschedulable
// pods may fit now.
func (s *stock) PodReleased(g *Group, pod int) error { s.event(g, pod); return nil }

// Release: the pods were already given back one by one.
func (s *stock) Release(*Group) error { return nil }

func (s *stock) Schedule() error { return s.schedule() }

func (s *stock) Wakeup() (float64, bool) { return s.wakeup() }

func backoffNote(b Backoff) string {
	if b.Initial <= 0 {
		return ", no pod back-off"
	}
	return ", pod back-off " + trimFloat(b.Initial) + "-" + trimFloat(b.Max) + "s"
}

// placer is kube-scheduler's pod-by-pod placement over a kubeQueue: the
// stock model, and the quota model once a group is admitted.
type placer struct {
	env   *Env
	view  *nodeView
	q     kubeQueue
	cache shapeCache
}

// newPlacer builds an empty placer; only the queue options of opts count.
func newPlacer(opts StockOptions) placer {
	q := kubeQueue{less: podLessStock, backoff: opts.Backoff, fifo: opts.FIFO}
	if opts.ShuffleRetries {
		q.shuffle = rand.New(rand.NewPCG(opts.ShuffleSeed, shuffleStream))
	}
	return placer{q: q}
}

func (p *placer) start(env *Env) {
	p.env = env
	p.view = newNodeView(env)
}

// enqueue adds a group's pods, in index order, created at ts.
func (p *placer) enqueue(g *Group, ts float64) {
	for i := range g.Spec.Pods {
		if g.PodNode[i] < 0 {
			p.q.add(newQPod(g, i, ts))
		}
	}
}

// event: a pod's release freed resources, so requests that fit nowhere may
// fit now, and unschedulable pods go back to the queue.
func (p *placer) event(g *Group, pod int) {
	p.view.releasePod(g, pod)
	p.cache.reset()
	p.q.event(p.env.Now())
}

// schedule tries every eligible pod once, in queue order. Nothing frees
// resources during the pass, so a pod that fits nowhere cannot fit later in
// the same pass and is not retried before the next event (the back-off
// retries that follow an event fail fast on the shape cache).
func (p *placer) schedule() error {
	if p.env == nil {
		return errors.New("not started")
	}
	now := p.env.Now()
	p.q.promote(now)
	p.q.merge()
	act := p.q.active
	kept := act[:0]
	for _, e := range act {
		if e.lastTried >= now {
			kept = append(kept, e) // tried at this instant already
			continue
		}
		e.state = stOut
		e.lastTried = now
		e.attempts++
		node := -1
		if !p.cache.failsKnown(e.spec) {
			node = p.view.best(e.spec)
		}
		if node < 0 {
			p.cache.add(e.spec)
			p.q.fail(e, now, true)
			continue
		}
		if err := p.env.Bind(e.g, e.pod, node); err != nil {
			return err
		}
		p.view.take(node, e.spec)
		e.bound = true
	}
	clear(act[len(kept):])
	p.q.active = kept
	return nil
}

func (p *placer) wakeup() (float64, bool) { return p.q.wakeup() }
