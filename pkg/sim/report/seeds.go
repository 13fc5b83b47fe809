package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/fluence-sched/fluence/pkg/sim"
)

// SeedLegend is printed under the seed table.
const SeedLegend = `Each cell: mean (min-max) over the seeds. Makespan, best bound and makespan/best count only ` +
	`the seeds where every job completed (their number is in COMPLETE); "(model)" marks models of peer schedulers. ` +
	`Best bound and makespan/best as in the single-seed table.`

// Spread is the mean, least and largest of a set of values.
type Spread struct {
	N              int
	Mean, Min, Max float64
}

// SpreadOf summarises the finite values of xs.
func SpreadOf(xs []float64) Spread {
	s := Spread{Min: math.Inf(1), Max: math.Inf(-1)}
	sum := 0.0
	for _, x := range xs {
		if !finite(x) {
			continue
		}
		s.N++
		sum += x
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
	}
	if s.N == 0 {
		return Spread{Mean: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	s.Mean = sum / float64(s.N)
	return s
}

// format writes "mean (min-max)" with the given verb, "-" when empty,
// and the mean alone when every value is the same.
func (s Spread) format(verb string) string {
	if s.N == 0 {
		return "-"
	}
	if s.Min == s.Max {
		return fmt.Sprintf(verb, s.Mean)
	}
	return fmt.Sprintf(verb+" ("+verb+"-"+verb+")", s.Mean, s.Min, s.Max)
}

// SeedRow is one scheduler's outcome over every seed.
type SeedRow struct {
	Scheduler string
	Model     bool
	Config    string
	Seeds     int
	// Complete counts the seeds where every job completed (or was
	// rejected); Stalled those that stalled.
	Complete, Stalled int
	Completed         Spread // jobs completed
	Makespan          Spread // complete seeds only
	BestBound         Spread
	BestRatio         Spread // complete seeds only
	MeanWait          Spread
	MaxWait           Spread
}

// SeedRows summarises runs per scheduler: runs[i] are the results of seed
// i, every seed with the same schedulers in the same order.
func SeedRows(runs [][]*sim.Result) ([]SeedRow, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	n := len(runs[0])
	for i, rs := range runs {
		if err := checkResults(rs); err != nil {
			return nil, err
		}
		if len(rs) != n {
			return nil, fmt.Errorf("report: seed %d has %d results, the first has %d", i, len(rs), n)
		}
		for j, r := range rs {
			if r.Scheduler != runs[0][j].Scheduler {
				return nil, fmt.Errorf("report: seed %d, result %d is %s, not %s", i, j, r.Scheduler, runs[0][j].Scheduler)
			}
		}
	}
	rows := make([]SeedRow, n)
	for j := range n {
		first := runs[0][j]
		row := SeedRow{Scheduler: first.Scheduler, Model: first.Model, Config: first.Config, Seeds: len(runs)}
		var completed, makespan, bound, ratio, meanWait, maxWait []float64
		for _, rs := range runs {
			r := rs[j]
			completed = append(completed, float64(r.JobsCompleted))
			if best, _ := r.Bounds.Best(); best > 0 {
				bound = append(bound, best)
			}
			if r.Stalled {
				row.Stalled++
			}
			meanWait = append(meanWait, r.MeanWait)
			maxWait = append(maxWait, r.MaxWait)
			if r.JobsCompleted > 0 && r.JobsCompleted+r.JobsRejected == r.JobsTotal {
				row.Complete++
				makespan = append(makespan, r.Makespan)
				ratio = append(ratio, r.BestRatio())
			}
		}
		row.Completed, row.Makespan, row.BestBound = SpreadOf(completed), SpreadOf(makespan), SpreadOf(bound)
		row.BestRatio, row.MeanWait, row.MaxWait = SpreadOf(ratio), SpreadOf(meanWait), SpreadOf(maxWait)
		rows[j] = row
	}
	return rows, nil
}

// SeedTable writes one row per scheduler summarising its runs over every
// seed: runs[i] holds seed seeds[i]'s results (see SeedRows).
func SeedTable(w io.Writer, wl *sim.Workload, seeds []uint, runs [][]*sim.Result) error {
	rows, err := SeedRows(runs)
	if err != nil {
		return err
	}
	var flat []*sim.Result
	for _, rs := range runs {
		flat = append(flat, rs...)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "workload %s%s\n", workloadName(wl, flat), workloadShape(wl))
	fmt.Fprintf(&b, "seeds %s: %d runs per scheduler\n\n", seedList(seeds), len(runs))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCHEDULER\tCOMPLETE\tSTALLED\tJOBS COMPLETED\tMAKESPAN (s)\tBEST BOUND (s)\tMAKESPAN/BEST\tMEAN WAIT (s)\tMAX WAIT (s)\tCONFIG")
	for _, r := range rows {
		name := r.Scheduler
		if r.Model {
			name += " (model)"
		}
		fmt.Fprintf(tw, "%s\t%d of %d\t%d of %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, r.Complete, r.Seeds, r.Stalled, r.Seeds,
			r.Completed.format("%.1f"), r.Makespan.format("%.1f"), r.BestBound.format("%.1f"), r.BestRatio.format("%.3f"),
			r.MeanWait.format("%.1f"), r.MaxWait.format("%.1f"), oneLine(r.Config))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n" + SeedLegend + "\n" + Legend + "\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// seedList is "1-10" for a run of consecutive seeds, else "1, 3, 7".
func seedList(seeds []uint) string {
	if len(seeds) == 0 {
		return "-"
	}
	consecutive := true
	for i := 1; i < len(seeds); i++ {
		consecutive = consecutive && seeds[i] == seeds[i-1]+1
	}
	if consecutive && len(seeds) > 2 {
		return fmt.Sprintf("%d-%d", seeds[0], seeds[len(seeds)-1])
	}
	parts := make([]string, len(seeds))
	for i, s := range seeds {
		parts[i] = fmt.Sprint(s)
	}
	return strings.Join(parts, ", ")
}
