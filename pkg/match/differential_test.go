package match

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// The differential test drives the matcher and a deliberately naive model of
// the same cluster through random sequences of allocations, cancellations
// and node failures, and checks after every step that both agree on
// feasibility and that every placement has exactly the requested counts
// within what the model says was free.
//
// The model knows nothing of graphs, policies or aggregates: per node it
// keeps free cores and GPUs, up/down, and which jobs hold it whole; its
// feasibility rules are the definitions of the three request shapes.

type modelNode struct {
	name      string
	cores     int64
	gpus      int64
	freeCores int64
	freeGPUs  int64
	up        bool
	jobs      int // jobs holding anything on the node
	vertex    int32
}

type shape struct {
	kind      int   // 0: slot[n]->{core,gpu}; 1: node[k]->slot[n]->{core,gpu}; 2: node[k] exclusive
	k, n      int64 // nodes, slots
	c, g      int64 // cores and gpus per slot
	jobspec   *jobspec.Jobspec
	describes string
}

func (s shape) slotsOn(n *modelNode, free bool) int64 {
	fc, fg := n.freeCores, n.freeGPUs
	if !free {
		fc, fg = n.cores, n.gpus
	}
	slots := int64(1 << 30)
	if s.c > 0 {
		slots = min(slots, fc/s.c)
	}
	if s.g > 0 {
		slots = min(slots, fg/s.g)
	}
	return slots
}

// feasible applies the shape's definition to the model; empty=true asks
// about the empty, all-up cluster.
func (s shape) feasible(nodes []*modelNode, empty bool) bool {
	var total, qualifying int64
	for _, n := range nodes {
		if !empty && !n.up {
			continue
		}
		slots := s.slotsOn(n, !empty)
		switch s.kind {
		case 0:
			total += slots
		case 1:
			if slots >= s.n {
				qualifying++
			}
		case 2:
			if (empty || n.jobs == 0) && s.slotsOn(n, false) >= s.n {
				qualifying++
			}
		}
	}
	if s.kind == 0 {
		return total >= s.n
	}
	return qualifying >= s.k
}

func randomShape(r *rand.Rand) shape {
	s := shape{kind: r.IntN(3), k: 1 + r.Int64N(3), n: 1 + r.Int64N(3), c: r.Int64N(4), g: r.Int64N(2)}
	if s.c == 0 && s.g == 0 {
		s.c = 1
	}
	var with []*jobspec.ResourceBuilder
	if s.c > 0 {
		with = append(with, jobspec.R("core", s.c))
	}
	if s.g > 0 {
		with = append(with, jobspec.R("gpu", s.g))
	}
	slot := jobspec.Slot(s.n, "task").With(with...)
	switch s.kind {
	case 0:
		s.jobspec = jobspec.New(slot).Duration(100).Obj()
	case 1:
		s.jobspec = jobspec.New(jobspec.R("node", s.k).With(slot)).Duration(100).Obj()
	case 2:
		s.jobspec = jobspec.New(jobspec.R("node", s.k).Exclusive().With(slot)).Duration(100).Obj()
	}
	s.describes = fmt.Sprintf("kind %d: node %d slot %d core %d gpu %d", s.kind, s.k, s.n, s.c, s.g)
	return s
}

func TestDifferentialAgainstModel(t *testing.T) {
	for _, policy := range PolicyNames() {
		if policy == "firstnodex" || policy == "lonodex" || policy == "hinodex" {
			continue // node-exclusive policies change the request; covered below
		}
		t.Run(policy, func(t *testing.T) {
			outcomes := map[Status]int{}
			for seed := uint64(1); seed <= 40; seed++ {
				runDifferential(t, policy, seed, outcomes)
			}
			// The random walk must exercise every outcome, or it proves little.
			for _, st := range []Status{Allocated, Busy, Unsatisfiable} {
				if outcomes[st] < 20 {
					t.Errorf("only %d %s outcomes in the random walk: %v", outcomes[st], st, outcomes)
				}
			}
		})
	}
}

func runDifferential(t *testing.T, policy string, seed uint64, outcomes map[Status]int) {
	r := rand.New(rand.NewPCG(seed, 7))
	nNodes := 1 + r.IntN(4)
	sockets, coresPer, gpusPer := 1+r.IntN(2), 1+r.IntN(4), r.IntN(2)
	spec := fmt.Sprintf("cluster[1]->node[%d]->socket[%d]->{core[%d],gpu[%d]}", nNodes, sockets, coresPer, gpusPer)
	if gpusPer == 0 {
		spec = fmt.Sprintf("cluster[1]->node[%d]->socket[%d]->core[%d]", nNodes, sockets, coresPer)
	}
	g, err := resource.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(g, Options{Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*modelNode
	byName := map[string]*modelNode{}
	for _, v := range g.ByTypeName("node") {
		n := &modelNode{name: g.Vertex(v).DisplayName(), cores: int64(sockets * coresPer), gpus: int64(sockets * gpusPer), up: true, vertex: v}
		n.freeCores, n.freeGPUs = n.cores, n.gpus
		nodes = append(nodes, n)
		byName[n.name] = n
	}
	held := map[int64][]NodeUsage{}
	var live []int64
	nextID := int64(1)
	for step := 0; step < 60; step++ {
		ctx := fmt.Sprintf("seed %d step %d %s", seed, step, spec)
		switch op := r.IntN(10); {
		case op < 6:
			s := randomShape(r)
			want := s.feasible(nodes, false)
			wantSat := s.feasible(nodes, true)
			res, err := m.Match(AllocateWithSatisfiability, s.jobspec, nextID, 0)
			if err != nil {
				t.Fatalf("%s: %v", ctx, err)
			}
			outcomes[res.Status]++
			got := res.Status == Allocated
			if got != want {
				t.Fatalf("%s: %s: matcher %s (%s), model feasible=%v", ctx, s.describes, res.Status, res.Reason, want)
			}
			if !got {
				if (res.Status == Unsatisfiable) != !wantSat {
					t.Fatalf("%s: %s: matcher %s, model satisfiable=%v", ctx, s.describes, res.Status, wantSat)
				}
				nextID++
				continue
			}
			checkCounts(t, ctx, s, res.Nodes, byName)
			held[nextID] = res.Nodes
			live = append(live, nextID)
			nextID++
		case op < 9 && len(live) > 0:
			i := r.IntN(len(live))
			id := live[i]
			live = append(live[:i], live[i+1:]...)
			if err := m.Cancel(id); err != nil {
				t.Fatalf("%s: cancel %d: %v", ctx, id, err)
			}
			for _, u := range held[id] {
				n := byName[u.Name]
				n.freeCores += u.Core
				n.freeGPUs += u.GPU
				n.jobs--
			}
			delete(held, id)
		default:
			n := nodes[r.IntN(len(nodes))]
			n.up = !n.up
			var err error
			if n.up {
				err = m.MarkUp(n.vertex)
			} else {
				err = m.MarkDown(n.vertex)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, id := range live {
		if err := m.Cancel(id); err != nil {
			t.Fatal(err)
		}
	}
	if !m.idle() {
		t.Fatalf("seed %d: state not empty after cancelling every job", seed)
	}
}

// checkCounts verifies a placement against the model and applies it.
func checkCounts(t *testing.T, ctx string, s shape, got []NodeUsage, byName map[string]*modelNode) {
	t.Helper()
	var cores, gpus int64
	for _, u := range got {
		n := byName[u.Name]
		if n == nil {
			t.Fatalf("%s: placement on unknown node %q", ctx, u.Name)
		}
		if !n.up {
			t.Fatalf("%s: placement on down node %s", ctx, u.Name)
		}
		if u.Core > n.freeCores || u.GPU > n.freeGPUs {
			t.Fatalf("%s: %s over-committed: took %d cores %d gpus, %d/%d free", ctx, u.Name, u.Core, u.GPU, n.freeCores, n.freeGPUs)
		}
		if s.kind == 2 {
			if !u.Whole || n.jobs != 0 || u.Core != n.cores || u.GPU != n.gpus {
				t.Fatalf("%s: exclusive node %s not held whole: %+v (jobs on it %d)", ctx, u.Name, u, n.jobs)
			}
		}
		n.freeCores -= u.Core
		n.freeGPUs -= u.GPU
		n.jobs++
		cores += u.Core
		gpus += u.GPU
	}
	switch s.kind {
	case 0:
		if cores != s.n*s.c || gpus != s.n*s.g {
			t.Fatalf("%s: %s: got %d cores %d gpus, want %d and %d", ctx, s.describes, cores, gpus, s.n*s.c, s.n*s.g)
		}
	case 1:
		if int64(len(got)) != s.k || cores != s.k*s.n*s.c || gpus != s.k*s.n*s.g {
			t.Fatalf("%s: %s: got %d nodes %d cores %d gpus", ctx, s.describes, len(got), cores, gpus)
		}
	case 2:
		if int64(len(got)) != s.k {
			t.Fatalf("%s: %s: got %d nodes", ctx, s.describes, len(got))
		}
	}
}
