package report

import (
	"fmt"
	"io"
)

// ProgressPrinter returns a sim.Options.Progress callback that prints a
// line each time the share of completed jobs crosses a 10% step, e.g.
//
//	stock (model): 40% (40/100 jobs) at t=1234.5s
//
// Throttling on completed jobs, not on calls, keeps the output to about
// ten lines however long the run. A run that stops short of 100% (a stall)
// prints nothing more; the summary says why. The returned function keeps
// state: use one per run.
func ProgressPrinter(w io.Writer, label string) func(now float64, completed, total int) {
	last := 0 // the last 10% step printed
	return func(now float64, completed, total int) {
		if total <= 0 {
			return
		}
		step := completed * 10 / total
		if step <= last {
			return
		}
		last = step
		fmt.Fprintf(w, "%s: %d%% (%d/%d jobs) at t=%.1fs\n", label, completed*100/total, completed, total, now)
	}
}
