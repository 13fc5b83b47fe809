package sim

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// runTopologyFragmented replays the built-in topology workload under
// fluence (easy backfill, packing, as `fluence sim` runs it first) with the
// core's invariants checked after every event.
func runTopologyFragmented(t *testing.T) (*Workload, *fluence, *Result) {
	t.Helper()
	w := TopologyFragmentedWorkload()
	s, err := NewFluence(FluenceConfig{CheckInvariants: true, Queue: queue.Config{Policy: queue.Easy,
		QueueDepth: queue.DefaultQueueDepth, ReservationDepth: queue.DefaultReservationDepth, Packing: true}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(w, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return w, s.(*fluence), r
}

// Under fluence every group of the topology workload completes; every
// group with a required key runs on nodes sharing one value of it; every
// placement event's domain holds all the group's nodes; and the levels
// the summary reports follow from the nodes.
func TestTopologyFragmentedFluence(t *testing.T) {
	w, f, r := runTopologyFragmented(t)
	if !f.cfg.CheckInvariants {
		t.Fatal("invariants not checked")
	}
	if r.Stalled || r.JobsRejected != 0 || r.JobsCompleted != r.JobsTotal || r.JobsTotal != len(w.Groups) {
		t.Fatalf("%d of %d groups completed, %d rejected, stalled %v", r.JobsCompleted, r.JobsTotal, r.JobsRejected, r.Stalled)
	}
	if !f.fromWorkload || !reflect.DeepEqual(f.levels, w.TopologyLevels) || !strings.Contains(r.Config, "(the workload's)") {
		t.Errorf("the core's levels are %v (from the workload: %v), want the workload's %v; config %q", f.levels, f.fromWorkload, w.TopologyLevels, r.Config)
	}

	byName := map[string]NodeSpec{}
	for _, n := range w.Cluster.Nodes {
		byName[n.Name] = n
	}
	required, events := 0, 0
	for i, g := range w.Groups {
		j := r.Jobs[i]
		if len(j.Nodes) != g.Size() {
			t.Fatalf("%s: %d nodes for %d pods", g.Name, len(j.Nodes), g.Size())
		}
		if key := g.TopologyRequired; key != "" {
			required++
			want := byName[j.Nodes[0]].Labels[key]
			for p, n := range j.Nodes {
				if v := byName[n].Labels[key]; v == "" || v != want {
					t.Errorf("%s requires one %s: pod %d ran on %s (%s=%q), pod 0 on %s (%q)", g.Name, key, p, n, key, v, j.Nodes[0], want)
				}
			}
		}
		// The domain the core's placement event named holds every pod.
		if d, ok := f.within[i]; ok {
			events++
			key, value, _ := strings.Cut(d, "=")
			if g.TopologyRequired != "" && key != g.TopologyRequired {
				t.Errorf("%s requires %s, was placed within %s", g.Name, g.TopologyRequired, d)
			}
			for _, n := range j.Nodes {
				if byName[n].Labels[key] != value {
					t.Errorf("%s placed within %s, but a pod ran on %s (%v)", g.Name, d, n, byName[n].Labels)
				}
			}
		} else if g.TopologyRequired != "" && g.Size() > 1 {
			t.Errorf("%s requires %s; its placement event named no domain", g.Name, g.TopologyRequired)
		}
	}
	if required == 0 || events == 0 {
		t.Fatalf("%d required groups, %d placement events with a domain", required, events)
	}

	s, err := SummarizeTopology(w, r)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Levels, w.TopologyLevels) {
		t.Fatalf("levels %v", s.Levels)
	}
	const zone, block, rack = 0, 1, 2
	var labels []string
	groups := map[string]int{}
	for _, row := range s.Rows {
		labels = append(labels, row.Label())
		groups[row.Label()] = row.Groups
		total := row.Anywhere
		for _, n := range row.AtLevel {
			total += n
		}
		if row.Placed != row.Groups || total != row.Placed || row.Rejected != 0 {
			t.Errorf("%s: %d groups, %d placed, %d counted by level, %d rejected", row.Label(), row.Groups, row.Placed, total, row.Rejected)
		}
		if row.Within != row.Required {
			t.Errorf("%s: %d of %d required groups within their domain", row.Label(), row.Within, row.Required)
		}
		switch row.Label() {
		case "required rack":
			if row.AtLevel[rack] != row.Placed {
				t.Errorf("required rack: levels %v, anywhere %d; want all %d at rack", row.AtLevel, row.Anywhere, row.Placed)
			}
		case "required block":
			if row.AtLevel[rack]+row.AtLevel[block] != row.Placed {
				t.Errorf("required block: levels %v, anywhere %d; want all %d within a block", row.AtLevel, row.Anywhere, row.Placed)
			}
		}
	}
	if want := []string{"all", "required rack", "required block", "preferred rack", "none"}; !reflect.DeepEqual(labels, want) {
		t.Errorf("rows %v, want %v", labels, want)
	}
	// The workload's own mix: pre-load and six rounds of the stream.
	if want := map[string]int{"all": 92, "required rack": 32, "required block": 12, "preferred rack": 24, "none": 24}; !reflect.DeepEqual(groups, want) {
		t.Errorf("groups per kind %v, want %v", groups, want)
	}
	all := s.Rows[0]
	if all.Required != required || all.MeanWait != r.MeanWait {
		t.Errorf("all: %d required (want %d), mean wait %v (the run's %v)", all.Required, required, all.MeanWait, r.MeanWait)
	}
	// Each group's level, recomputed from its nodes, adds up to the rows.
	var at [3]int
	for i := range w.Groups {
		var on []*NodeSpec
		for _, n := range r.Jobs[i].Nodes {
			n := byName[n]
			on = append(on, &n)
		}
		if l := GroupLevel(w.TopologyLevels, on); l >= 0 {
			at[l]++
		}
	}
	if at[zone] != all.AtLevel[zone] || at[block] != all.AtLevel[block] || at[rack] != all.AtLevel[rack] {
		t.Errorf("levels from the nodes %v, summary %v", at, all.AtLevel)
	}
	t.Logf("fluence (easy): makespan %.1f s, mean wait %.1f s; by level zone/block/rack/anywhere:", r.Makespan, r.MeanWait)
	for _, row := range s.Rows {
		t.Logf("  %-15s %2d groups: %v, anywhere %d; within required domain %d/%d", row.Label(), row.Groups, row.AtLevel, row.Anywhere, row.Within, row.Required)
	}
}

// The workload is deterministic, fits its domains and survives the native
// format: written and read back, it is the same workload.
func TestTopologyFragmentedWorkload(t *testing.T) {
	w := TopologyFragmentedWorkload()
	if !reflect.DeepEqual(w, TopologyFragmentedWorkload()) {
		t.Fatal("two builds differ")
	}
	if len(w.Cluster.Nodes) != 64 {
		t.Fatalf("%d nodes", len(w.Cluster.Nodes))
	}
	domains := map[string]map[string]int{} // key -> value -> nodes
	for _, n := range w.Cluster.Nodes {
		for _, k := range w.TopologyLevels {
			if domains[k] == nil {
				domains[k] = map[string]int{}
			}
			domains[k][n.Labels[k]]++
		}
	}
	if len(domains[ZoneLabelKey]) != 2 || len(domains[BlockLabelKey]) != 4 || len(domains[RackLabelKey]) != 16 {
		t.Errorf("domains: %d zones, %d blocks, %d racks", len(domains[ZoneLabelKey]), len(domains[BlockLabelKey]), len(domains[RackLabelKey]))
	}
	sizes, hetero := map[int]bool{}, 0
	for _, g := range w.Groups {
		sizes[g.Size()] = true
		for _, p := range g.Pods {
			if p != g.Pods[0] {
				hetero++
				break
			}
		}
		if g.Duration < g.Runtime+g.ReleaseDelay {
			t.Errorf("%s declares %v s, holds %v s", g.Name, g.Duration, g.Hold())
		}
		// Every pod fits an empty node; a group's cores fit its domain.
		var cores int64
		for _, p := range g.Pods {
			cores += p.CPU
			if p.CPU > 8000 {
				t.Errorf("%s: a pod of %dm fits no node", g.Name, p.CPU)
			}
		}
		if key := g.TopologyRequired; key != "" {
			nodes := 0
			for _, n := range domains[key] {
				nodes = max(nodes, n)
			}
			if cores > int64(nodes)*8000 {
				t.Errorf("%s: %dm cannot fit a %s of %d nodes", g.Name, cores, key, nodes)
			}
		}
	}
	if !sizes[2] || !sizes[16] || hetero < 6 {
		t.Errorf("sizes %v, %d heterogeneous groups", sizes, hetero)
	}
	data, err := MarshalWorkload(w)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseWorkload(data, LoadOptions{})
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if !reflect.DeepEqual(back, w) {
		t.Errorf("round trip differs\n got %+v\nwant %+v", back, w)
	}
}

func TestParseNativeTopology(t *testing.T) {
	const doc = `
topology_levels: [zone, example.com/rack]
cluster:
  nodes:
    - {name: a, count: 2, cpu: 4, labels: {zone: z1, example.com/rack: r1}}
    - {name: b, count: 2, cpu: 4, labels: {zone: z1, example.com/rack: r2}}
groups:
  - {name: req, pods: 2, cpu: 1, runtime: 5, topology_required: example.com/rack}
  - {name: pref, pods: 2, cpu: 1, runtime: 5, topology_preferred: zone}
  - {name: free, pods: 2, cpu: 1, runtime: 5}
`
	w, err := ParseWorkload([]byte(doc), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w.TopologyLevels, []string{"zone", "example.com/rack"}) {
		t.Errorf("levels %v", w.TopologyLevels)
	}
	g := w.Groups
	if g[0].TopologyRequired != "example.com/rack" || g[0].TopologyPreferred != "" ||
		g[1].TopologyPreferred != "zone" || g[1].TopologyRequired != "" || g[2].TopologyRequired != "" || g[2].TopologyPreferred != "" {
		t.Errorf("groups %+v", g)
	}
	if !HasTopology(w) || HasTopology(BackfillWorkload()) {
		t.Error("HasTopology")
	}
	// The groups reach the core: the fluence model sets them on the ids.
	f := &fluence{}
	if id := f.groupID(&Group{Spec: &g[0]}); id.TopologyKey != "example.com/rack" || id.TopologyPreferred != "" {
		t.Errorf("required: id %+v", id)
	}
	if id := f.groupID(&Group{Spec: &g[1]}); id.TopologyKey != "" || id.TopologyPreferred != "zone" {
		t.Errorf("preferred: id %+v", id)
	}
}

func TestParseNativeTopologyErrors(t *testing.T) {
	const nodes = "cluster: {nodes: [{name: a, count: 2, cpu: 4, labels: {zone: z1, rack: r1}}]}\n"
	const group = "{name: j, pods: 1, cpu: 1, runtime: 1"
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"both", nodes + "groups: [" + group + ", topology_required: rack, topology_preferred: zone}]\n",
			[]string{`groups[0]: group "j": gives both topology_required (rack) and topology_preferred (zone)`}},
		{"required key on no node", nodes + "groups: [" + group + ", topology_required: rakc}]\n",
			[]string{`groups[0].topology_required: group "j": label key "rakc" is on no node of the cluster (node labels: rack, zone)`}},
		{"preferred key on no node", nodes + "groups: [" + group + ", topology_preferred: example.com/block}]\n",
			[]string{`groups[0].topology_preferred: group "j": label key "example.com/block" is on no node`}},
		{"empty key", nodes + "groups: [" + group + ", topology_required: \"\"}]\n",
			[]string{`groups[0].topology_required: group "j": must name a node label key`}},
		{"key not a string", nodes + "groups: [" + group + ", topology_required: [rack]}]\n",
			[]string{`groups[0].topology_required: must be a string, got a list`}},
		{"level twice", nodes + "topology_levels: [zone, rack, zone]\ngroups: [" + group + "}]\n",
			[]string{`topology_levels[2]: level "zone" is listed twice (also topology_levels[0])`}},
		{"level on no node", nodes + "topology_levels: [zone, block]\ngroups: [" + group + "}]\n",
			[]string{`topology_levels[1]: label key "block" is on no node of the cluster`}},
		{"level empty", nodes + "topology_levels: [\"\"]\ngroups: [" + group + "}]\n",
			[]string{`topology_levels[0]: must not be empty`}},
		{"level without a name", nodes + "topology_levels: [example.com/]\ngroups: [" + group + "}]\n",
			[]string{`topology_levels[0]: label key "example.com/" has no name after its prefix`}},
		{"no levels", nodes + "topology_levels: []\ngroups: [" + group + "}]\n",
			[]string{`topology_levels: must list at least one node label key`}},
		{"levels not a list", nodes + "topology_levels: zone\ngroups: [" + group + "}]\n",
			[]string{`topology_levels: must be a list`}},
		{"misspelt key", nodes + "groups: [" + group + ", topologyRequired: rack}]\n",
			[]string{`groups[0].topologyRequired: unknown key`, "topology_required"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := ParseWorkload([]byte(tc.yaml), LoadOptions{})
			if err == nil {
				t.Fatalf("accepted: %+v", w)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q\ndoes not contain %q", err, s)
				}
			}
			var we *WorkloadError
			if !errors.As(err, &we) {
				t.Errorf("not a *WorkloadError: %#v", err)
			}
		})
	}
}

// A level is held only when the nodes share its value and every outer
// level's: a rack value repeated under two blocks is two racks.
func TestGroupLevel(t *testing.T) {
	levels := []string{"zone", "block", "rack"}
	node := func(z, b, r string) *NodeSpec {
		l := map[string]string{}
		for k, v := range map[string]string{"zone": z, "block": b, "rack": r} {
			if v != "" {
				l[k] = v
			}
		}
		return &NodeSpec{Labels: l}
	}
	tests := []struct {
		name  string
		nodes []*NodeSpec
		want  int
	}{
		{"one node", []*NodeSpec{node("z1", "b1", "r1")}, 2},
		{"one rack", []*NodeSpec{node("z1", "b1", "r1"), node("z1", "b1", "r1")}, 2},
		{"one block", []*NodeSpec{node("z1", "b1", "r1"), node("z1", "b1", "r2")}, 1},
		{"one zone", []*NodeSpec{node("z1", "b1", "r1"), node("z1", "b2", "r1")}, 0},
		{"two zones", []*NodeSpec{node("z1", "b1", "r1"), node("z2", "b1", "r1")}, Anywhere},
		{"no rack label", []*NodeSpec{node("z1", "b1", ""), node("z1", "b1", "")}, 1},
		{"no labels", []*NodeSpec{node("", "", "")}, Anywhere},
		{"no nodes", nil, Anywhere},
	}
	for _, tc := range tests {
		if got := GroupLevel(levels, tc.nodes); got != tc.want {
			t.Errorf("%s: level %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The fluence model's own levels win over the workload's.
func TestFluenceTopologyLevelsOverride(t *testing.T) {
	w := TopologyFragmentedWorkload()
	w.Groups = w.Groups[:3]
	s, err := NewFluence(FluenceConfig{TopologyLevels: []string{RackLabelKey}, Queue: queue.Config{Policy: queue.Easy}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(w, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := s.(*fluence)
	if f.fromWorkload || !reflect.DeepEqual(f.levels, []string{RackLabelKey}) || strings.Contains(r.Config, "the workload's") {
		t.Errorf("levels %v (from the workload: %v); config %q", f.levels, f.fromWorkload, r.Config)
	}
	if r.JobsCompleted != 3 {
		t.Errorf("%d of 3 completed", r.JobsCompleted)
	}
}
