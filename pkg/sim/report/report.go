// Package report turns simulator results into what `fluence sim` shows and
// writes: a comparison table, a JSON summary, per-job and timeline files,
// and plots.
//
// Every output names model schedulers as models ("stock (model)"): the
// simulator's stock, coscheduling and quota schedulers are models of those
// peers, not the peers themselves, and a reader must never mistake one for
// a measurement. Measured outcomes, when the workload carries them, are
// shown beside the simulated ones and labelled "measured".
package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/fluence-sched/fluence/pkg/sim"
)

// displayName is the scheduler's name as every output shows it.
func displayName(r *sim.Result) string {
	if r.Model {
		return r.Scheduler + " (model)"
	}
	return r.Scheduler
}

// finite reports whether f is a usable number (JSON cannot carry NaN/Inf).
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// num is f as a JSON value: nil (null) when f is NaN or infinite, else f
// rounded to 1e-6 (microseconds, for times) so float noise such as
// 2.2800000000000002 does not reach the files.
func num(f float64) *float64 {
	if !finite(f) {
		return nil
	}
	if math.Abs(f) < 1e15 { // beyond, f*1e6 loses nothing worth rounding
		f = math.Round(f*1e6) / 1e6
	}
	return &f
}

// numPtr is like num for an optional value.
func numPtr(f *float64) *float64 {
	if f == nil {
		return nil
	}
	return num(*f)
}

func intp(i int) *int { return &i }

// positive is num(f) for a bound: null when not computed (0).
func positive(f float64) *float64 {
	if f <= 0 {
		return nil
	}
	return num(f)
}

// seconds formats a duration for the table; "-" when unknown.
func seconds(f float64) string {
	if !finite(f) {
		return "-"
	}
	return fmt.Sprintf("%.1f", f)
}

// measuredFor is the measured outcome recorded for r's scheduler, if any.
func measuredFor(wl *sim.Workload, r *sim.Result) (sim.Measured, bool) {
	if wl == nil || wl.Measured == nil {
		return sim.Measured{}, false
	}
	m, ok := wl.Measured[r.Scheduler]
	return m, ok
}

// workloadName prefers the workload's own name, falling back to what the
// results recorded so callers may pass a nil workload.
func workloadName(wl *sim.Workload, results []*sim.Result) string {
	if wl != nil && wl.Name != "" {
		return wl.Name
	}
	for _, r := range results {
		if r != nil && r.Workload != "" {
			return r.Workload
		}
	}
	return "workload"
}

// checkResults rejects nil results up front so every writer can assume
// non-nil ones.
func checkResults(results []*sim.Result) error {
	for i, r := range results {
		if r == nil {
			return fmt.Errorf("report: result %d is nil", i)
		}
	}
	return nil
}

// fileStems gives each result a file-name-safe stem, unique even when two
// results share a scheduler name (e.g. fluence under two policies), so no
// output overwrites another.
func fileStems(results []*sim.Result) []string {
	stems := make([]string, len(results))
	seen := map[string]int{}
	for i, r := range results {
		base := sanitize(r.Scheduler)
		stem := base
		for n := 2; seen[stem] > 0; n++ {
			stem = fmt.Sprintf("%s-%d", base, n)
		}
		seen[stem]++
		stems[i] = stem
	}
	return stems
}

// sanitize keeps letters, digits, '.', '_' and '-' so a scheduler name is
// safe as part of a file name on any OS.
func sanitize(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 || strings.Trim(b.String(), ".") == "" {
		return "scheduler"
	}
	return b.String()
}
