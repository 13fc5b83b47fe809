package replay

import (
	"fmt"
	"io"
	"time"
)

// progress prints one line per report: wall time since the first
// submission and the workload's own time, Jobs done, pods bound, running
// (holding CPUs) and pending.
type progress struct {
	w      io.Writer
	name   string
	factor float64
}

func (p progress) line(st Status) {
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "  %-8s %6.1fs (workload %6.0fs)  jobs %d/%d done  pods %d/%d bound, %d running, %d pending\n",
		p.name, st.Elapsed.Seconds(), st.Elapsed.Seconds()*p.factor, st.JobsCompleted, st.JobsTotal,
		st.PodsBound, st.PodsTotal, st.PodsRunning, st.PodsPending)
}

func (p progress) end(st Status, stalled bool, window time.Duration) {
	if p.w == nil {
		return
	}
	p.line(st)
	if stalled {
		fmt.Fprintf(p.w, "  %-8s STALLED: nothing bound or finished for %v; %d pods Pending, %d Running; %d/%d jobs done\n",
			p.name, window, st.PodsPending, st.PodsRunning, st.JobsCompleted, st.JobsTotal)
		return
	}
	fmt.Fprintf(p.w, "  %-8s done: %d/%d jobs in %.1fs\n", p.name, st.JobsCompleted, st.JobsTotal, st.Elapsed.Seconds())
}
