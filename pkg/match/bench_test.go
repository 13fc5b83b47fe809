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
// group that does not fit now, on 1,000 nodes of 32 cores that each have
// 3 cores left (3,000 slots of 1 core, none of 4). Each iteration matches
// it once with the counting precheck and once walking the graph, and
// reports both times and their ratio (walk/count), so the gain is read
// from one run on one machine.
func BenchmarkBusyPodGroup(b *testing.B) {
	g, err := resource.Generate("cluster[1]->node[1000]->{cpu[1]:32000,memory[1]:131072,pods[1]:110}")
	if err != nil {
		b.Fatal(err)
	}
	m, err := New(g, Options{Policy: "lonode"})
	if err != nil {
		b.Fatal(err)
	}
	if res, err := m.Match(Allocate, podSlots(1000, 29000, 1024, 3600), 1, 0); err != nil || res.Status != Allocated {
		b.Fatal("prefill failed: ", err, res)
	}
	busy := podSlots(64, 4000, 2048, 600)
	var tCount, tWalk time.Duration
	match := func(off bool) *Result {
		m.sc.off = off
		start := time.Now()
		res, err := m.Match(Allocate, busy, 2, 10)
		d := time.Since(start)
		if off {
			tWalk += d
		} else {
			tCount += d
		}
		m.sc.off = false
		if err != nil || res.Status != Busy {
			b.Fatal("want Busy: ", err, res)
		}
		return res
	}
	for b.Loop() {
		counted, walked := match(false), match(true)
		if counted.Reason != walked.Reason {
			b.Fatalf("reasons differ: %q (count) and %q (walk)", counted.Reason, walked.Reason)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(tCount.Nanoseconds())/n, "count-ns/match")
	b.ReportMetric(float64(tWalk.Nanoseconds())/n, "walk-ns/match")
	b.ReportMetric(float64(tWalk)/float64(tCount), "walk/count")
}
