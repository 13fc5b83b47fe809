package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Where groups ran, by topology level: the report of a workload whose
// groups ask for topology domains. Everything here is derived from the
// nodes each group's pods were bound to and those nodes' labels, never
// from what a scheduler said about its placement, so fluence and the
// models are measured alike.

// HasTopology reports whether the workload names topology levels or has
// a group that asks for a domain.
func HasTopology(w *Workload) bool {
	if w == nil {
		return false
	}
	if len(w.TopologyLevels) > 0 {
		return true
	}
	for i := range w.Groups {
		if w.Groups[i].TopologyRequired != "" || w.Groups[i].TopologyPreferred != "" {
			return true
		}
	}
	return false
}

// ReportLevels are the levels a topology report measures, outermost first:
// the workload's, else the keys its groups name, ordered by how many
// domains each has (fewest, the widest, first; then by key).
func ReportLevels(w *Workload) []string {
	if len(w.TopologyLevels) > 0 {
		return slices.Clone(w.TopologyLevels)
	}
	var keys []string
	for i := range w.Groups {
		for _, k := range []string{w.Groups[i].TopologyRequired, w.Groups[i].TopologyPreferred} {
			if k != "" && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	domains := map[string]int{}
	for _, k := range keys {
		values := map[string]bool{}
		for _, n := range allNodes(w) {
			if v := n.Labels[k]; v != "" {
				values[v] = true
			}
		}
		domains[k] = len(values)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if domains[a] != domains[b] {
			return domains[a] - domains[b]
		}
		return strings.Compare(a, b)
	})
	return keys
}

// allNodes is the workload's cluster and the nodes that join it.
func allNodes(w *Workload) []NodeSpec {
	out := slices.Clone(w.Cluster.Nodes)
	for _, a := range w.NodeArrivals {
		out = append(out, a.Node)
	}
	return out
}

// nodeIndex is the workload's nodes (allNodes) by name.
func nodeIndex(w *Workload) map[string]*NodeSpec {
	byName := map[string]*NodeSpec{}
	nodes := allNodes(w)
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	return byName
}

// jobNodes is the nodes a job's pods ran on, in pod order, found in
// byName (nodeIndex of w).
func jobNodes(w *Workload, byName map[string]*NodeSpec, j *JobResult) ([]*NodeSpec, error) {
	on := make([]*NodeSpec, len(j.Nodes))
	for p, name := range j.Nodes {
		if on[p] = byName[name]; on[p] == nil {
			return nil, fmt.Errorf("sim: group %s ran on node %q, which workload %s does not have", j.Name, name, w.Name)
		}
	}
	return on, nil
}

// LevelName is the short name of a level's label key: the part after its
// prefix (example.com/rack is "rack").
func LevelName(key string) string { return key[strings.LastIndex(key, "/")+1:] }

// Anywhere is the level of a group no single domain of any level held.
const Anywhere = -1

// GroupLevel returns the innermost level (an index into levels, outermost
// first) such that the nodes share one value of its label and of every
// level outside it: the tightest domain that held them all. A rack value
// repeated under two blocks is two racks, so a group across them is not
// "within a rack". Anywhere (-1) when no level holds them, or when a node
// lacks a label.
func GroupLevel(levels []string, nodes []*NodeSpec) int {
	best := Anywhere
	for l, key := range levels {
		if !sharedValue(key, nodes) {
			break
		}
		best = l
	}
	return best
}

// sharedValue reports whether every node carries the label key with one
// and the same non-empty value.
func sharedValue(key string, nodes []*NodeSpec) bool {
	if len(nodes) == 0 {
		return false
	}
	v := nodes[0].Labels[key]
	if v == "" {
		return false
	}
	for _, n := range nodes[1:] {
		if n.Labels[key] != v {
			return false
		}
	}
	return true
}

// TopologyRow is what happened to the groups of one constraint kind (or
// to all groups: Kind "all").
type TopologyRow struct {
	// Kind is "required", "preferred", "none" or "all"; Key the label
	// key of required and preferred.
	Kind, Key string
	Groups    int
	// Placed counts groups that started: every pod bound; Rejected those
	// the scheduler refused for good.
	Placed, Rejected int
	// AtLevel counts placed groups by the tightest level that held them,
	// indexed like TopologySummary.Levels (outermost first); Anywhere the
	// rest.
	AtLevel  []int
	Anywhere int
	// Required counts the placed groups that asked for a domain (on the
	// "all" row: all such groups), Within those of them whose pods all
	// shared one value of their key (the check that must be 100%).
	Required, Within int
	// MeanWait is the mean arrival-to-start time of the placed groups,
	// NaN when none was placed.
	MeanWait float64
}

// Label is the row's name as a table shows it: "required rack",
// "preferred block", "none", "all".
func (r TopologyRow) Label() string {
	if r.Key == "" {
		return r.Kind
	}
	return r.Kind + " " + LevelName(r.Key)
}

// TopologySummary is one run's placements by topology level.
type TopologySummary struct {
	// Levels are the label keys measured, outermost first.
	Levels []string
	// Rows: all groups first, then required kinds, then preferred ones
	// (each innermost level first), then unconstrained groups.
	Rows []TopologyRow
}

// SummarizeTopology measures where the result's groups ran: for each
// constraint kind, how many groups of it were placed, the tightest level
// that held each, and, for required ones, whether it ran within one
// domain of its key. The result must be a run of the workload.
func SummarizeTopology(w *Workload, r *Result) (TopologySummary, error) {
	if len(r.Jobs) != len(w.Groups) {
		return TopologySummary{}, fmt.Errorf("sim: the result has %d jobs, workload %s %d groups", len(r.Jobs), w.Name, len(w.Groups))
	}
	levels := ReportLevels(w)
	byName := nodeIndex(w)
	rank := func(key string) int { // innermost level first, unknown keys after
		if i := slices.Index(levels, key); i >= 0 {
			return len(levels) - 1 - i
		}
		return len(levels)
	}
	row := func(kind, key string) TopologyRow {
		return TopologyRow{Kind: kind, Key: key, AtLevel: make([]int, len(levels)), MeanWait: math.NaN()}
	}
	all := row("all", "")
	kinds := map[[2]string]*TopologyRow{}
	var order [][2]string
	waits := map[*TopologyRow]float64{}
	for i := range w.Groups {
		g, j := &w.Groups[i], &r.Jobs[i]
		if g.Name != j.Name {
			return TopologySummary{}, fmt.Errorf("sim: job %d of the result is %s, group %d of workload %s is %s", i, j.Name, i, w.Name, g.Name)
		}
		k := [2]string{"none", ""}
		switch {
		case g.TopologyRequired != "":
			k = [2]string{"required", g.TopologyRequired}
		case g.TopologyPreferred != "":
			k = [2]string{"preferred", g.TopologyPreferred}
		}
		kr := kinds[k]
		if kr == nil {
			nr := row(k[0], k[1])
			kr = &nr
			kinds[k] = kr
			order = append(order, k)
		}
		for _, tr := range []*TopologyRow{&all, kr} {
			tr.Groups++
			if j.Rejected {
				tr.Rejected++
			}
		}
		if j.Start < 0 {
			continue
		}
		on, err := jobNodes(w, byName, j)
		if err != nil {
			return TopologySummary{}, err
		}
		level := GroupLevel(levels, on)
		within := g.TopologyRequired != "" && sharedValue(g.TopologyRequired, on)
		for _, tr := range []*TopologyRow{&all, kr} {
			tr.Placed++
			waits[tr] += j.Start - j.Submit
			if level == Anywhere {
				tr.Anywhere++
			} else {
				tr.AtLevel[level]++
			}
			if g.TopologyRequired != "" {
				tr.Required++
				if within {
					tr.Within++
				}
			}
		}
	}
	kindRank := map[string]int{"required": 0, "preferred": 1, "none": 2}
	slices.SortFunc(order, func(a, b [2]string) int {
		if kindRank[a[0]] != kindRank[b[0]] {
			return kindRank[a[0]] - kindRank[b[0]]
		}
		if rank(a[1]) != rank(b[1]) {
			return rank(a[1]) - rank(b[1])
		}
		return strings.Compare(a[1], b[1])
	})
	rows := []*TopologyRow{&all}
	for _, k := range order {
		rows = append(rows, kinds[k])
	}
	s := TopologySummary{Levels: levels}
	for _, tr := range rows {
		if tr.Placed > 0 {
			tr.MeanWait = waits[tr] / float64(tr.Placed)
		}
		s.Rows = append(s.Rows, *tr)
	}
	return s, nil
}
