package match

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/resource"
	"github.com/google/go-cmp/cmp"
)

// podSlots is a pod group's request: n slots of cpu, memory and pods.
func podSlots(n, cpu, mem, dur int64) *jobspec.Jobspec {
	with := []*jobspec.ResourceBuilder{jobspec.R("cpu", cpu)}
	if mem > 0 {
		with = append(with, jobspec.R("memory", mem))
	}
	with = append(with, jobspec.R("pods", 1))
	return jobspec.New(jobspec.Slot(n, "pod").With(with...)).Duration(dur).Obj()
}

// selection is what one selection decided and, when it failed, why;
// Visited is left out, as the count tests fewer vertices than the walk.
type selection struct {
	OK                                                bool
	Claims                                            []claim
	NodesDown, NodesBusy, NodesConstrained, SlotsCons int64
	Short, Totals                                     []Shortfall
	Missing                                           []string
}

func selectOnce(m *Matcher, js *jobspec.Jobspec, now, at int64, off bool) selection {
	m.sc.off = off
	defer func() { m.sc.off = false }()
	r := m.compile(js)
	s := &m.sel
	ok := s.run(r, now, at, js.Duration, false)
	out := selection{OK: ok, Claims: slices.Clone(s.claims), NodesDown: s.ex.NodesDown, NodesBusy: s.ex.NodesBusy,
		NodesConstrained: s.ex.NodesConstrained, SlotsCons: s.ex.SlotsConstrained,
		Short: slices.Clone(s.ex.Short), Totals: slices.Clone(s.ex.Totals), Missing: slices.Clone(s.ex.Missing)}
	if !ok {
		out.Claims = nil
	} else {
		// A successful selection reports its claims only (Match returns
		// no explanation with a placement).
		out = selection{OK: true, Claims: out.Claims}
	}
	return out
}

// TestSlotCountAgreesWithTheWalk drives matchers through random
// allocations, reservations, cancellations and vertices going down, and
// after every step asks random pod-group requests, now and at later
// reservation-probe times, with the counting precheck and without it:
// the answers and explanations must be the same, and the count must have
// settled many of the failures.
func TestSlotCountAgreesWithTheWalk(t *testing.T) {
	specs := []string{
		"cluster[1]->zone[2]->node[24]->{cpu[1]:8000,memory[1]:64,pods[1]:16}",
		"cluster[1]->node[16]->{cpu[1]:4000,memory[1]:32,pods[1]:4,gpu[2]}",
	}
	for _, spec := range specs {
		for _, policy := range []string{"lonode", "first", "hinode", "low"} {
			t.Run(fmt.Sprintf("%s/%s", spec, policy), func(t *testing.T) {
				m := newMatcher(t, spec, policy)
				rng := rand.New(rand.NewPCG(7, uint64(len(spec)+len(policy))))
				nodes := m.g.ByTypeName("node")
				var live []int64
				id, now := int64(0), int64(0)
				compared, counted := 0, m.stats.Counted
				randJob := func() *jobspec.Jobspec {
					return podSlots(1+rng.Int64N(30), []int64{500, 1000, 2000, 4000}[rng.IntN(4)],
						[]int64{0, 2, 4, 8}[rng.IntN(4)], 10+rng.Int64N(1000))
				}
				for step := range 400 {
					switch op := rng.IntN(10); {
					case op < 4:
						id++
						if res, err := m.Match(Allocate, randJob(), id, now); err != nil {
							t.Fatal(err)
						} else if res.OK() {
							live = append(live, id)
						}
					case op < 5:
						id++
						if res, err := m.Match(AllocateOrElseReserve, randJob(), id, now); err != nil {
							t.Fatal(err)
						} else if res.OK() {
							live = append(live, id)
						}
					case op < 8 && len(live) > 0:
						k := rng.IntN(len(live))
						if err := m.Cancel(live[k]); err != nil {
							t.Fatal(err)
						}
						live = slices.Delete(live, k, k+1)
					case op == 8:
						// A node, a pool or (rarely) a zone goes down or up.
						v := nodes[rng.IntN(len(nodes))]
						if rng.IntN(3) == 0 {
							v = m.g.Children(v)[rng.IntN(len(m.g.Children(v)))]
						}
						if rng.IntN(20) == 0 {
							v = m.g.Parent(nodes[rng.IntN(len(nodes))])
						}
						if m.g.Vertex(v).Status == resource.Up {
							_ = m.MarkDown(v)
						} else {
							_ = m.MarkUp(v)
						}
					case op == 9 && step%3 == 0:
						// A whole node held exclusively: the node's own planner.
						id++
						if res, err := m.Match(Allocate, nodesXOf("cpu", 1, 50), id, now); err != nil {
							t.Fatal(err)
						} else if res.OK() {
							live = append(live, id)
						}
					}
					if step%40 == 39 {
						// Everything up again: with a node down the count
						// does not use its node index.
						for v := range int32(m.g.Len()) {
							_ = m.MarkUp(v)
						}
					}
					if step%4 == 3 {
						// Several changes at one instant, so the node
						// index is brought up to date by its dirty list,
						// not only rebuilt when the time moves.
						now += rng.Int64N(20)
					}
					for range 6 {
						js := randJob()
						at := now
						if rng.IntN(2) == 0 {
							at += rng.Int64N(300)
						}
						with := selectOnce(m, js, now, at, false)
						without := selectOnce(m, js, now, at, true)
						if diff := cmp.Diff(without, with, cmp.AllowUnexported(claim{})); diff != "" {
							t.Fatalf("step %d, %s at %d (now %d): with the count (+) and without (-) differ:\n%s",
								step, describeJS(js), at, now, diff)
						}
						compared++
					}
					// The reservation search, with its probe bound and
					// without it, finds the same time and the same nodes.
					js := randJob()
					if step%2 == 1 {
						// One slot more than the nodes hold, though the
						// cluster has the cores: every probe fails.
						cpu := m.g.Vertex(m.g.ByTypeName("cpu")[0]).Size
						js = podSlots(int64(len(nodes))*(cpu/3000)+1, 3000, 0, 10+rng.Int64N(1000))
					}
					r := m.compile(js)
					var found [2]struct {
						at     int64
						ok     bool
						claims []claim
						// what a failed search leaves for ReserveFrom
						busy, down int64
						short      []Shortfall
					}
					for i, off := range []bool{false, true} {
						m.sc.off = off
						at, ok := m.findReservation(r, now, now, js.Duration)
						m.sc.off = false
						found[i].at, found[i].ok = at, ok
						if ok {
							found[i].claims = slices.Clone(m.sel.claims)
						} else {
							ex := &m.sel.ex
							found[i].busy, found[i].down, found[i].short = ex.NodesBusy, ex.NodesDown, slices.Clone(ex.Short)
						}
					}
					if diff := cmp.Diff(found[1], found[0], cmp.AllowUnexported(claim{}, found[0])); diff != "" {
						t.Fatalf("step %d: reservation search for %s with the bound (+) and without (-) differ:\n%s", step, describeJS(js), diff)
					}
				}
				if n := m.stats.Counted - counted; n < int64(compared)/20 {
					t.Fatalf("the count settled %d of %d selections: the test does not exercise it", n, compared)
				}
			})
		}
	}
}

// nodesXOf is node[n] exclusive -> slot[1] -> typ[1].
func nodesXOf(typ string, n, dur int64) *jobspec.Jobspec {
	return jobspec.New(jobspec.R("node", n).Exclusive().With(
		jobspec.Slot(1, "task").With(jobspec.R(typ, 1)))).Duration(dur).Obj()
}

func describeJS(js *jobspec.Jobspec) string {
	r := js.Resources[0]
	return fmt.Sprintf("slot[%d]%v dur %d", r.Count.Min, r.With, js.Duration)
}

// TestSlotIndexFollowsChangesAtOneInstant: the node index must see a node
// freed or filled at the instant it was built for, not only when the time
// moves on.
func TestSlotIndexFollowsChangesAtOneInstant(t *testing.T) {
	m := newMatcher(t, "cluster[1]->node[4]->{cpu[1]:8000,memory[1]:64,pods[1]:16}", "lonode")
	// 500m left on each node: 2,000m in all, so the root's totals pass and
	// the count decides; one slot of 1,000m does not fit.
	fill := func(id int64) func() error {
		return func() error { return allocated(m.Match(Allocate, podSlots(4, 7500, 0, 100), id, 0)) }
	}
	one := podSlots(1, 1000, 0, 100)
	steps := []struct {
		do   func() error
		fits bool
	}{
		{fill(1), false},
		{func() error { return m.Cancel(1) }, true},
		{fill(2), false},
		{func() error { return m.Cancel(2) }, true},
	}
	for i, st := range steps {
		if err := st.do(); err != nil {
			t.Fatal(err)
		}
		with, without := selectOnce(m, one, 0, 0, false), selectOnce(m, one, 0, 0, true)
		if !st.fits && len(with.Short) == 0 {
			t.Fatalf("step %d: the selection failed before the count: %+v", i, with)
		}
		if with.OK != st.fits || without.OK != st.fits {
			t.Fatalf("step %d: fits %v with the count, %v without, want %v", i, with.OK, without.OK, st.fits)
		}
	}
}
