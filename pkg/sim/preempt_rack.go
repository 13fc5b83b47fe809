package sim

import "fmt"

// The rack preemption comparison: a workload whose urgent groups must each
// run within one domain (a rack) of a packed cluster (PackedRackWorkload),
// under fluence's topology-aware preemption, the same with the groups'
// checkpoints and movability hidden from the core, and two preemptions
// that ignore topology: fluence's with every group's topology_required
// dropped (the urgent gang takes the cheapest room anywhere), and the
// stock model's pod by pod (which knows neither gangs nor domains).

// HasRackPreemption reports whether the workload's groups have more than
// one priority and some group of the highest requires a domain: the
// workloads the rack comparison is for.
func HasRackPreemption(w *Workload) bool {
	if !HasPriorities(w) {
		return false
	}
	top := w.Groups[0].Priority
	for i := range w.Groups {
		top = max(top, w.Groups[i].Priority)
	}
	for i := range w.Groups {
		if g := &w.Groups[i]; g.Priority == top && g.TopologyRequired != "" {
			return true
		}
	}
	return false
}

// Labels of the rack comparison's rows.
const (
	RackRowNone      = "fluence, no preemption"
	RackRowTopology  = "fluence, topology-aware preemption"
	RackRowHidden    = "fluence, topology-aware, checkpoints and moves hidden"
	RackRowAnywhere  = "fluence, preemption, rack requirement dropped"
	RackRowStockPods = "stock (model), pod-by-pod preemption"
)

// CompareRackPreemption runs the rack comparison's rows (RackRow*).
func CompareRackPreemption(w *Workload, setup PreemptionSetup, opts Options) ([]PreemptionRun, error) {
	plain := setup.Fluence
	plain.Preemption = nil
	withP := setup.Fluence
	p := setup.Preemption
	withP.Preemption, withP.EvictionGrace, withP.HideCheckpoints = &p, setup.EvictionGrace, false
	hidden := withP
	hidden.HideCheckpoints = true
	stockP := setup.Stock
	stockP.Preemption, stockP.EvictionGrace = true, setup.EvictionGrace
	return runPreemptionRows(w, []preemptionRow{
		{label: RackRowNone, make: func() (Scheduler, error) { return NewFluence(plain) }},
		{label: RackRowTopology, make: func() (Scheduler, error) { return NewFluence(withP) }},
		{label: RackRowHidden, make: func() (Scheduler, error) { return NewFluence(hidden) }},
		{label: RackRowAnywhere, make: func() (Scheduler, error) { return NewFluence(withP) }, run: WithoutRequiredTopology(w)},
		{label: RackRowStockPods, make: func() (Scheduler, error) { return NewStockWith(stockP), nil }},
	}, opts)
}

// WithoutRequiredTopology is a copy of the workload whose groups require
// no domain (topology_required dropped); all else is the same.
func WithoutRequiredTopology(w *Workload) *Workload {
	out := *w
	out.Groups = make([]GroupSpec, len(w.Groups))
	for i, g := range w.Groups {
		g.TopologyRequired = ""
		out.Groups[i] = g
	}
	return &out
}

// urgentWithin counts, of the run's urgent groups that started, those
// that require a domain in w and those of them that ran within one.
func (s *PreemptionSummary) urgentWithin(w *Workload, r *Result) error {
	if s.Urgent == 0 {
		return nil
	}
	if len(r.Jobs) != len(w.Groups) {
		return fmt.Errorf("sim: the result has %d jobs, workload %s %d groups", len(r.Jobs), w.Name, len(w.Groups))
	}
	byName := nodeIndex(w)
	for i := range w.Groups {
		g, j := &w.Groups[i], &r.Jobs[i]
		if j.Priority != s.UrgentPriority || g.TopologyRequired == "" || j.Start < 0 {
			continue
		}
		on, err := jobNodes(w, byName, j)
		if err != nil {
			return err
		}
		s.UrgentRequired++
		if sharedValue(g.TopologyRequired, on) {
			s.UrgentWithin++
		}
	}
	return nil
}
