package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/fluence-sched/fluence/pkg/sim"
)

// GPULegend is printed under the GPU table.
const GPULegend = `Computed from every pod's bindings, never from a scheduler's messages. ` +
	`STRANDED: GPU-hours during which GPUs were idle (free, or held by a gang not yet whole) while some waiting gang asked, in all, no more GPUs than were idle; ` +
	`(%): of the cluster's GPU-hours over the makespan (over the run, for a run that did not finish). ` +
	`IN ONE DOMAIN: started groups with a required domain whose pods all shared one value of its key. ` +
	`PARTIAL GANGS: groups with some pods bound and others Pending at some time; PENDING AFTER SIBLING: those Pending pods' pod-seconds. ` +
	`"(model)" schedulers count a DRA node's GPUs as a number and place pod by pod (stock, quota) or gang by gang (coscheduling), without regard to domains.`

// GPUTable writes, for a workload whose nodes publish GPUs as DRA devices
// (sim.HasGPUDevices), one row per scheduler: completion, makespan,
// stranded GPUs, required groups kept within one domain, and gangs bound
// in part (sim.SummarizeGPUs). It writes nothing for other workloads.
func GPUTable(w io.Writer, wl *sim.Workload, results []*sim.Result) error {
	if !sim.HasGPUDevices(wl) {
		return nil
	}
	if err := checkResults(results); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "GPUs of workload %s: ", workloadName(wl, results))
	var gpus int64
	for _, n := range wl.Cluster.Nodes {
		gpus += n.GPU
	}
	fmt.Fprintf(&b, "%d GPUs as DRA devices on %d nodes\n\n", gpus, len(wl.Cluster.Nodes))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join([]string{"SCHEDULER", "COMPLETED", "MAKESPAN (s)", "STRANDED (GPU-H)", "STRANDED (%)", "IN ONE DOMAIN", "PARTIAL GANGS", "PENDING AFTER SIBLING (POD-S)"}, "\t"))
	for _, r := range results {
		s, err := sim.SummarizeGPUs(wl, r)
		if err != nil {
			return err
		}
		completed := fmt.Sprintf("%d/%d", r.JobsCompleted, r.JobsTotal)
		if r.JobsRejected > 0 {
			completed += fmt.Sprintf(" (%d rejected)", r.JobsRejected)
		}
		makespan := "-"
		if r.Stalled {
			completed += fmt.Sprintf(", stalled t=%.1fs", r.StalledAt)
		} else if r.JobsCompleted > 0 && r.JobsCompleted+r.JobsRejected == r.JobsTotal {
			makespan = seconds(r.Makespan)
		}
		share := "-"
		if finite(s.StrandedShare) {
			share = fmt.Sprintf("%.1f", 100*s.StrandedShare)
		}
		within := "-"
		if s.Required > 0 {
			within = fmt.Sprintf("%d/%d (%s)", s.Within, s.Required, percent(s.Within, s.Required))
		}
		fmt.Fprintln(tw, strings.Join([]string{displayName(r), completed, makespan,
			fmt.Sprintf("%.1f", s.Stranded/3600), share, within, fmt.Sprint(s.Partial), fmt.Sprintf("%.0f", s.PendingAfterSibling)}, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n" + GPULegend + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}
