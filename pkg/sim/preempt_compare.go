package sim

import (
	"math"
	"slices"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// The preemption comparison: for a workload whose groups have different
// priorities (HasPriorities), what preemption buys the most urgent
// groups and what it costs the others, under fluence (whole groups) and
// the stock model (pod by pod).

// DefaultPreemption is the scheduler's default preemption block
// (pkg/plugin: after 60 s, minRuntime 0 s, timeout 2 m): a waiting group
// preempts when its reserved start is more than a minute away.
var DefaultPreemption = gang.Preemption{After: 60, MinRuntime: 0, Timeout: 120}

// HasPriorities reports whether the workload's groups have more than one
// priority.
func HasPriorities(w *Workload) bool {
	if w == nil || len(w.Groups) == 0 {
		return false
	}
	p := w.Groups[0].Priority
	for i := range w.Groups {
		if w.Groups[i].Priority != p {
			return true
		}
	}
	return false
}

// PreemptionSetup configures the comparison.
type PreemptionSetup struct {
	// Fluence is the fluence configuration; its Preemption is ignored.
	Fluence FluenceConfig
	// Preemption is the fluence rows' with preemption.
	Preemption gang.Preemption
	// Stock is the stock model's options; Preemption is set by the rows.
	Stock StockOptions
	// EvictionGrace is every row's (0: DefaultEvictionGrace).
	EvictionGrace float64
}

// PreemptionRun is one row of the comparison.
type PreemptionRun struct {
	// Label names the scheduler and whether it preempts.
	Label   string
	Result  *Result
	Summary PreemptionSummary
}

// ComparePreemption runs the workload under fluence without and with
// preemption and the stock model without and with its pod-by-pod
// preemption.
func ComparePreemption(w *Workload, setup PreemptionSetup, opts Options) ([]PreemptionRun, error) {
	plain := setup.Fluence
	plain.Preemption = nil
	withP := setup.Fluence
	p := setup.Preemption
	withP.Preemption, withP.EvictionGrace = &p, setup.EvictionGrace
	stock := setup.Stock
	stock.Preemption = false
	stockP := setup.Stock
	stockP.Preemption, stockP.EvictionGrace = true, setup.EvictionGrace

	return runPreemptionRows(w, []preemptionRow{
		{label: "fluence, no preemption", make: func() (Scheduler, error) { return NewFluence(plain) }},
		{label: "fluence, preemption", make: func() (Scheduler, error) { return NewFluence(withP) }},
		{label: "stock (model), no preemption", make: func() (Scheduler, error) { return NewStockWith(stock), nil }},
		{label: "stock (model), pod-by-pod preemption", make: func() (Scheduler, error) { return NewStockWith(stockP), nil }},
	}, opts)
}

// preemptionRow is one row of a comparison: its scheduler, and the
// workload it runs when not the compared one (a variant of it, whose
// groups are the same, in the same order).
type preemptionRow struct {
	label string
	make  func() (Scheduler, error)
	run   *Workload
}

// runPreemptionRows runs each row and summarizes it against w: the
// urgent groups, and whether each ran within its domain, are w's.
func runPreemptionRows(w *Workload, rows []preemptionRow, opts Options) ([]PreemptionRun, error) {
	var out []PreemptionRun
	for _, row := range rows {
		s, err := row.make()
		if err != nil {
			return nil, err
		}
		rw := w
		if row.run != nil {
			rw = row.run
		}
		r, err := Run(rw, s, opts)
		if err != nil {
			return nil, err
		}
		sum := SummarizePreemption(r)
		sum.Moves = Moves(Preemptions(s))
		if err := sum.urgentWithin(w, r); err != nil {
			return nil, err
		}
		out = append(out, PreemptionRun{Label: row.label, Result: r, Summary: sum})
	}
	return out, nil
}

// PreemptionSummary is what a run did for its most urgent groups, and
// what preemption cost.
type PreemptionSummary struct {
	// Urgent are the groups of the highest priority (when the groups have
	// more than one); UrgentStarted those that started, and their mean
	// and longest wait, arrival to the start of the run that completed
	// (NaN when none started).
	UrgentPriority         int64
	Urgent, UrgentStarted  int
	UrgentMean, UrgentMax  float64
	Completed, Total       int
	Stalled                bool
	StalledAt              float64
	Makespan               float64 // NaN unless every group completed
	Evictions, EvictedPods int
	// WorkLost is the pod-seconds of runs cut short, Work all the work
	// (pods x runtime), LostShare their ratio.
	WorkLost, Work, LostShare float64
	// EvictedInPart counts evictions that left the rest of a group bound;
	// PartialMax is the most groups bound in part at once.
	EvictedInPart, PartialMax int
	// Moves counts the victims fluence moved (they fitted elsewhere).
	Moves int
	// UrgentRequired counts the urgent groups that started and, in the
	// compared workload, require a domain; UrgentWithin those of them
	// whose pods all ran within one domain of their key (preempt_rack.go).
	UrgentRequired, UrgentWithin int
}

// SummarizePreemption summarizes a run for the preemption comparison.
func SummarizePreemption(r *Result) PreemptionSummary {
	s := PreemptionSummary{
		UrgentMean: math.NaN(), UrgentMax: math.NaN(), Makespan: math.NaN(),
		Completed: r.JobsCompleted, Total: r.JobsTotal, Stalled: r.Stalled, StalledAt: r.StalledAt,
		Evictions: r.Evictions, EvictedPods: r.EvictedPods, WorkLost: r.WorkLost, Work: r.Work,
		EvictedInPart: r.EvictedInPart, PartialMax: r.PartialMax,
	}
	if r.Work > 0 {
		s.LostShare = r.WorkLost / r.Work
	}
	if !r.Stalled && r.JobsCompleted > 0 && r.JobsCompleted+r.JobsRejected == r.JobsTotal {
		s.Makespan = r.Makespan
	}
	prios := map[int64]bool{}
	for _, j := range r.Jobs {
		prios[j.Priority] = true
	}
	if len(prios) < 2 {
		return s
	}
	keys := make([]int64, 0, len(prios))
	for p := range prios {
		keys = append(keys, p)
	}
	s.UrgentPriority = slices.Max(keys)
	var sum float64
	for _, j := range r.Jobs {
		if j.Priority != s.UrgentPriority {
			continue
		}
		s.Urgent++
		if j.Start < 0 {
			continue
		}
		w := j.Start - j.Submit
		sum += w
		if s.UrgentStarted == 0 || w > s.UrgentMax {
			s.UrgentMax = w
		}
		s.UrgentStarted++
	}
	if s.UrgentStarted > 0 {
		s.UrgentMean = sum / float64(s.UrgentStarted)
	}
	return s
}
