package gang

import (
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// TestUncommittedIsNoVictim: a group placed but not yet through Permit
// (one pod reserved and waiting, the other not yet tried) has not
// started, and its pods are not bound: a preemptor does not take it as
// a victim, though it would lose nothing. Found by the simulator's
// packed-rack workload, where such a group, placed in the loop before a
// preemption, was evicted before its pods were bound.
func TestUncommittedIsNoVictim(t *testing.T) {
	c, err := New(Config{Queue: queue.Config{Policy: queue.Easy, QueueDepth: queue.DefaultQueueDepth}, RunID: "t",
		Preemption: &Preemption{After: 60, Timeout: 120}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"n1", "n2"} {
		c.NodeSet(Node{Name: n, Allocatable: Resources{MilliCPU: 4000, MemoryBytes: 8 << 30}}, 0)
	}
	var evicted []Eviction
	fw := NewFramework(c, func(*Pod, string) error { return nil })
	fw.Observe = func(fx Effects) { evicted = append(evicted, fx.Evictions...) }
	add := func(name string, id GroupID, prio int32, now int64) {
		fw.Add(Pod{UID: "u-" + name, Namespace: "ns", Name: name, Created: now, Priority: prio, Owned: true, Labeled: id,
			Requests: Resources{MilliCPU: 4000, MemoryBytes: 1 << 30}}, id, now)
	}
	low := NewGroupID("ns", "low", 2, SourceLabel)
	add("l0", low, 0, 0)
	add("l1", low, 0, 0)
	fw.RunPod("u-l0", 0)
	if fw.pods["u-l0"] == nil || fw.pods["u-l0"].waiting == "" {
		t.Fatal("l0 is not waiting at Permit")
	}
	high := NewGroupID("ns", "high", 1, SourceLabel)
	add("h0", high, 1000, 10)
	fw.RunPod("u-h0", 10)
	c.Tick(10)
	fw.Run(10)
	if len(evicted) > 0 {
		t.Fatalf("evicted %+v", evicted)
	}
	if fw.pods["u-l0"] != nil || fw.pods["u-l1"] != nil {
		t.Errorf("low's pods were not bound: l0 %+v, l1 %+v", fw.pods["u-l0"], fw.pods["u-l1"])
	}
	// Once low runs, it is a victim like any.
	c.Tick(20)
	fw.Run(20)
	if len(evicted) != 2 || evicted[0].Group != low.Key || evicted[0].By != high.Key {
		t.Errorf("once low runs: evicted %+v", evicted)
	}
}
