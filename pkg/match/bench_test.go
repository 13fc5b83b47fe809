package match

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// Benchmarks on Fluxion's benchmark shape (docs/reference/fluxion.md 11.2).
// Each reports ns per match; compare sizes within one run (the ratio between
// N = 128 and N = 16384 shows how a policy scales) rather than across
// machines.

var benchGraphs sync.Map // nodes -> *resource.Graph

func benchGraph(b *testing.B, nodes int) *resource.Graph {
	if g, ok := benchGraphs.Load(nodes); ok {
		return g.(*resource.Graph)
	}
	g, err := resource.Generate(fmt.Sprintf("cluster[1]->node[%d]->socket[2]->{core[16],gpu[2]}", nodes))
	if err != nil {
		b.Fatal(err)
	}
	benchGraphs.Store(nodes, g)
	return g
}

// benchMatches places jobs until the machine is full, then starts over on a
// fresh matcher, so every timed match is a successful placement.
func benchMatches(b *testing.B, nodes int, policy string, op Op, js *jobspec.Jobspec, prefill func(*Matcher)) {
	g := benchGraph(b, nodes)
	var m *Matcher
	fresh := func() {
		var err error
		m, err = New(g, Options{Policy: policy})
		if err != nil {
			b.Fatal(err)
		}
		if prefill != nil {
			prefill(m)
		}
	}
	b.StopTimer()
	fresh()
	b.StartTimer()
	id := int64(1 << 20)
	for b.Loop() {
		id++
		res, err := m.Match(op, js, id, 0)
		if err != nil {
			b.Fatal(err)
		}
		if !res.OK() {
			b.StopTimer()
			fresh()
			b.StartTimer()
		}
	}
}

var benchSizes = []int{128, 16384}

func BenchmarkMatch(b *testing.B) {
	core1 := slotCores(1, 1, 3600)
	node1x := nodesX(1, 3600)
	node16x := nodesX(16, 3600)
	node1 := jobspec.New(jobspec.R("node", 1).With(jobspec.Slot(1, "task").With(jobspec.R("core", 1)))).Duration(3600).Obj()
	fillNodes := func(m *Matcher) {
		for i := range m.g.ByTypeName("node") {
			if res, err := m.Match(Allocate, node1x, int64(i+1), 0); err != nil || !res.OK() {
				panic(fmt.Sprint("prefill failed: ", err, res))
			}
		}
	}
	cases := []struct {
		name    string
		policy  string
		op      Op
		js      *jobspec.Jobspec
		prefill func(*Matcher)
	}{
		{"first/core1", "first", Allocate, core1, nil},
		{"first/node1x", "first", Allocate, node1x, nil},
		{"first/node16x", "first", Allocate, node16x, nil},
		{"low/core1", "low", Allocate, core1, nil},
		{"lonode/core1", "lonode", Allocate, core1, nil},
		{"lonodex/node1", "lonodex", Allocate, node1, nil},
		{"first/reserve-node1x-full", "first", AllocateOrElseReserve, node1x, fillNodes},
	}
	for _, c := range cases {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/N=%d", c.name, n), func(b *testing.B) {
				benchMatches(b, n, c.policy, c.op, c.js, c.prefill)
			})
		}
	}
}

func BenchmarkNewMatcher(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			g := benchGraph(b, n)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := New(g, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBusyPodGroup is the match that dominates a long queue: a pod
// group that does not fit now, on 1,000 nodes of 32 cores. Each iteration
// matches it three ways: walking the graph (no precheck), counting slots
// node by node, and counting with the node index; it reports the three
// times and the walk's time over each count's, so the gain is read from
// one run on one machine. Two cases: every node has 3 cores left (the
// index reads every node: 3 cores may hold 4), and every node has 1 core
// left (the index reads none). In both the cluster has enough cores in
// total, so the match gets past the root's totals.
func BenchmarkBusyPodGroup(b *testing.B) {
	for _, c := range []struct {
		name string
		fill func(m *Matcher) error
	}{
		{"3-cores-left-everywhere", func(m *Matcher) error {
			return allocated(m.Match(Allocate, podSlots(1000, 29000, 1024, 3600), 1, 0))
		}},
		{"1-core-left-everywhere", func(m *Matcher) error {
			return allocated(m.Match(Allocate, podSlots(1000, 31000, 1024, 3600), 1, 0))
		}},
	} {
		b.Run(c.name, func(b *testing.B) { benchBusy(b, c.fill) })
	}
}

func allocated(res *Result, err error) error {
	if err != nil {
		return err
	}
	if res.Status != Allocated {
		return fmt.Errorf("prefill: %s", res.Reason)
	}
	return nil
}

func benchBusy(b *testing.B, fill func(m *Matcher) error) {
	g, err := resource.Generate("cluster[1]->node[1000]->{cpu[1]:32000,memory[1]:131072,pods[1]:110}")
	if err != nil {
		b.Fatal(err)
	}
	m, err := New(g, Options{Policy: "lonode"})
	if err != nil {
		b.Fatal(err)
	}
	if err := fill(m); err != nil {
		b.Fatal(err)
	}
	busy := podSlots(64, 4000, 2048, 600)
	// ways: the walk, the count without the index, the count with it.
	var took [3]time.Duration
	match := func(way int) *Result {
		m.sc.off, m.sc.noIndex = way == 0, way == 1
		start := time.Now()
		res, err := m.Match(Allocate, busy, 100, 10)
		took[way] += time.Since(start)
		m.sc.off, m.sc.noIndex = false, false
		if err != nil || res.Status != Busy {
			b.Fatal("want Busy: ", err, res)
		}
		return res
	}
	for b.Loop() {
		walked, counted, indexed := match(0), match(1), match(2)
		if counted.Reason != walked.Reason || indexed.Reason != walked.Reason {
			b.Fatalf("reasons differ: %q (walk), %q (count), %q (index)", walked.Reason, counted.Reason, indexed.Reason)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(took[0].Nanoseconds())/n, "walk-ns/match")
	b.ReportMetric(float64(took[1].Nanoseconds())/n, "count-ns/match")
	b.ReportMetric(float64(took[2].Nanoseconds())/n, "index-ns/match")
	b.ReportMetric(float64(took[0])/float64(took[1]), "walk/count")
	b.ReportMetric(float64(took[0])/float64(took[2]), "walk/index")
}
