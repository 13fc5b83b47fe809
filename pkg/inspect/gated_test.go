package inspect

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// A group fluence has not seen because its pods wait for their scheduling
// gates is listed among the groups the core knows, in key order, and
// explained as waiting for its gates: which gates, on how many pods, and
// that nothing is held meanwhile. A group the core knows with gated pods
// says how many.
func TestGatedGroups(t *testing.T) {
	v := cluster(t) // the scheduler answers at start + 20 s
	sweep := GatedGroup{ID: gang.NewGroupID("team", "sweep", 3, gang.SourceLabel), Priority: 5, Created: start.Add(5 * time.Second),
		Pods: []GatedPod{{Name: "sweep-0", Gates: []string{"kueue.x-k8s.io/admission"}}, {Name: "sweep-1", Gates: []string{"kueue.x-k8s.io/admission"}},
			{Name: "sweep-2", Gates: []string{"kueue.x-k8s.io/admission"}}}}
	ranks := GatedGroup{ID: gang.NewGroupID("team", "ranks", 4, "job"), Created: start.Add(15 * time.Second), Ungated: 1,
		Pods: []GatedPod{{Name: "ranks-0", Gates: []string{"example.com/quota"}}, {Name: "ranks-1", Gates: []string{"example.com/quota", "example.com/hold"}}}}
	lone := GatedGroup{ID: gang.NewGroupID("team", "solo", 1, gang.SourcePod), Created: start,
		Pods: []GatedPod{{Name: "solo", Gates: []string{"example.com/hold"}}}}

	list := v.GroupsWithGated("team", []GatedGroup{ranks, sweep, lone})
	var keys []string
	for _, g := range list.Items {
		keys = append(keys, g.Key+":"+g.State)
	}
	want := []string{"team/a:placed", "team/b:queued", "team/c:queued", "team/job:ranks:gated", "team/pod:solo:gated", "team/sweep:gated"}
	if !slices.Equal(keys, want) {
		t.Errorf("groups: %v, want %v", keys, want)
	}
	if other := v.GroupsWithGated("lab", []GatedGroup{sweep}); len(other.Items) != 1 || other.Items[0].Key != "lab/d" {
		t.Errorf("lab's groups with team's gated group: %+v", other.Items)
	}
	g := list.Items[5]
	if g.Gated != 3 || g.Pods != 0 || !slices.Equal(g.Gates, []string{"kueue.x-k8s.io/admission"}) || g.WaitSeconds != 15 || g.Priority != 5 ||
		g.Reason != "its 3 pods exist but wait for their scheduling gates (kueue.x-k8s.io/admission)" {
		t.Errorf("sweep: %+v", g)
	}

	for _, tc := range []struct {
		g    GatedGroup
		want []string
	}{
		{sweep, []string{
			"team/sweep: its 3 pods exist but wait for their scheduling gates (kueue.x-k8s.io/admission), so fluence has not seen the group yet: kube-scheduler hands it no pod before the pod's gates are lifted.",
			"Gate kueue.x-k8s.io/admission is on 3 pods: sweep-0, sweep-1, sweep-2.",
			"Nothing is held for the group meanwhile, and it is not queued. Whoever set the gates lifts them (Kueue lifts kueue.x-k8s.io/admission when it admits the workload); fluence counts each pod once its gates are gone and places the group whole once all its pods count.",
		}},
		{ranks, []string{
			"team/job:ranks: 2 of its 4 pods wait for their scheduling gates (example.com/hold, example.com/quota), so fluence has not seen the group yet",
			"Gate example.com/hold is on pod ranks-1.",
			"Gate example.com/quota is on 2 pods: ranks-0, ranks-1.",
			"1 more exists without gates but has not reached fluence's scheduling cycle yet.",
			"The group needs 4 pods: 1 more does not exist yet.",
			"Whoever set the gates lifts them; fluence counts",
		}},
		{lone, []string{"team/pod:solo: its pod exists but waits for its scheduling gates (example.com/hold)"}},
	} {
		e := v.ExplainGated(tc.g)
		if e.Kind != KindExplanation || e.Verdict != StateGated || e.Group.State != StateGated || e.Queued != 2 || e.ExpectedStart != nil {
			t.Errorf("%s: %+v", tc.g.ID.Key, e)
		}
		text := e.Summary + "\n" + strings.Join(e.Details, "\n")
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: the explanation lacks %q:\n%s", tc.g.ID.Key, w, text)
			}
		}
	}

	// A group the core knows counts its gated pods apart.
	core, err := gang.New(gang.Config{TicksPerSecond: 1000, RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	id := gang.NewGroupID("ns", "part", 3, gang.SourceLabel)
	for i, gated := range []bool{false, true, true} {
		name := "part-" + string(rune('0'+i))
		core.PodSeen(gang.Pod{UID: name, Namespace: "ns", Name: name, Owned: true, Gated: gated, Labeled: id}, 0)
	}
	snap := core.Snapshot(0)
	part := View{Snapshot: &snap, Clock: Clock{Start: start, TicksPerSecond: 1000}}.Groups("ns").Items
	if len(part) != 1 || part[0].Pods != 1 || part[0].Gated != 2 || part[0].Gates != nil {
		t.Errorf("a group with 1 pod counted and 2 gated: %+v", part)
	}
}
