package inspect

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/queue"
)

// BenchmarkGroupList is what one `kubectl fluence groups` answer costs the
// scheduler at 1,000 nodes and 10,000 placed one-pod groups: step by step
// as every group is converted and encoded (the published state copied
// into a snapshot, converted to the API's list, encoded; all-baseline is
// the three), and as the scheduler answers, with the encoder keeping what
// did not change since its last answer.
func BenchmarkGroupList(b *testing.B) {
	c, err := gang.New(gang.Config{Queue: queue.Config{Policy: queue.Easy}, RunID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		c.NodeSet(gang.Node{Name: fmt.Sprintf("node-%04d", i), Allocatable: gang.Resources{MilliCPU: 32000, MemoryBytes: 64 << 30, Pods: 110}}, 0)
	}
	fw := gang.NewFramework(c, nil)
	for g := range 10000 {
		id := gang.NewGroupID("ns", fmt.Sprintf("g%05d", g), 1, gang.SourceLabel)
		fw.Add(gang.Pod{UID: fmt.Sprintf("u%d", g), Namespace: "ns", Name: fmt.Sprintf("p%05d", g), Owned: true,
			Requests: gang.Resources{MilliCPU: 1000}, Labeled: id}, id, 0)
	}
	fw.Run(0)
	if fw.Pending() != 0 {
		b.Fatalf("%d pods not placed", fw.Pending())
	}
	pub := c.Publish()
	clock := Clock{Start: time.Unix(0, 0), TicksPerSecond: 1}
	view := func() View {
		snap := pub.Snapshot(1)
		return View{Profile: "fluence", Snapshot: &snap, Clock: clock}
	}
	b.Run("snapshot", func(b *testing.B) {
		for range b.N {
			view()
		}
	})
	v := view()
	b.Run("convert", func(b *testing.B) {
		for range b.N {
			v.Groups("ns")
		}
	})
	list := v.Groups("ns")
	b.Run("encode", func(b *testing.B) {
		for range b.N {
			if _, err := json.Marshal(list); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("all-baseline", func(b *testing.B) {
		for range b.N {
			v := view()
			if _, err := json.Marshal(v.Groups("ns")); err != nil {
				b.Fatal(err)
			}
		}
	})
	// What the scheduler answers with (GroupEncoder): an answer after ten
	// groups changed, as when polled while pods end and others start.
	var enc GroupEncoder
	answer := func(now int64) {
		pub := c.Publish()
		v := View{Profile: "fluence", Snapshot: &gang.Snapshot{Now: max(now, pub.Now())}, Clock: clock}
		if _, err := enc.GroupList(v, "ns", pub.GroupStatuses(), nil); err != nil {
			b.Fatal(err)
		}
	}
	answer(1)
	b.Run("encoder-10-changed", func(b *testing.B) {
		for i := range b.N {
			b.StopTimer()
			for k := range 10 {
				g := (i*10 + k) % 10000
				c.PodSeen(gang.Pod{UID: fmt.Sprintf("u%d", g), Namespace: "ns", Name: fmt.Sprintf("p%05d", g), Owned: true, NodeName: "node-0000",
					Requests: gang.Resources{MilliCPU: 1000}, Labeled: gang.NewGroupID("ns", fmt.Sprintf("g%05d", g), 1, gang.SourceLabel)}, int64(i+2))
			}
			b.StartTimer()
			answer(int64(i + 2))
		}
	})
}
