package report

import (
	"encoding/json"
	"io"

	"github.com/fluence-sched/fluence/pkg/sim"
)

// Summary is one scheduler's outcome in the JSON summary. Pointer fields
// are null when the value does not exist (no stall, nothing completed) or
// is not a number: JSON has no NaN, and a null says "unknown" honestly
// where a 0 would read as a measurement.
type Summary struct {
	Scheduler          string           `json:"scheduler"`
	Model              bool             `json:"model"`
	Config             string           `json:"config"`
	Workload           string           `json:"workload"`
	JobsTotal          int              `json:"jobs_total"`
	JobsCompleted      int              `json:"jobs_completed"`
	JobsRejected       int              `json:"jobs_rejected"`
	Stalled            bool             `json:"stalled"`
	StalledAt          *float64         `json:"stalled_at"`
	PendingPodsAtStall *int             `json:"pending_pods_at_stall"`
	RunningPodsAtStall *int             `json:"running_pods_at_stall"`
	JobsHoldingAtStall *int             `json:"jobs_holding_at_stall"`
	Makespan           *float64         `json:"makespan"`
	MakespanLowerBound *float64         `json:"makespan_lower_bound"`
	MakespanBoundRatio *float64         `json:"makespan_bound_ratio"`
	Bounds             BoundsSummary    `json:"bounds"`
	BestBound          *float64         `json:"best_bound"`
	BestBoundRatio     *float64         `json:"best_bound_ratio"`
	MaxWait            *float64         `json:"max_wait"`
	MeanTurnaround     *float64         `json:"mean_turnaround"`
	MeanWait           *float64         `json:"mean_wait"`
	TotalCPU           int64            `json:"total_cpu_millicores"`
	SimulatedUntil     *float64         `json:"simulated_until"`
	Steps              int              `json:"steps"`
	Measured           *MeasuredSummary `json:"measured"`
}

// BoundsSummary is sim.Bounds: each lower bound in seconds, null when
// not computed (packing_skipped says why for the packing bound).
type BoundsSummary struct {
	Runtime        *float64 `json:"runtime"`
	Hold           *float64 `json:"hold"`
	Packing        *float64 `json:"packing"`
	PackingSkipped string   `json:"packing_skipped,omitempty"`
	Best           string   `json:"best"`
}

// MeasuredSummary is sim.Measured in snake_case, with NaN turned to null.
type MeasuredSummary struct {
	Config         string   `json:"config"`
	JobsCompleted  int      `json:"jobs_completed"`
	Clogged        *bool    `json:"clogged"`
	PendingAtClog  *int     `json:"pending_at_clog"`
	RunningAtClog  *int     `json:"running_at_clog"`
	Makespan       *float64 `json:"makespan"`
	MeanTurnaround *float64 `json:"mean_turnaround"`
	Notes          string   `json:"notes"`
}

// Summarize builds the summary rows, one per result, in the given order.
// wl may be nil (no measured outcomes then).
func Summarize(wl *sim.Workload, results []*sim.Result) ([]Summary, error) {
	if err := checkResults(results); err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(results))
	for _, r := range results {
		s := Summary{
			Scheduler: r.Scheduler, Model: r.Model, Config: r.Config, Workload: r.Workload,
			JobsTotal: r.JobsTotal, JobsCompleted: r.JobsCompleted, JobsRejected: r.JobsRejected,
			Stalled: r.Stalled, MakespanBoundRatio: num(r.BoundRatio()),
			MeanWait: num(r.MeanWait), MaxWait: num(r.MaxWait), BestBoundRatio: num(r.BestRatio()), TotalCPU: r.TotalCPU,
			SimulatedUntil: num(r.SimulatedUntil), Steps: r.Steps,
		}
		if r.Stalled {
			s.StalledAt = num(r.StalledAt)
			s.PendingPodsAtStall = intp(r.PendingAtStall)
			s.RunningPodsAtStall = intp(r.RunningAtStall)
			s.JobsHoldingAtStall = intp(r.JobsHoldingAtStall)
		}
		// Result.Makespan and MeanTurnaround are 0 / NaN when nothing
		// completed; both mean "no value".
		if r.JobsCompleted > 0 {
			s.Makespan = num(r.Makespan)
			s.MeanTurnaround = num(r.MeanTurnaround)
		}
		if r.LowerBound > 0 {
			s.MakespanLowerBound = num(r.LowerBound)
		}
		s.Bounds = BoundsSummary{Runtime: positive(r.Bounds.Runtime), Hold: positive(r.Bounds.Hold),
			Packing: positive(r.Bounds.Packing), PackingSkipped: r.Bounds.PackingSkipped}
		if best, name := r.Bounds.Best(); best > 0 {
			s.BestBound, s.Bounds.Best = num(best), name
		}
		if m, ok := measuredFor(wl, r); ok {
			s.Measured = &MeasuredSummary{
				Config: m.Config, JobsCompleted: m.JobsCompleted, Clogged: m.Clogged,
				PendingAtClog: m.PendingAtClog, RunningAtClog: m.RunningAtClog,
				Makespan: numPtr(m.Makespan), MeanTurnaround: numPtr(m.MeanTurnaround),
				Notes: m.Notes,
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// WriteJSONSummary writes one JSON array, one object per result (see
// Summary for the keys), indented, followed by a newline.
func WriteJSONSummary(w io.Writer, wl *sim.Workload, results []*sim.Result) error {
	rows, err := Summarize(wl, results)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// Config strings hold things like "a<b" or "&"; keep them readable.
	enc.SetEscapeHTML(false)
	return enc.Encode(rows)
}
