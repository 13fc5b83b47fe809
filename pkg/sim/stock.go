package sim

import (
	"container/heap"
	"errors"
)

// The stock model: kube-scheduler with its default profile and no gang
// support (docs/reference/experiments.md 5.3 "default";
// docs/reference/peers.md 2).
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
// Each attempt takes StockOptions.AttemptSeconds (DefaultAttemptSeconds),
// one pod after another, in queue order. This is what clogs the measured
// runs: when a finished job's pods free their nodes one by one, each freed
// node goes to whichever pod the scheduler happens to try next, wherever
// its pass through hundreds of waiting pods has got to, not to the oldest
// waiting gang; so the nodes end up spread over gangs none of which can
// complete. With instantaneous attempts (AttemptSeconds 0, each Schedule
// call trying every eligible pod once at the event's instant) the oldest
// gang always wins and the model never clogs those runs.
// docs/design/002-simulator.md has the sweep. Bound pods hold their
// resources until the whole group is released; the env starts a group
// when its last pod binds.

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
	// AttemptSeconds is how long one scheduling attempt takes; attempts
	// run one at a time. 0 makes scheduling instantaneous: every eligible
	// pod is tried at the instant of each event.
	AttemptSeconds float64
	// Preemption turns on pod-by-pod preemption (stock_preempt.go): a pod
	// that fits nowhere evicts pods of lower priority on one node, without
	// regard to their groups. EvictionGrace is the seconds from an
	// eviction until the pod is gone (0: DefaultStockEvictionGrace;
	// negative: at once, which is a millisecond here).
	Preemption    bool
	EvictionGrace float64
}

// DefaultAttemptSeconds is the stock model's time per scheduling attempt:
// a few milliseconds, as kube-scheduler takes for a pod on a small
// cluster. The run8 and run10 outcomes are the same from 3 to 30 ms.
const DefaultAttemptSeconds = 0.005

// NewStock returns the model of kube-scheduler without gangs, with
// kube-scheduler's default pod back-off and DefaultAttemptSeconds.
func NewStock() Scheduler {
	return NewStockWith(StockOptions{Backoff: DefaultBackoff, AttemptSeconds: DefaultAttemptSeconds})
}

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
	c := "model of kube-scheduler: pod by pod, LeastAllocated, no gangs" + backoffNote(s.opts.Backoff) + attemptNote(s.opts.AttemptSeconds)
	if s.opts.FIFO {
		c += ", FIFO retries"
	}
	if s.opts.Preemption {
		c += ", pod-by-pod preemption (evicted pods gone in " + trimFloat(newStockPreemptor(s.opts.EvictionGrace, 0).grace) + "s)"
	}
	return c + gpuCountNote(s.env)
}

// Start resets all state, so a model can be run more than once.
func (s *stock) Start(env *Env) error {
	s.placer = newPlacer(s.opts)
	s.start(env)
	if s.opts.Preemption {
		s.pre = newStockPreemptor(s.opts.EvictionGrace, len(env.Cluster().Nodes))
	}
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
func (s *stock) PodReleased(g *Group, pod int) error {
	if s.pre != nil {
		s.pre.left(g.PodNode[pod], g, pod)
	}
	s.event(g, pod)
	return nil
}

// PodEvicted: an evicted pod is gone, a cluster event; the pod made in
// its place joins the queue, created now.
func (s *stock) PodEvicted(g *Group, pod, node int) error {
	if s.pre != nil {
		s.pre.left(node, g, pod)
	}
	s.view.give(node, g.Spec.Pods[pod])
	s.cache.reset()
	s.q.event(s.env.Now())
	s.q.add(newQPod(g, pod, s.env.Now()))
	return nil
}

// Release: the pods were already given back one by one.
func (s *stock) Release(*Group) error { return nil }

func (s *stock) Schedule() error { return s.schedule() }

func (s *stock) Wakeup() (float64, bool) { return s.wakeup() }

func attemptNote(a float64) string {
	if a <= 0 {
		return ", instantaneous attempts"
	}
	return ", " + trimFloat(a*1000) + " ms per attempt"
}

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
	// attempt > 0: one attempt takes that long; next is when the
	// scheduler can start the next one. idle: the last Schedule call left
	// nothing to try (the env calls again at the next event or back-off
	// end, so the scheduler idled until then).
	attempt float64
	next    float64
	idle    bool
	// ready holds the active pods in timed mode: a heap in queue order,
	// since attempts take pods one at a time while others keep arriving.
	ready readyHeap
	// pre is the stock model's pod-by-pod preemption; nil: off.
	pre *stockPreemptor
}

// newPlacer builds an empty placer; only the queue options of opts count.
func newPlacer(opts StockOptions) placer {
	q := kubeQueue{less: podLessStock, backoff: opts.Backoff, fifo: opts.FIFO}
	return placer{q: q, attempt: opts.AttemptSeconds, idle: true}
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
	if p.attempt > 0 {
		return p.scheduleTimed(now)
	}
	p.q.promote(now)
	p.q.merge()
	act := p.q.active
	kept := act[:0]
	for _, e := range act {
		if e.lastTried >= now {
			kept = append(kept, e) // tried at this instant already
			continue
		}
		if err := p.try(e, now); err != nil {
			return err
		}
	}
	clear(act[len(kept):])
	p.q.active = kept
	return nil
}

func (p *placer) wakeup() (float64, bool) {
	w, ok := p.q.wakeup()
	if p.attempt > 0 && (len(p.ready) > 0 || len(p.q.incoming) > 0) {
		return min(w, p.next), true
	}
	return w, ok
}

// scheduleTimed runs the attempts due by now, one pod every p.attempt
// seconds, each at its own time: a pod freed capacity goes to whichever pod
// the scheduler tries next, wherever the pass through the queue has got
// to, not to the oldest waiting pod.
func (p *placer) scheduleTimed(now float64) error {
	if p.idle {
		p.next = max(p.next, now)
	}
	for {
		p.q.promote(p.next)
		for _, e := range p.q.incoming {
			heap.Push(&p.ready, e)
		}
		clear(p.q.incoming)
		p.q.incoming = p.q.incoming[:0]
		p.idle = len(p.ready) == 0
		if p.idle || p.next > now {
			return nil
		}
		t := p.next
		p.next = t + p.attempt
		if err := p.try(heap.Pop(&p.ready).(*qPod), t); err != nil {
			return err
		}
	}
}

// try is one scheduling attempt for e at time t: bound to the best node,
// or back to the queue's back-off when none fits.
func (p *placer) try(e *qPod, t float64) error {
	e.state = stOut
	e.lastTried = t
	e.attempts++
	node, was := -1, -1
	if p.pre != nil {
		// A nominated pod takes its node if it fits there now.
		if was = p.pre.unnominate(p, e); was >= 0 && Fits(p.view.free[was], e.spec) {
			node = was
		}
	}
	if node < 0 && !p.cache.failsKnown(e.spec) {
		node = p.view.best(e.spec)
	}
	if node < 0 {
		p.cache.add(e.spec)
		if p.pre != nil {
			if err := p.pre.preempt(p, e, was); err != nil {
				return err
			}
		}
		p.q.fail(e, t, true)
		return nil
	}
	if err := p.env.Bind(e.g, e.pod, node); err != nil {
		return err
	}
	p.view.take(node, e.spec)
	e.bound = true
	if p.pre != nil {
		p.pre.bound(node, e.g, e.pod, p.env.Now())
	}
	return nil
}

// readyHeap orders active pods by podLessStock.
type readyHeap []*qPod

func (h readyHeap) Len() int           { return len(h) }
func (h readyHeap) Less(i, j int) bool { return podLessStock(h[i], h[j]) }
func (h readyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *readyHeap) Push(x any)        { *h = append(*h, x.(*qPod)) }
func (h *readyHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
