package match

import (
	"fmt"
	"sync"
	"testing"

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
