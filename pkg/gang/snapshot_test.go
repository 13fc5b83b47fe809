package gang

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// Taking snapshots and explanations at every step changes nothing the core
// decides: the same events give the same effects and the same final state
// with inspection as without.
func TestSnapshotChangesNothing(t *testing.T) {
	run := func(inspect bool) string {
		core, err := New(Config{Queue: queue.Config{Policy: queue.Easy}, RunID: "r"})
		if err != nil {
			t.Fatal(err)
		}
		var log strings.Builder
		fw := NewFramework(core, nil)
		fw.Observe = func(fx Effects) { fmt.Fprintf(&log, "%+v\n", fx) }
		look := func(now int64) {
			if !inspect {
				return
			}
			s := core.Snapshot(now)
			for _, g := range s.Groups {
				if _, ok := s.Explain(g.ID.Key); !ok {
					t.Fatalf("no explanation for %s", g.ID.Key)
				}
			}
		}
		for i := range 3 {
			core.NodeSet(Node{Name: fmt.Sprintf("n%d", i), Allocatable: Resources{MilliCPU: 4000, MemoryBytes: 8 << 30}}, 0)
			look(0)
		}
		for step, g := range []struct {
			name string
			size int
			cpu  int64
		}{{"a", 2, 4000}, {"b", 2, 4000}, {"c", 2, 3000}, {"d", 1, 9000}} {
			now := int64(step * 10)
			id := NewGroupID("ns", g.name, int32(g.size), SourceLabel)
			for i := range g.size {
				fw.Add(Pod{UID: fmt.Sprintf("%s%d", g.name, i), Namespace: "ns", Name: fmt.Sprintf("%s%d", g.name, i), Owned: true, Duration: 100,
					Requests: Resources{MilliCPU: g.cpu}, Labeled: id, Created: now*1000 + int64(i)}, id, now)
				look(now)
			}
			for _, tr := range fw.Run(now) {
				fmt.Fprintf(&log, "%+v\n", tr)
			}
			look(now)
		}
		core.Tick(150)
		look(150)
		for _, tr := range fw.Run(150) {
			fmt.Fprintf(&log, "%+v\n", tr)
		}
		fmt.Fprintf(&log, "%+v\n", core.Stats())
		return log.String()
	}
	without, with := run(false), run(true)
	if without != with {
		t.Errorf("inspection changed the core's decisions:\n%s", lineDiff(without, with))
	}
	if !strings.Contains(without, "Bound:n") {
		t.Fatalf("nothing was bound; the test shows nothing:\n%s", without)
	}
}

// A snapshot is a copy: changing the core afterwards does not change it.
func TestSnapshotIsACopy(t *testing.T) {
	core, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	core.NodeSet(Node{Name: "n1", Allocatable: Resources{MilliCPU: 2000}, Labels: map[string]string{ZoneLabel: "z1"}}, 0)
	fw := NewFramework(core, nil)
	fw.Add(Pod{UID: "p", Namespace: "ns", Name: "p", Owned: true, Requests: Resources{MilliCPU: 1000}}, NewGroupID("ns", "p", 1, SourcePod), 0)
	fw.Run(0)
	before := core.Snapshot(5)
	kept := fmt.Sprintf("%+v", before.Groups)
	core.NodeSet(Node{Name: "n2", Allocatable: Resources{MilliCPU: 2000}}, 6)
	core.PodSeen(Pod{UID: "p", Namespace: "ns", Name: "p", Owned: true, NodeName: "n1", Done: true}, 7)
	if got := fmt.Sprintf("%+v", before.Groups); got != kept {
		t.Errorf("the snapshot changed with the core:\nbefore %s\nafter  %s", kept, got)
	}
	if before.Now != 5 || len(before.Nodes) != 1 || before.Nodes[0].Zone != "z1" || before.Nodes[0].Allocated.MilliCPU != 1000 {
		t.Errorf("snapshot at 5: now %d, nodes %+v", before.Now, before.Nodes)
	}
	after := core.Snapshot(0)
	if after.Now != 7 {
		t.Errorf("a snapshot asked for a time before the last event describes %d, want the last event's time 7", after.Now)
	}
	if !after.Graph.Stale || len(after.Groups) != 0 {
		t.Errorf("after a node was added and the pod ended: stale %v, groups %+v", after.Graph.Stale, after.Groups)
	}
}

func TestLookup(t *testing.T) {
	s := Snapshot{Groups: []GroupStatus{
		{ID: NewGroupID("a", "x", 1, SourceLabel)},
		{ID: NewGroupID("a", "y", 1, SourceJob)},
		{ID: NewGroupID("a", "z", 1, SourceJob)},
		{ID: NewGroupID("a", "z", 1, SourcePod)},
		{ID: NewGroupID("b", "y", 1, SourceLabel)},
	}}
	for _, tc := range []struct {
		ns, name string
		want     []string
	}{
		{"a", "x", []string{"a/x"}},
		{"a", "y", []string{"a/job:y"}},
		{"a", "job:y", []string{"a/job:y"}},
		{"a", "z", []string{"a/job:z", "a/pod:z"}},
		{"b", "y", []string{"b/y"}},
		{"c", "x", nil},
	} {
		if got := s.Lookup(tc.ns, tc.name); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Lookup(%s, %s) = %v, want %v", tc.ns, tc.name, got, tc.want)
		}
	}
	if _, ok := s.Explain("a/nothing"); ok {
		t.Errorf("Explain of an unknown group succeeded")
	}
}

// The verdicts scripts cannot reach easily, from snapshots built by hand:
// each names its state and says why in numbers.
func TestExplainVerdicts(t *testing.T) {
	waiting := func(key string, at int64) QueueEntry {
		return QueueEntry{Group: key, Pods: 2, State: queue.Pending.String(), At: at}
	}
	queued := func(key string) GroupStatus {
		return GroupStatus{ID: GroupID{Namespace: "ns", Name: strings.TrimPrefix(key, "ns/"), Key: key, Size: 2}, Phase: "queued", Pods: 2, Started: -1, PlannedEnd: -1, ReservedAt: -1,
			Ask: Resources{MilliCPU: 8000, GPU: 2, Pods: 2}, LargestPod: Resources{MilliCPU: 4000, GPU: 1, Pods: 1}, Eligible: 2,
			Free: Resources{MilliCPU: 8000, Pods: 200}, LargestFree: Resources{MilliCPU: 4000, Pods: 100}}
	}
	base := func(policy queue.Policy) Snapshot {
		cfg := queue.Config{Policy: policy}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		return Snapshot{Now: 100, TicksPerSecond: 1, QueueConfig: cfg, format: func(t int64) string { return fmt.Sprintf("t%d", t) }}
	}
	for _, tc := range []struct {
		name    string
		snap    func() Snapshot
		key     string
		verdict string
		want    []string
	}{
		{"blocked", func() Snapshot {
			s := base(queue.Easy)
			e := waiting("ns/b", -1)
			e.State, e.Reason = queue.Blocked.String(), "gpu: needs 2, found 0"
			s.Queue, s.Groups = []QueueEntry{e}, []GroupStatus{queued("ns/b")}
			return s
		}, "ns/b", VerdictBlocked, []string{"no start time works", "gpu: its 2 waiting pods ask 2 in all, at most 1 each; 0 is free now on the 2 nodes", "gpu: needs 2, found 0"}},
		{"fcfs", func() Snapshot {
			s := base(queue.FCFS)
			s.Queue, s.Groups = []QueueEntry{waiting("ns/a", -1), waiting("ns/b", -1)}, []GroupStatus{queued("ns/a"), queued("ns/b")}
			return s
		}, "ns/b", VerdictWaiting, []string{"position 2 of 2", "Under fcfs no request holds a reservation", "Ahead of it: ns/a."}},
		{"hybrid, promised to those ahead", func() Snapshot {
			s := base(queue.Hybrid)
			g := queued("ns/b")
			g.Ask.GPU, g.LargestPod.GPU = 0, 0
			s.Queue, s.Groups = []QueueEntry{waiting("ns/a", 400), waiting("ns/b", -1)}, []GroupStatus{queued("ns/a"), g}
			return s
		}, "ns/b", VerdictWaiting, []string{"Enough may be free now, but it is promised to ns/a (start t400)", "Under hybrid the first 64 waiting requests hold reservations"}},
		{"conservative, beyond the queue depth", func() Snapshot {
			s := base(queue.Conservative)
			for i := range 33 {
				key := fmt.Sprintf("ns/g%02d", i)
				s.Queue, s.Groups = append(s.Queue, waiting(key, -1)), append(s.Groups, queued(key))
			}
			return s
		}, "ns/g32", VerdictWaiting, []string{"position 33 of 33", "beyond the queue depth (32)", "and 27 more"}},
		{"no eligible node", func() Snapshot {
			s := base(queue.Easy)
			g := queued("ns/a")
			g.Eligible = 0
			s.Queue, s.Groups = []QueueEntry{waiting("ns/a", -1)}, []GroupStatus{g}
			return s
		}, "ns/a", VerdictWaiting, []string{"None of the nodes its 2 waiting pods may use takes new work now"}},
		{"all its pods, not yet queued", func() Snapshot {
			s := base(queue.Easy)
			g := queued("ns/a")
			g.Phase = "gathering"
			s.Groups = []GroupStatus{g}
			return s
		}, "ns/a", VerdictGathering, []string{"ns/a has its 2 pods; the engine takes it up at its next loop"}},
		{"invalid", func() Snapshot {
			s := base(queue.Easy)
			g := queued("ns/a")
			g.Phase, g.Reason = "invalid", "pods of group ns/a disagree on its size"
			s.Groups = []GroupStatus{g}
			return s
		}, "ns/a", VerdictInvalid, []string{"ns/a is invalid: pods of group ns/a disagree on its size."}},
		{"rejected before all its pods exist", func() Snapshot {
			s := base(queue.Easy)
			s.Nodes = []NodeStatus{{Name: "n1", Allocatable: Resources{MilliCPU: 4000, Pods: 110}}, {Name: "n2", Allocatable: Resources{MilliCPU: 2000, Pods: 110}}}
			g := queued("ns/h")
			g.Phase, g.Reason, g.ID.Size = "rejected", "cannot be placed on this cluster", 50
			g.Ask, g.LargestPod, g.SmallestPod = Resources{MilliCPU: 2000, Pods: 2}, Resources{MilliCPU: 1000, Pods: 1}, Resources{MilliCPU: 1000, Pods: 1}
			s.Groups = []GroupStatus{g}
			return s
		}, "ns/h", VerdictRejected, []string{"2 of its 50 pods exist", "cpu: its pods ask 50000m in all, at most 1000m each; the cluster's 2 nodes have 6000m, at most 4000m on one."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.snap()
			e, ok := s.Explain(tc.key)
			if !ok {
				t.Fatalf("no explanation for %s", tc.key)
			}
			text := e.Summary + "\n" + strings.Join(e.Details, "\n")
			if e.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s:\n%s", e.Verdict, tc.verdict, text)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("explanation lacks %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestSpanAndMemory(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {400 * time.Millisecond, "0s"}, {45 * time.Second, "45s"}, {598 * time.Second, "9m58s"},
		{10 * time.Minute, "10m"}, {time.Hour, "1h"}, {time.Hour + 5*time.Minute, "1h5m"}, {time.Hour + 5*time.Second, "1h0m5s"},
	} {
		if got := Span(tc.d); got != tc.want {
			t.Errorf("Span(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
	for _, tc := range []struct {
		b    int64
		want string
	}{{0, "0"}, {1000, "1000"}, {1 << 10, "1Ki"}, {3 << 20, "3Mi"}, {8 << 30, "8Gi"}, {(8 << 30) + (1 << 20), "8193Mi"}} {
		if got := Memory(tc.b); got != tc.want {
			t.Errorf("Memory(%d) = %q, want %q", tc.b, got, tc.want)
		}
	}
}
