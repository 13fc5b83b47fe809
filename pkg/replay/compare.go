package replay

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/fluence-sched/fluence/pkg/sim"
)

// Comparison is one scheduler's live run beside the simulator's
// prediction of it; Sim is nil when there is no model (NoModel says why).
type Comparison struct {
	Scheduler string
	Live      *sim.Result
	Sim       *sim.Result
	NoModel   string
}

// CompareLegend is printed under the comparison table.
const CompareLegend = `live = the scheduler on a local API server, times from the pod events it received, scaled back by the compression; ` +
	`sim = the simulator's prediction of it on the same compressed workload; diff = live - sim ` +
	`(docs/design/005-live-demo.md explains each difference).`

// CompareTable writes the model check: per scheduler a live row, a sim
// row and their difference in jobs completed, stall, pods at the stall,
// makespan and mean turnaround. Results are in the workload's seconds
// (Scale).
func CompareTable(w io.Writer, title string, rows []Comparison) error {
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCHEDULER\tRUN\tCOMPLETED\tSTALLED\tPENDING/RUNNING AT STALL\tMAKESPAN (s)\tMEAN TURNAROUND (s)")
	var notes []string
	for _, c := range rows {
		if c.Live == nil {
			return fmt.Errorf("compare: no live result for %s", c.Scheduler)
		}
		fmt.Fprintf(tw, "%s\t%s\n", c.Scheduler, cells("live", c.Live))
		if c.Sim == nil {
			// The reason goes under the table: a long cell would widen
			// its column, and a line with fewer cells would split the
			// table's alignment in two.
			fmt.Fprintf(tw, "\tsim\tno model\t\t\t\t\n")
			notes = append(notes, fmt.Sprintf("%s: no model: %s.", c.Scheduler, c.NoModel))
			continue
		}
		fmt.Fprintf(tw, "\t%s\n", cells("sim", c.Sim))
		fmt.Fprintf(tw, "\t%s\n", diffCells(c.Live, c.Sim))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", title)
	for _, line := range strings.SplitAfter(table.String(), "\n") {
		if line != "" {
			b.WriteString(strings.TrimRight(line, " \n") + "\n") // empty cells pad with spaces
		}
	}
	b.WriteString("\n")
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
	b.WriteString(CompareLegend + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func cells(label string, r *sim.Result) string {
	stalled, at := "no", "-"
	if r.Stalled {
		stalled = fmt.Sprintf("yes, t=%.1fs", r.StalledAt)
		at = fmt.Sprintf("%d / %d", r.PendingAtStall, r.RunningAtStall)
	}
	return strings.Join([]string{label, fmt.Sprintf("%d/%d", r.JobsCompleted, r.JobsTotal), stalled, at,
		secs(r.Makespan, r.JobsCompleted), secs(r.MeanTurnaround, r.JobsCompleted)}, "\t")
}

func secs(v float64, completed int) string {
	if completed == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}

func diffCells(live, sim *sim.Result) string {
	stalled := "same"
	if live.Stalled != sim.Stalled {
		stalled = "differs"
	} else if live.Stalled {
		stalled = "same, " + signed(live.StalledAt-sim.StalledAt, "%.1f") + "s"
	}
	at := "-"
	if live.Stalled && sim.Stalled {
		at = signed(float64(live.PendingAtStall-sim.PendingAtStall), "%.0f") + " / " + signed(float64(live.RunningAtStall-sim.RunningAtStall), "%.0f")
	}
	return strings.Join([]string{"diff", signed(float64(live.JobsCompleted-sim.JobsCompleted), "%.0f"), stalled, at,
		relDiff(live.Makespan, sim.Makespan, live.JobsCompleted, sim.JobsCompleted),
		relDiff(live.MeanTurnaround, sim.MeanTurnaround, live.JobsCompleted, sim.JobsCompleted)}, "\t")
}

// signed formats v with its sign ("+3", "-1.5", "0").
func signed(v float64, format string) string {
	s := fmt.Sprintf(format, v)
	if zero := fmt.Sprintf(format, 0.0); strings.TrimPrefix(s, "-") == zero {
		return zero // -0.0 rounds to nothing
	}
	if v > 0 {
		return "+" + s
	}
	return s
}

// relDiff is "+12.3 (+4%)", or "-" when either side completed nothing.
func relDiff(live, sim float64, liveN, simN int) string {
	if liveN == 0 || simN == 0 || math.IsNaN(live) || math.IsNaN(sim) {
		return "-"
	}
	d := signed(live-sim, "%.1f")
	if sim == 0 {
		return d
	}
	return fmt.Sprintf("%s (%s%%)", d, signed(100*(live-sim)/sim, "%.0f"))
}
