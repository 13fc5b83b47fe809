package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/sim"
)

// PreemptionLegend is printed under the preemption table.
const PreemptionLegend = `URGENT: the groups of the highest priority; their wait is from arrival to the start of the run that completed. ` +
	`MAKESPAN: "-" unless every group completed (COMPLETED says when the run stalled). ` +
	`EVICTIONS: times a group lost pods to a preemption / pods evicted. ` +
	`WORK LOST: pods x seconds run by runs an eviction cut short, since their last checkpoint (a gang needs all its pods: a run that loses one starts over from its last checkpoint, or from the beginning), and its share of all the work (pods x runtime of every group). ` +
	`LEFT IN PART: evictions that left the rest of the group bound, holding nodes with nothing to do; ` +
	`PARTLY BOUND: the most groups bound in part at once, whatever the cause (the stock model binds pod by pod). ` +
	`Fluence evicts whole groups and starts them whole: both must be 0. "(model)": this simulator's model of kube-scheduler, not the real one.`

// RackPreemptionLegend is printed under the rack preemption table, after
// PreemptionLegend.
const RackPreemptionLegend = `Rows: fluence without preemption; fluence's topology-aware preemption (the cheapest victims within one domain of the urgent gang's required key, each victim's work lost counted from its last checkpoint, movable groups that fit elsewhere moved); ` +
	`the same with the checkpoints and movability kept from the core (the groups still checkpoint); ` +
	`and two preemptions without topology: fluence's with every group's topology_required dropped (the urgent gang takes the cheapest room anywhere), and the stock model's pod by pod, which knows neither gangs nor domains. ` +
	`URGENT IN ONE: started urgent groups whose pods all shared one value of the key the workload requires of them (the rows without topology are measured against it too). ` +
	`MOVES: victims fluence moved because they fitted elsewhere.`

// PreemptionTable writes the preemption comparison (sim.ComparePreemption):
// one row per scheduler and setting, with what the urgent groups waited
// and what the evictions cost.
func PreemptionTable(w io.Writer, wl *sim.Workload, p gang.Preemption, grace float64, runs []sim.PreemptionRun) error {
	return preemptionTable(w, wl, p, grace, runs, "")
}

// RackPreemptionTable writes the rack comparison
// (sim.CompareRackPreemption): the preemption table's columns and, for
// the urgent groups, how many ran within one domain of the key they
// require, and how many victims fluence moved.
func RackPreemptionTable(w io.Writer, wl *sim.Workload, p gang.Preemption, grace float64, runs []sim.PreemptionRun) error {
	key := ""
	if len(runs) > 0 {
		for _, g := range wl.Groups {
			if g.Priority == runs[0].Summary.UrgentPriority && g.TopologyRequired != "" {
				key = g.TopologyRequired
				break
			}
		}
	}
	if key == "" {
		return fmt.Errorf("report: workload %s has no urgent group that requires a domain", wl.Name)
	}
	return preemptionTable(w, wl, p, grace, runs, key)
}

// preemptionTable writes either table: the rack comparison's when key
// (the urgent groups' required label key) is set.
func preemptionTable(w io.Writer, wl *sim.Workload, p gang.Preemption, grace float64, runs []sim.PreemptionRun, key string) error {
	var results []*sim.Result
	for _, r := range runs {
		results = append(results, r.Result)
	}
	if err := checkResults(results); err != nil {
		return err
	}
	var b strings.Builder
	title := "preemption"
	if key != "" {
		title = "topology-aware preemption"
	}
	fmt.Fprintf(&b, "%s on workload %s", title, workloadName(wl, results))
	if len(runs) > 0 {
		s := runs[0].Summary
		fmt.Fprintf(&b, ": %d urgent groups (priority %d) of %d", s.Urgent, s.UrgentPriority, s.Total)
		if key != "" {
			fmt.Fprintf(&b, ", each requiring one %s", key)
		}
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
	head := []string{"SCHEDULER", "COMPLETED", "URGENT STARTED", "URGENT MEAN WAIT (s)", "URGENT MAX WAIT (s)"}
	if key != "" {
		head = append(head, "URGENT IN ONE "+strings.ToUpper(sim.LevelName(key)))
	}
	head = append(head, "MAKESPAN (s)", "EVICTIONS (GROUPS/PODS)")
	if key != "" {
		head = append(head, "MOVES")
	}
	head = append(head, "WORK LOST (POD-S)", "WORK LOST (%)", "LEFT IN PART", "PARTLY BOUND (MAX)")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
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
		cells := []string{r.Label, completed, fmt.Sprintf("%d/%d", s.UrgentStarted, s.Urgent), seconds(s.UrgentMean), seconds(s.UrgentMax)}
		if key != "" {
			cells = append(cells, fmt.Sprintf("%d/%d", s.UrgentWithin, s.UrgentRequired))
		}
		cells = append(cells, seconds(s.Makespan), fmt.Sprintf("%d/%d", s.Evictions, s.EvictedPods))
		if key != "" {
			cells = append(cells, strconv.Itoa(s.Moves))
		}
		cells = append(cells, fmt.Sprintf("%.0f", s.WorkLost), lost, strconv.Itoa(s.EvictedInPart), strconv.Itoa(s.PartialMax))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n" + PreemptionLegend + "\n")
	if key != "" {
		b.WriteString(RackPreemptionLegend + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// trimSeconds prints seconds without trailing zeros ("5", "2.5").
func trimSeconds(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
