package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/fluence-sched/fluence/pkg/sim"
)

// Legend is the line printed under the table. Models are models: the line
// keeps anyone reading a pasted table from taking them for the real peers.
const Legend = `Legend: "(model)" = this simulator's model of that peer scheduler, not the real scheduler; ` +
	`"measured" rows = the outcome recorded in the real experiment; ` +
	`best bound = the largest lower bound on any schedule's makespan (runtime, hold time, packing; docs/design/002-simulator.md); ` +
	`makespan and makespan/best = makespan / best bound, "-" unless every job completed; ` +
	`the coscheduling model completes more run8 jobs than the real plugin, which froze at 7 (see the design note).`

// Table writes a comparison table of the results, one row per scheduler
// and, when the workload recorded a measured outcome for that scheduler, a
// "measured" row right under it. wl may be nil.
func Table(w io.Writer, wl *sim.Workload, results []*sim.Result) error {
	if err := checkResults(results); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "workload %s%s\n", workloadName(wl, results), workloadShape(wl))
	if len(results) > 0 {
		fmt.Fprintf(&b, "lower bounds: %s\n", boundsLine(results[0].Bounds))
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	// Config goes last: it is the one long, free-form cell, and as the last
	// cell of a line it does not widen any column.
	fmt.Fprintln(tw, "SCHEDULER\tCOMPLETED\tSTALLED\tPENDING/RUNNING AT STALL\tMAKESPAN (s)\tBEST BOUND (s)\tMAKESPAN/BEST\tMEAN WAIT (s)\tMAX WAIT (s)\tMEAN TURNAROUND (s)\tCONFIG")
	for _, r := range results {
		completed := fmt.Sprintf("%d/%d", r.JobsCompleted, r.JobsTotal)
		if r.JobsRejected > 0 {
			completed += fmt.Sprintf(" (%d rejected)", r.JobsRejected)
		}
		stalled, atStall := "no", "-"
		if r.Stalled {
			stalled = "yes, t=" + seconds(r.StalledAt) + "s"
			atStall = fmt.Sprintf("%d / %d", r.PendingAtStall, r.RunningAtStall)
		}
		makespan, turnaround := "-", "-"
		if r.JobsCompleted > 0 {
			turnaround = seconds(r.MeanTurnaround)
		}
		if r.JobsCompleted > 0 && !r.Stalled && r.JobsCompleted+r.JobsRejected == r.JobsTotal {
			// A run that stopped short has no makespan: its last
			// completion is only when it stopped moving (STALLED says).
			makespan = seconds(r.Makespan)
		}
		bound, ratio := "-", "-"
		if best, _ := r.Bounds.Best(); best > 0 {
			bound = seconds(best)
		}
		if f := r.BestRatio(); finite(f) {
			ratio = fmt.Sprintf("%.3f", f)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", displayName(r), completed, stalled, atStall,
			makespan, bound, ratio, seconds(r.MeanWait), seconds(r.MaxWait), turnaround, oneLine(r.Config))

		if m, ok := measuredFor(wl, r); ok {
			// The measured run replays the same jobs, so the simulated
			// total is the measured total too.
			mc := fmt.Sprintf("%d/%d", m.JobsCompleted, r.JobsTotal)
			clog, atClog := "?", "-"
			if m.Clogged != nil {
				clog = "no"
				if *m.Clogged {
					clog = "clogged"
				}
			}
			if m.PendingAtClog != nil || m.RunningAtClog != nil {
				atClog = optInt(m.PendingAtClog) + " / " + optInt(m.RunningAtClog)
			}
			// Bound, ratio and wait were not measured: blank, not "-",
			// so the row does not suggest a missing value of a known kind.
			fmt.Fprintf(tw, "  measured\t%s\t%s\t%s\t%s\t\t\t\t\t%s\t%s\n", mc, clog, atClog,
				optSeconds(m.Makespan), optSeconds(m.MeanTurnaround), oneLine(m.Config))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n" + Legend + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// boundsLine is "runtime 1134.0 s, hold time 1290.7 s, packing 1501.7 s
// (best)", with why the packing bound is missing when it is.
func boundsLine(b sim.Bounds) string {
	_, best := b.Best()
	mark := func(name string, v float64) string {
		if v <= 0 {
			return name + " -"
		}
		s := name + " " + seconds(v) + " s"
		if name == best && v > 0 {
			s += " (best)"
		}
		return s
	}
	packing := mark("packing", b.Packing)
	if b.Packing <= 0 {
		packing = "packing -"
		if b.PackingSkipped != "" {
			packing += " (" + b.PackingSkipped + ")"
		}
	}
	return mark("runtime", b.Runtime) + ", " + mark("hold time", b.Hold) + ", " + packing
}

// workloadShape is ": 50 jobs, 200 pods, 8 nodes, 24.0 cores" or "".
func workloadShape(wl *sim.Workload) string {
	if wl == nil {
		return ""
	}
	pods := 0
	for i := range wl.Groups {
		pods += wl.Groups[i].Size()
	}
	var cpu int64
	for _, n := range wl.Cluster.Nodes {
		cpu += n.CPU
	}
	return fmt.Sprintf(": %d jobs, %d pods, %d nodes, %.1f cores", len(wl.Groups), pods, len(wl.Cluster.Nodes), float64(cpu)/1000)
}

func optInt(p *int) string {
	if p == nil {
		return "?"
	}
	return fmt.Sprint(*p)
}

func optSeconds(p *float64) string {
	if p == nil {
		return "-"
	}
	return seconds(*p)
}

// oneLine keeps a free-form config on its table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
