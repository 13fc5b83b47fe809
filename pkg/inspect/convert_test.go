package inspect

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/queue"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// start is the scheduler's start in the tests: core time 0.
var start = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// cluster is three 4-CPU nodes (one with two GPUs, one with a pod another
// scheduler bound) and four groups, as the scheduler runs them: core time
// in milliseconds. a runs (10 min declared), b waits with a reservation for
// a's end, c waits behind b, d can never fit, e lacks pods.
func cluster(t *testing.T) View {
	t.Helper()
	clock := Clock{Start: start, TicksPerSecond: 1000}
	core, err := gang.New(gang.Config{Queue: queue.Config{Policy: queue.Easy}, TicksPerSecond: 1000, RunID: "r",
		FormatTime: func(t int64) string { return clock.At(t).Format(time.RFC3339) }})
	if err != nil {
		t.Fatal(err)
	}
	for i, gpu := range []int64{2, 0, 0} {
		core.NodeSet(gang.Node{Name: fmt.Sprintf("n%d", i+1), Allocatable: gang.Resources{MilliCPU: 4000, MemoryBytes: 8 << 30, GPU: gpu}}, 0)
	}
	core.PodSeen(gang.Pod{UID: "f", Namespace: "other", Name: "f", NodeName: "n3", Requests: gang.Resources{MilliCPU: 1000, MemoryBytes: 1 << 30}}, 0)
	fw := gang.NewFramework(core, nil)
	add := func(now int64, ns, name string, size int, cpu, dur int64) {
		id := gang.NewGroupID(ns, name, int32(size), gang.SourceLabel)
		for i := range size {
			if ns == "late" && i > 0 {
				break
			}
			pod := fmt.Sprintf("%s-%d", name, i)
			fw.Add(gang.Pod{UID: ns + "/" + pod, Namespace: ns, Name: pod, Owned: true, Labeled: id, Created: now + int64(i),
				Requests: gang.Resources{MilliCPU: cpu, MemoryBytes: 1 << 30}, Duration: dur}, id, now)
		}
	}
	add(0, "team", "a", 2, 4000, 600)
	fw.Run(0)
	add(10_000, "team", "b", 2, 4000, 300)
	add(10_000, "team", "c", 2, 3000, 0)
	add(10_000, "lab", "d", 2, 8000, 0)
	add(10_000, "late", "e", 3, 1000, 0)
	fw.Run(10_000)
	snap := core.Snapshot(20_000)
	return View{Profile: "fluence", Snapshot: &snap, Clock: clock}
}

// Every answer, as JSON, against its golden file (go test -update rewrites
// them after the diff was checked).
func TestAnswers(t *testing.T) {
	v := cluster(t)
	explain := func(key string) any {
		e, ok := v.Explain(key)
		if !ok {
			t.Fatalf("no group %s", key)
		}
		return e
	}
	for name, answer := range map[string]any{
		"groups-all":       v.Groups(""),
		"groups-team":      v.Groups("team"),
		"queue-all":        v.Queue(""),
		"queue-team":       v.Queue("team"),
		"nodes":            v.Nodes(),
		"graph":            v.Graph(),
		"explain-placed":   explain("team/a"),
		"explain-reserved": explain("team/b"),
		"explain-waiting":  explain("team/c"),
		"explain-rejected": explain("lab/d"),
		"explain-gather":   explain("late/e"),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := json.MarshalIndent(answer, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".json")
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./pkg/inspect -update writes it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)+"\n"); diff != "" {
				t.Errorf("%s differs (-golden +got):\n%s", golden, diff)
			}
		})
	}
}

// The numbers the answers carry are the core's, in wall-clock time: a's
// start, b's reserved start at a's planned end, the queue's order.
func TestAnswersInWallClock(t *testing.T) {
	v := cluster(t)
	b, _ := v.Explain("team/b")
	if b.Verdict != gang.VerdictReserved || b.ExpectedStart == nil || !b.ExpectedStart.Equal(start.Add(10*time.Minute)) {
		t.Errorf("team/b: verdict %s, expected start %v, want reserved at %v", b.Verdict, b.ExpectedStart, start.Add(10*time.Minute))
	}
	if !b.Time.Equal(start.Add(20*time.Second)) || b.Group.WaitSeconds != 10 {
		t.Errorf("team/b answered at %v having waited %gs, want %v and 10s", b.Time, b.Group.WaitSeconds, start.Add(20*time.Second))
	}
	q := v.Queue("")
	var order []string
	for _, e := range q.Entries {
		order = append(order, fmt.Sprintf("%d:%s:%s", e.Position, e.Group, e.State))
	}
	if diff := cmp.Diff([]string{"1:team/b:reserved", "2:team/c:pending"}, order); diff != "" || q.Reservations != 1 {
		t.Errorf("queue (-want +got):\n%s\nreservations %d, want 1 under easy", diff, q.Reservations)
	}
	a := v.Groups("team").Items[0]
	if a.Key != "team/a" || a.Started == nil || !a.Started.Equal(start) || len(a.Nodes) != 2 || a.Waiting != nil {
		t.Errorf("team/a: %+v", a)
	}
}

func TestPath(t *testing.T) {
	for _, tc := range []struct {
		resource, ns, name, profile string
		want                        string
	}{
		{ResourceGroups, "", "", "", "/apis/inspect.fluence.flux-framework.org/v1alpha1/groups"},
		{ResourceGroups, "team", "", "", "/apis/inspect.fluence.flux-framework.org/v1alpha1/namespaces/team/groups"},
		{ResourceGroups, "team", "job:solver", "", "/apis/inspect.fluence.flux-framework.org/v1alpha1/namespaces/team/groups/job:solver"},
		{ResourceQueue, "", "", "gpu sched", "/apis/inspect.fluence.flux-framework.org/v1alpha1/queue?profile=gpu+sched"},
		{ResourceNodes, "", "", "", "/apis/inspect.fluence.flux-framework.org/v1alpha1/nodes"},
	} {
		if got := Path(tc.resource, tc.ns, tc.name, tc.profile); got != tc.want {
			t.Errorf("Path(%q, %q, %q, %q) = %s, want %s", tc.resource, tc.ns, tc.name, tc.profile, got, tc.want)
		}
	}
}
