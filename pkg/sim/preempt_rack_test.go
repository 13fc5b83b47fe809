package sim

import (
	"reflect"
	"strings"
	"testing"
)

// checkpoint_every and movable: read, written back, and refused with the
// file's path and the group's name when wrong.
func TestWorkloadCheckpointFields(t *testing.T) {
	const head = "cluster: {nodes: [{cpu: 4}]}\ngroups:\n"
	for _, tc := range []struct {
		name, fields string
		every        float64
		movable      bool
		want         string // substring of the error; "" for none
	}{
		{"none", "", 0, false, ""},
		{"every 600", "checkpoint_every: 600", 600, false, ""},
		{"every 0.5", "checkpoint_every: 0.5", 0.5, false, ""},
		{"movable", "movable: true", 0, true, ""},
		{"not movable", "movable: false", 0, false, ""},
		{"both", "checkpoint_every: 300, movable: true", 300, true, ""},
		{"every 0", "checkpoint_every: 0", 0, false, `groups[0].checkpoint_every: group "a": must be a positive number of seconds of run between checkpoints, got 0 (leave it out for none)`},
		{"every negative", "checkpoint_every: -60", 0, false, `groups[0].checkpoint_every: group "a": must be a positive number`},
		{"every quoted", `checkpoint_every: "600"`, 0, false, `groups[0].checkpoint_every: must be a number, got "600"`},
		{"every infinite", "checkpoint_every: .inf", 0, false, "groups[0].checkpoint_every: must be finite"},
		{"every list", "checkpoint_every: [600]", 0, false, "groups[0].checkpoint_every: must be a number, got a list"},
		{"movable yes", "movable: yes", 0, false, `groups[0].movable: must be true or false, got "yes"`},
		{"movable 1", "movable: 1", 0, false, "groups[0].movable: must be true or false"},
		{"misspelt", "checkpoint_evry: 600", 0, false, "groups[0].checkpoint_evry: unknown key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := "  - {name: a, pods: 1, cpu: 1, runtime: 5"
			if tc.fields != "" {
				g += ", " + tc.fields
			}
			w, err := parseWorkload([]byte(head+g+"}\n"), "w.yaml", LoadOptions{})
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), "workload w.yaml: "+tc.want) {
					t.Fatalf("error %v, want %q", err, "workload w.yaml: "+tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := w.Groups[0]; got.CheckpointEvery != tc.every || got.Movable != tc.movable {
				t.Errorf("checkpoint_every %v, movable %v; want %v, %v", got.CheckpointEvery, got.Movable, tc.every, tc.movable)
			}
			data, err := MarshalWorkload(w)
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseWorkload(data, LoadOptions{})
			if err != nil || !reflect.DeepEqual(back, w) {
				t.Errorf("round trip: %v\n got %+v\nwant %+v", err, back, w)
			}
		})
	}
}

// An evicted group that checkpoints loses only the work since its last
// checkpoint, and its next run is that much shorter: the lost work is
// redone, the saved work is not. One node; a low group of one 8-core pod
// runs 1,000 s from t = 0; an urgent one arrives at t = 700 and evicts
// it. Checkpointing every 300 s, the low group had one at 600: it loses
// 100 pod-seconds, the core says so (the preemption's lost work is the
// core's choice, measured by the env), and its last run is 400 s.
// Without checkpoints it loses its 700 s and runs 1,000 s again.
func TestEvictedGroupResumesFromCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		every, lost, lastRun float64
	}{{300, 100, 400}, {0, 700, 1000}, {1000, 700, 1000}} {
		w := &Workload{Name: "one-node", Cluster: ClusterFromSpec(1, 8000, 0, 0), Groups: []GroupSpec{
			{Name: "low", Arrival: 0, Pods: []PodSpec{{CPU: 8000}}, Runtime: 1000, Duration: 1250, CheckpointEvery: tc.every},
			{Name: "urgent", Arrival: 700, Pods: []PodSpec{{CPU: 8000}}, Runtime: 100, Duration: 125, Priority: 10},
		}}
		cfg := preemptTestConfig()
		p := DefaultPreemption
		cfg.Preemption = &p
		s, err := NewFluence(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(w, s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		low := r.Jobs[0]
		if !low.Completed || low.Evictions != 1 || low.WorkLost != tc.lost {
			t.Errorf("every %v: low completed %v, evicted %d times, lost %v pod-s; want once, %v", tc.every, low.Completed, low.Evictions, low.WorkLost, tc.lost)
		}
		if run := low.End - low.Start; run != tc.lastRun {
			t.Errorf("every %v: the last run took %v s, want %v", tc.every, run, tc.lastRun)
		}
		recs := Preemptions(s)
		if len(recs) != 1 || recs[0].Lost != tc.lost || recs[0].At != 700 {
			t.Errorf("every %v: preemptions %+v, want one at 700 losing %v", tc.every, recs, tc.lost)
		}
	}
}

// The generator: the same workload for a seed, another for another seed;
// racks packed by a background that checkpoints in part and is movable in
// part, and urgent gangs that require a rack.
func TestPackedRackWorkload(t *testing.T) {
	w := PackedRackWorkload(1)
	if !reflect.DeepEqual(w, PackedRackWorkload(1)) {
		t.Fatal("seed 1 gives two workloads")
	}
	if reflect.DeepEqual(w.Groups, PackedRackWorkload(2).Groups) {
		t.Error("seeds 1 and 2 give the same groups")
	}
	if len(w.Cluster.Nodes) != 32 || !reflect.DeepEqual(w.TopologyLevels, []string{RackLabelKey}) {
		t.Errorf("%d nodes, levels %v", len(w.Cluster.Nodes), w.TopologyLevels)
	}
	var urgent, ckpt, movable, other int
	for _, g := range w.Groups {
		switch {
		case g.Priority == PackedRackUrgent:
			urgent++
			if g.TopologyRequired != RackLabelKey || len(g.Pods) < 4 || len(g.Pods) > 8 {
				t.Errorf("urgent %s: %d pods, requires %q", g.Name, len(g.Pods), g.TopologyRequired)
			}
		case g.TopologyRequired != "":
			t.Errorf("background %s requires %s", g.Name, g.TopologyRequired)
		}
		if g.CheckpointEvery > 0 {
			ckpt++
		}
		if g.Movable {
			movable++
		}
		if g.Priority != PackedRackUrgent && g.Priority != PackedRackLow {
			other++
		}
	}
	if urgent != 8 || ckpt == 0 || movable == 0 || other == 0 {
		t.Errorf("%d urgent, %d checkpointing, %d movable, %d of priority %d", urgent, ckpt, movable, other, PackedRackStandard)
	}
	if !HasRackPreemption(w) || HasRackPreemption(UrgentWorkload()) {
		t.Error("HasRackPreemption")
	}
	data, err := MarshalWorkload(w)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := ParseWorkload(data, LoadOptions{}); err != nil || !reflect.DeepEqual(back, w) {
		t.Errorf("round trip: %v", err)
	}
}

// The rack comparison on the seeded workload: topology-aware preemption
// starts every urgent gang within one rack, at once, and moves groups;
// the preemptions that ignore topology spread urgent gangs over racks.
// The figures are the runs' (none is written here): docs/sim-workload.md
// shows a table.
func TestCompareRackPreemption(t *testing.T) {
	w := PackedRackWorkload(1)
	runs, err := CompareRackPreemption(w, PreemptionSetup{Fluence: preemptTestConfig(), Preemption: DefaultPreemption,
		Stock: StockOptions{Backoff: DefaultBackoff, AttemptSeconds: DefaultAttemptSeconds}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	row := map[string]PreemptionSummary{}
	for _, r := range runs {
		row[r.Label] = r.Summary
		t.Logf("%-55s urgent wait mean %.0f max %.0f, within %d/%d, evictions %d/%d, moves %d, lost %.0f pod-s, makespan %.0f",
			r.Label, r.Summary.UrgentMean, r.Summary.UrgentMax, r.Summary.UrgentWithin, r.Summary.UrgentRequired,
			r.Summary.Evictions, r.Summary.EvictedPods, r.Summary.Moves, r.Summary.WorkLost, r.Summary.Makespan)
	}
	none, topo, hidden, anywhere := row[RackRowNone], row[RackRowTopology], row[RackRowHidden], row[RackRowAnywhere]
	if len(runs) != 5 {
		t.Fatalf("%d rows", len(runs))
	}
	for _, s := range []PreemptionSummary{none, topo, hidden, anywhere} {
		if s.Completed != s.Total || s.Urgent != 8 || s.UrgentStarted != 8 {
			t.Errorf("completed %d/%d, urgent started %d/%d", s.Completed, s.Total, s.UrgentStarted, s.Urgent)
		}
	}
	for name, s := range map[string]PreemptionSummary{RackRowTopology: topo, RackRowHidden: hidden} {
		if s.UrgentWithin != s.Urgent || s.UrgentRequired != s.Urgent {
			t.Errorf("%s: %d of %d urgent gangs within one rack", name, s.UrgentWithin, s.Urgent)
		}
		if !(s.UrgentMax < none.UrgentMean/10) {
			t.Errorf("%s: urgent gangs waited up to %v s, against %v s on average without preemption", name, s.UrgentMax, none.UrgentMean)
		}
		if s.Evictions == 0 || s.WorkLost <= 0 || s.EvictedInPart != 0 {
			t.Errorf("%s: %d evictions (%d in part), %v pod-s lost", name, s.Evictions, s.EvictedInPart, s.WorkLost)
		}
	}
	if none.Evictions != 0 || none.WorkLost != 0 || none.UrgentWithin != none.Urgent {
		t.Errorf("without preemption: %d evictions, %v lost, %d within a rack", none.Evictions, none.WorkLost, none.UrgentWithin)
	}
	if topo.Moves == 0 || hidden.Moves != 0 || anywhere.Moves != 0 {
		t.Errorf("moves: %d topology-aware, %d with movability hidden, %d anywhere", topo.Moves, hidden.Moves, anywhere.Moves)
	}
	if anywhere.UrgentWithin >= anywhere.Urgent || anywhere.UrgentRequired != anywhere.Urgent {
		t.Errorf("rack requirement dropped: %d of %d urgent gangs still within one rack", anywhere.UrgentWithin, anywhere.UrgentRequired)
	}
}

// Up to the first preemption the runs with and without the checkpoints
// shown to the core are the same; there, seeing them, the core chooses a
// set that loses less (it counts a victim's work since its checkpoint,
// not since it began).
func TestCheckpointsCheapenFirstPreemption(t *testing.T) {
	w := PackedRackWorkload(1)
	var first []PreemptionRecord
	for _, hide := range []bool{false, true} {
		cfg := preemptTestConfig()
		p := DefaultPreemption
		cfg.Preemption, cfg.HideCheckpoints = &p, hide
		s, err := NewFluence(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Run(w, s, Options{}); err != nil {
			t.Fatal(err)
		}
		recs := Preemptions(s)
		if len(recs) == 0 {
			t.Fatalf("hide %v: no preemption", hide)
		}
		first = append(first, recs[0])
	}
	seen, hidden := first[0], first[1]
	if seen.At != hidden.At || seen.By != hidden.By {
		t.Fatalf("first preemptions differ: %+v and %+v", seen, hidden)
	}
	if !(seen.Lost < hidden.Lost) {
		t.Errorf("first preemption loses %v pod-s seeing checkpoints (%v), %v not (%v)", seen.Lost, seen.Victims, hidden.Lost, hidden.Victims)
	}
}
