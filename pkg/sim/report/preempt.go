package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/sim"
)

// PreemptionLegend is printed under the preemption table.
const PreemptionLegend = `URGENT: the groups of the highest priority; their wait is from arrival to the start of the run that completed. ` +
	`MAKESPAN: "-" unless every group completed (COMPLETED says when the run stalled). ` +
	`EVICTIONS: times a group lost pods to a preemption / pods evicted. ` +
	`WORK LOST: pods x seconds run by runs an eviction cut short (a gang needs all its pods: a run that loses one starts over), and its share of all the work (pods x runtime of every group). ` +
	`LEFT IN PART: evictions that left the rest of the group bound, holding nodes with nothing to do; ` +
	`PARTLY BOUND: the most groups bound in part at once, whatever the cause (the stock model binds pod by pod). ` +
	`Fluence evicts whole groups and starts them whole: both must be 0. "(model)": this simulator's model of kube-scheduler, not the real one.`

// PreemptionTable writes the preemption comparison (sim.ComparePreemption):
// one row per scheduler and setting, with what the urgent groups waited
// and what the evictions cost.
func PreemptionTable(w io.Writer, wl *sim.Workload, p gang.Preemption, grace float64, runs []sim.PreemptionRun) error {
	var results []*sim.Result
	for _, r := range runs {
		results = append(results, r.Result)
	}
	if err := checkResults(results); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "preemption on workload %s", workloadName(wl, results))
	if len(runs) > 0 {
		s := runs[0].Summary
		fmt.Fprintf(&b, ": %d urgent groups (priority %d) of %d", s.Urgent, s.UrgentPriority, s.Total)
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 120
	}
	if grace == 0 {
		grace = sim.DefaultEvictionGrace
	}
	fmt.Fprintf(&b, "\nfluence preempts when a group's reserved start is more than %d s away (min runtime %d s, timeout %d s); evicted pods are gone %s s after their eviction\n\n",
		p.After, p.MinRuntime, timeout, trimSeconds(max(grace, 0)))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCHEDULER\tCOMPLETED\tURGENT STARTED\tURGENT MEAN WAIT (s)\tURGENT MAX WAIT (s)\tMAKESPAN (s)\tEVICTIONS (GROUPS/PODS)\tWORK LOST (POD-S)\tWORK LOST (%)\tLEFT IN PART\tPARTLY BOUND (MAX)")
	for _, r := range runs {
		s := r.Summary
		completed := fmt.Sprintf("%d/%d", s.Completed, s.Total)
		if s.Stalled {
			completed += ", stalled t=" + seconds(s.StalledAt) + "s"
		}
		lost := "-"
		if s.Work > 0 {
			lost = fmt.Sprintf("%.1f", 100*s.LostShare)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s\t%s\t%d/%d\t%.0f\t%s\t%d\t%d\n", r.Label, completed, s.UrgentStarted, s.Urgent,
			seconds(s.UrgentMean), seconds(s.UrgentMax), seconds(s.Makespan), s.Evictions, s.EvictedPods, s.WorkLost, lost,
			s.EvictedInPart, s.PartialMax)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n" + PreemptionLegend + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// trimSeconds prints seconds without trailing zeros ("5", "2.5").
func trimSeconds(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
