package sim

import (
	"container/heap"
	"math"
	"slices"
	"strconv"
)

// This file holds what the three peer models (stock.go, cosched.go,
// quota.go) share: the per-node view of free resources, kube-scheduler's
// NodeResourcesFit filter and LeastAllocated score, and a reduced
// kube-scheduler scheduling queue (ordering, unschedulable pods waiting for
// a cluster event, per-pod back-off).

// maxNodeScore is kube-scheduler's framework.MaxNodeScore.
const maxNodeScore = 100

// nodeView is a model's picture of the cluster: per node, the free
// resources the env reports (allocatable minus bound pods) minus what the
// model holds without binding (Coscheduling's assumed pods, waiting at
// Permit). Only the env can bind, so the env keeps the no-over-commit
// invariant; the view only has to be at least as strict, which it is
// because it counts the held pods too. It is kept up to date incrementally
// (take on bind or assume, give on release or forget), so a node scan is a
// tight loop over one slice: at the scale case a scan covers 1,000 nodes.
type nodeView struct {
	alloc []PodSpec // allocatable per node
	free  []PodSpec
}

func newNodeView(env *Env) *nodeView {
	nodes := env.Cluster().Nodes
	v := &nodeView{alloc: make([]PodSpec, len(nodes)), free: make([]PodSpec, len(nodes))}
	for i, n := range nodes {
		v.alloc[i] = PodSpec{CPU: n.CPU, Memory: n.Memory, GPU: n.GPU}
		v.free[i] = env.Free(i)
	}
	return v
}

// take: a pod was bound or assumed on the node.
func (v *nodeView) take(node int, p PodSpec) {
	f := &v.free[node]
	f.CPU -= p.CPU
	f.Memory -= p.Memory
	f.GPU -= p.GPU
}

// give: a pod on the node was released or forgotten.
func (v *nodeView) give(node int, p PodSpec) {
	f := &v.free[node]
	f.CPU += p.CPU
	f.Memory += p.Memory
	f.GPU += p.GPU
}

// releasePod gives back one released pod.
func (v *nodeView) releasePod(g *Group, pod int) {
	if node := g.PodNode[pod]; node >= 0 {
		v.give(node, g.Spec.Pods[pod])
	}
}

// best is kube-scheduler's Filter + Score for one pod: among the nodes
// where the request fits the free resources (NodeResourcesFit), the one
// with the highest LeastAllocated score; -1 when none fits.
//
// Ties go to the lowest node index. The real scheduler picks uniformly at
// random among the top-scoring nodes; a fixed rule keeps runs
// reproducible. Every node is scored: percentageOfNodesToScore only cuts in
// above 100 nodes, and the experiments' clusters have 8.
//
// The other default score plugins (BalancedAllocation, TaintToleration,
// NodeAffinity, PodTopologySpread, InterPodAffinity, ImageLocality) give
// every node the same score on these clusters (no taints, affinities or
// spread constraints; identical images), so they cannot change the choice
// and are left out.
func (v *nodeView) best(p PodSpec) int {
	bestNode, bestScore := -1, int64(math.MinInt64)
	for n := range v.free {
		f := &v.free[n]
		if p.CPU > f.CPU || p.Memory > f.Memory || p.GPU > f.GPU {
			continue
		}
		if s := leastAllocatedScore(v.alloc[n], *f, p); s > bestScore {
			bestNode, bestScore = n, s
		}
	}
	return bestNode
}

// leastAllocatedScore is NodeResourcesFit's default scoring strategy,
// LeastAllocated, with its default resources cpu and memory at weight 1:
// per resource (allocatable - requested - request) * 100 / allocatable in
// integer arithmetic as upstream, then the weighted mean, truncated. A pod
// that requests no memory is scored on cpu alone: the workloads' pods set
// no memory request, and counting memory would add the same ~constant to
// every node of a homogeneous cluster (upstream substitutes a 200 MB
// default request for scoring).
func leastAllocatedScore(alloc, free, p PodSpec) int64 {
	var sum, weights int64
	add := func(capacity, freeAfter int64) {
		weights++
		if capacity <= 0 {
			return // upstream scores a resource with no capacity 0
		}
		sum += freeAfter * maxNodeScore / capacity
	}
	add(alloc.CPU, free.CPU-p.CPU)
	if p.Memory > 0 {
		add(alloc.Memory, free.Memory-p.Memory)
	}
	return sum / weights
}

// Backoff is kube-scheduler's per-pod back-off: after a failed attempt a
// pod is not retried before Initial * 2^(attempts-1) seconds, capped at Max
// (podInitialBackoffSeconds 1, podMaxBackoffSeconds 10 by default).
// Zero Initial turns back-off off.
type Backoff struct {
	Initial, Max float64
}

// DefaultBackoff is kube-scheduler's default pod back-off.
var DefaultBackoff = Backoff{Initial: 1, Max: 10}

func (b Backoff) after(attempts int) float64 {
	if b.Initial <= 0 || attempts <= 0 {
		return 0
	}
	d := b.Initial
	for i := 1; i < attempts && d < b.Max; i++ {
		d *= 2
	}
	if b.Max > 0 && d > b.Max {
		d = b.Max
	}
	return d
}

// podState is where a pod is in a model's scheduling queue.
type podState uint8

const (
	stOut     podState = iota // popped: being tried, assumed, or bound
	stActive                  // activeQ: will be tried in queue order
	stPool                    // unschedulable pool: waits for a cluster event
	stBackoff                 // backoffQ: waits for its back-off to end
)

// qPod is one unbound pod in a model's scheduling queue.
type qPod struct {
	g    *Group
	pod  int
	spec PodSpec
	// ts is the pod's queue timestamp: when it entered the queue (its
	// creation: group arrival, or admission for the quota model), refreshed
	// to the failure time when it re-enters after a failed attempt (as
	// upstream AddUnschedulableIfNotPresent does). seq orders pods queued
	// at the same instant in the order they were queued (upstream's
	// timestamps differ by the microseconds between two attempts).
	ts  float64
	seq uint64

	attempts int
	// readyAt is when the pod's back-off ends (the time of its last
	// failure plus Backoff.after(attempts)).
	readyAt float64
	// lastTried is the time of the last attempt; a pod is tried at most
	// once per instant, which is what keeps a same-time retry loop from
	// spinning when back-off is off.
	lastTried float64
	state     podState
	bound     bool

	boIdx   int // index in the back-off heap, -1 if not there
	lateIdx int // index in coscheduling's mid-pass heap, -1 if not there
	// listed: the pod's slot in the sorted active list is live (merge sets
	// it; coscheduling clears it when it pops the pod or moves it to its
	// mid-pass heap, leaving a stale slot behind).
	listed bool
}

func newQPod(g *Group, pod int, ts float64) *qPod {
	return &qPod{g: g, pod: pod, spec: g.Spec.Pods[pod], ts: ts, readyAt: ts,
		lastTried: math.Inf(-1), boIdx: -1, lateIdx: -1}
}

// kubeQueue is kube-scheduler's scheduling queue reduced to what decides
// the order and timing of attempts: the active queue in QueueSort order,
// the unschedulable pool that waits for a cluster event, and back-off.
// The periodic flush of pods left unschedulable for 5 minutes is not
// modelled: it cannot change a stuck state, and the stall window (default
// 300 s) would end the run first.
//
// Only pods that can be tried are visited: a pass costs the number of
// eligible pods, and a cluster event the size of the pool, never the whole
// backlog for nothing (the scale case queues tens of thousands of pods).
type kubeQueue struct {
	less    func(a, b *qPod) bool
	backoff Backoff
	// fifo keeps every pod's creation timestamp instead of refreshing it
	// on failure (an option of the stock model, not upstream behaviour).
	fifo bool
	seq  uint64

	active   []*qPod // in QueueSort order
	incoming []*qPod // becoming active; merged into active by merge
	pool     []*qPod // may hold stale entries (state != stPool), skipped
	bo       boHeap
	// sink, if set, receives pods that become active (coscheduling's
	// mid-pass heap) instead of incoming.
	sink func(p *qPod)
}

func (q *kubeQueue) cmp(a, b *qPod) int {
	switch {
	case q.less(a, b):
		return -1
	case q.less(b, a):
		return 1
	}
	return 0
}

// add queues a new pod, active at once.
func (q *kubeQueue) add(p *qPod) {
	q.seq++
	p.seq = q.seq
	q.toActive(p)
}

func (q *kubeQueue) toActive(p *qPod) {
	p.state = stActive
	if q.sink != nil {
		q.sink(p)
		return
	}
	q.incoming = append(q.incoming, p)
}

// unqueue takes a pod out of the pool or back-off (for activation).
func (q *kubeQueue) unqueue(p *qPod) {
	if p.state == stBackoff {
		heap.Remove(&q.bo, p.boIdx)
	}
	p.state = stOut // a stale pool entry is skipped
}

// fail records a failed attempt. The pod's timestamp is refreshed; it goes
// to the unschedulable pool if waitEvent, else straight to back-off
// (kube-scheduler sends a pod to back-off rather than the pool when a move
// request arrived during its scheduling cycle, as happens to pods rejected
// at Permit).
func (q *kubeQueue) fail(p *qPod, now float64, waitEvent bool) {
	p.readyAt = now + q.backoff.after(p.attempts)
	if !q.fifo {
		q.seq++
		p.ts, p.seq = now, q.seq
	}
	switch {
	case waitEvent:
		p.state = stPool
		q.pool = append(q.pool, p)
	default:
		q.wait(p, p.readyAt, now)
	}
}

// wait puts a pod in back-off until t (active at once if t <= now; the
// lastTried guard keeps it from a second try at this instant).
func (q *kubeQueue) wait(p *qPod, t, now float64) {
	p.readyAt = t
	if t <= now {
		q.toActive(p)
		return
	}
	p.state = stBackoff
	heap.Push(&q.bo, p)
}

// event is a cluster event (MoveAllToActiveOrBackoffQueue): every pod in
// the unschedulable pool goes to the active queue, or to back-off if its
// back-off has not ended.
func (q *kubeQueue) event(now float64) {
	moved := q.pool[:0]
	for _, p := range q.pool {
		if p.state == stPool {
			p.state = stOut
			moved = append(moved, p)
		}
	}
	for _, p := range moved {
		q.wait(p, p.readyAt, now)
	}
	clear(q.pool)
	q.pool = q.pool[:0]
}

// promote moves pods whose back-off has ended to the active queue.
func (q *kubeQueue) promote(now float64) {
	for len(q.bo) > 0 && q.bo[0].t <= now {
		q.toActive(heap.Pop(&q.bo).(*qPod))
	}
}

// merge brings incoming pods into the sorted active list.
func (q *kubeQueue) merge() {
	if len(q.incoming) == 0 {
		for _, p := range q.active {
			p.listed = true
		}
		return
	}
	slices.SortFunc(q.incoming, q.cmp)
	out := make([]*qPod, 0, len(q.active)+len(q.incoming))
	a, b := q.active, q.incoming
	for len(a) > 0 && len(b) > 0 {
		if q.less(b[0], a[0]) {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	out = append(append(out, a...), b...)
	for _, p := range out {
		p.listed = true
	}
	clear(q.incoming)
	q.incoming = q.incoming[:0]
	q.active = out
}

// wakeup is the earliest end of a back-off.
func (q *kubeQueue) wakeup() (float64, bool) {
	if len(q.bo) == 0 {
		return math.Inf(1), false
	}
	return q.bo[0].t, true
}

// boHeap orders pods in back-off by the end of their back-off, then by
// queueing order. Entries carry their keys by value, so comparisons do not
// chase pointers: at the scale case this heap is the hottest structure.
type boHeap []boEntry

type boEntry struct {
	t   float64
	seq uint64
	p   *qPod
}

func (h boHeap) Len() int { return len(h) }
func (h boHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}
func (h boHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].p.boIdx, h[j].p.boIdx = i, j
}
func (h *boHeap) Push(x any) {
	p := x.(*qPod)
	p.boIdx = len(*h)
	*h = append(*h, boEntry{t: p.readyAt, seq: p.seq, p: p})
}
func (h *boHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = boEntry{}
	*h = old[:len(old)-1]
	e.p.boIdx = -1
	return e.p
}

// shapeCache remembers requests that fit no node since resources last
// grew (a release, assumed pods forgotten): until then, a pod that requests
// at least as much of every resource cannot fit either, so the node scan is
// skipped. Binding and assuming only shrink free resources, so the entries
// stay true. It only saves time; decisions are the same.
type shapeCache []PodSpec

func (c *shapeCache) failsKnown(p PodSpec) bool {
	for _, s := range *c {
		if p.CPU >= s.CPU && p.Memory >= s.Memory && p.GPU >= s.GPU {
			return true
		}
	}
	return false
}

// add records a failing request. Entries that request at least as much of
// everything are dropped (the new one covers them), so the cache stays a
// small set of minimal failing requests.
func (c *shapeCache) add(p PodSpec) {
	*c = slices.DeleteFunc(*c, func(s PodSpec) bool {
		return s.CPU >= p.CPU && s.Memory >= p.Memory && s.GPU >= p.GPU
	})
	if len(*c) < 16 {
		*c = append(*c, p)
	}
}

func (c *shapeCache) reset() { *c = (*c)[:0] }

// podLessStock is kube-scheduler's default QueueSort (PrioritySort):
// priority descending, then the queue timestamp; seq breaks ties in
// queueing order (for pods created together: group index, then pod index).
// Because a failed pod's timestamp is refreshed, a pod that keeps failing
// drifts behind pods that have waited since an earlier time without being
// retried (still in back-off at the last event, or newly created): the
// retry order after a release is not strictly FIFO.
func podLessStock(a, b *qPod) bool {
	if pa, pb := a.g.Spec.Priority, b.g.Spec.Priority; pa != pb {
		return pa > pb
	}
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	return a.seq < b.seq
}

// fmtCPU prints millicores as cores ("40", "2.5").
func fmtCPU(m int64) string {
	if m%1000 == 0 {
		return strconv.FormatInt(m/1000, 10)
	}
	return trimFloat(float64(m) / 1000)
}

// trimFloat prints a number without trailing zeros ("10", "0.5").
func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
