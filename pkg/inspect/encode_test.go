package inspect

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/queue"
)

// The encoder answers byte for byte as encoding the whole list does, while
// groups are placed, end, wait and are gated, and keeps only the started
// groups of its last answer.
func TestGroupEncoderAnswersAsTheList(t *testing.T) {
	c, err := gang.New(gang.Config{Queue: queue.Config{Policy: queue.Easy}, RunID: "enc"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		c.NodeSet(gang.Node{Name: fmt.Sprintf("n%d", i), Allocatable: gang.Resources{MilliCPU: 4000, MemoryBytes: 8 << 30, Pods: 110}}, 0)
	}
	fw := gang.NewFramework(c, nil)
	add := func(ns, group string, size int32, pods int, cpu int64, now int64) {
		id := gang.NewGroupID(ns, group, size, gang.SourceLabel)
		for i := range pods {
			fw.Add(gang.Pod{UID: fmt.Sprintf("%s-%s-%d", ns, group, i), Namespace: ns, Name: fmt.Sprintf("%s-%d", group, i), Owned: true,
				Requests: gang.Resources{MilliCPU: cpu}, Labeled: id}, id, now)
		}
	}
	add("team", "a", 2, 2, 3000, 0) // placed, one pod per node
	add("team", "c", 2, 2, 3000, 1) // waits for a
	add("team", "e", 3, 1, 1000, 1) // gathering
	add("lab", "d", 1, 1, 500, 2)   // placed, another namespace
	fw.Run(2)
	gated := []GatedGroup{{ID: gang.NewGroupID("team", "b", 2, gang.SourceLabel), Created: start,
		Pods: []GatedPod{{Name: "b-0", Gates: []string{"example.com/hold"}}}}}
	clock := Clock{Start: start, TicksPerSecond: 1}

	var enc GroupEncoder
	check := func(step string, now int64, namespace string, wantKept int) {
		t.Helper()
		pub := c.Publish()
		snap := pub.Snapshot(now)
		want, err := json.Marshal(View{Profile: "fluence", Snapshot: &snap, Clock: clock}.GroupsWithGated(namespace, gated))
		if err != nil {
			t.Fatal(err)
		}
		got, err := enc.GroupList(View{Profile: "fluence", Snapshot: &gang.Snapshot{Now: snap.Now}, Clock: clock}, namespace, pub.GroupStatuses(), gated)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s: the encoder answers\n%s\nthe list encodes\n%s", step, got, want)
		}
		if len(enc.kept) != wantKept {
			t.Errorf("%s: the encoder keeps %d groups, want %d (the started groups it listed)", step, len(enc.kept), wantKept)
		}
	}
	check("first answer", 5, "", 2)          // a and d started; c and e wait, b is gated
	check("the same state, later", 9, "", 2) // waits grow; the started groups are kept
	check("one namespace", 9, "team", 1)
	check("a namespace without groups", 9, "none", 0)
	for i := range 2 {
		c.PodSeen(gang.Pod{UID: fmt.Sprintf("team-a-%d", i), Namespace: "team", Name: fmt.Sprintf("a-%d", i), Owned: true, NodeName: fmt.Sprintf("n%d", i), Done: true,
			Requests: gang.Resources{MilliCPU: 3000}, Labeled: gang.NewGroupID("team", "a", 2, gang.SourceLabel)}, 10)
	}
	c.Tick(10)
	fw.Run(10)
	check("a ended, c placed", 12, "", 2) // c and d
	check("again", 40, "", 2)
}
