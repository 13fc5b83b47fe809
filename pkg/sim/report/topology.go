package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/fluence-sched/fluence/pkg/sim"
)

// TopologyLegend is printed under the topology table.
const TopologyLegend = `Level columns: placed groups by the tightest level one domain of which (the nodes sharing one value of its label, ` +
	`and of every level outside it) held all their pods, read from the nodes each pod ran on and their labels, not from any scheduler's messages; ` +
	`ANYWHERE: no single domain of any level held them. A lone pod is always within its rack. ` +
	`WITHIN REQUIRED DOMAIN: placed groups with a required key whose pods all shared one value of it (for fluence it must be 100%). ` +
	`"(model)" schedulers place pod by pod without regard to topology: their columns show where that happened to put each group. ` +
	`Makespan as in the table above ("-" unless every job completed); mean wait: arrival to start of the placed groups of the row.`

// TopologyTable writes, for a workload with topology (sim.HasTopology),
// one block of rows per scheduler: every group, then each constraint kind
// (required rack, required block, preferred rack, none, ...), with how
// many were placed, their mean wait, the tightest level that held each
// and whether required groups stayed within their domain. It writes
// nothing for a workload without topology.
func TopologyTable(w io.Writer, wl *sim.Workload, results []*sim.Result) error {
	if !sim.HasTopology(wl) {
		return nil
	}
	if err := checkResults(results); err != nil {
		return err
	}
	levels := sim.ReportLevels(wl)
	var b strings.Builder
	fmt.Fprintf(&b, "topology of workload %s: levels %s\n\n", workloadName(wl, results), strings.Join(levels, " > "))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	head := []string{"SCHEDULER", "CONSTRAINT", "PLACED", "MAKESPAN (s)", "MEAN WAIT (s)"}
	for i := len(levels) - 1; i >= 0; i-- {
		head = append(head, strings.ToUpper(levelHeader(levels, i)))
	}
	head = append(head, "ANYWHERE", "WITHIN REQUIRED DOMAIN")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range results {
		s, err := sim.SummarizeTopology(wl, r)
		if err != nil {
			return err
		}
		for i, row := range s.Rows {
			name, makespan := "", ""
			if i == 0 {
				name, makespan = displayName(r), "-"
				if r.JobsCompleted > 0 && !r.Stalled && r.JobsCompleted+r.JobsRejected == r.JobsTotal {
					makespan = seconds(r.Makespan)
				}
			}
			placed := fmt.Sprintf("%d/%d", row.Placed, row.Groups)
			if row.Rejected > 0 {
				placed += fmt.Sprintf(" (%d rejected)", row.Rejected)
			}
			cells := []string{name, row.Label(), placed, makespan, seconds(row.MeanWait)}
			for l := len(levels) - 1; l >= 0; l-- {
				cells = append(cells, fmt.Sprint(row.AtLevel[l]))
			}
			within := "-"
			if row.Required > 0 {
				within = fmt.Sprintf("%d/%d (%s)", row.Within, row.Required, percent(row.Within, row.Required))
			}
			cells = append(cells, fmt.Sprint(row.Anywhere), within)
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n" + TopologyLegend + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// levelHeader is level i's column name: its short name, or its whole key
// when another level has the same short name.
func levelHeader(levels []string, i int) string {
	short := sim.LevelName(levels[i])
	if slices.ContainsFunc(levels, func(k string) bool { return k != levels[i] && sim.LevelName(k) == short }) {
		return levels[i]
	}
	return short
}

// percent is n/d as a whole percentage, rounded down so that 99.6% does
// not read as 100%.
func percent(n, d int) string {
	return fmt.Sprintf("%d%%", n*100/d)
}
