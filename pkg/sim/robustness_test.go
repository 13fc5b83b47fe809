package sim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/fluence-sched/fluence/pkg/sim/experiments"
)

// The models' claims hold over seeds, not at one: every figure here is
// over seeds 1-10 (the seed draws run8's release delays; run10's delay is
// the calibrated constant, so its seeds are all alike) and is stated in
// docs/design/002-simulator.md with its spread.

// seeded loads a measured workload at a seed, with run10's stand-in delay.
func seeded(t *testing.T, name string, seed uint64) *Workload {
	t.Helper()
	data, err := experiments.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ParseWorkload(data, LoadOptions{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	if NeedsReleaseCalibration(w) {
		for i := range w.Groups {
			w.Groups[i].ReleaseDelay = run10ReleaseDelay
		}
	}
	return w
}

// spread is "min-max" of ints, or the one value.
func spread(xs []int) string {
	lo, hi := slices.Min(xs), slices.Max(xs)
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// The stock model clogs run8 at every seed and every attempt time from 3
// to 30 ms (default release gap), and completes everything with
// instantaneous attempts. How many jobs it completes before the clog, and
// how many pods hold nodes then, vary with the seed: the measured 22 jobs
// and 8 Running pods are inside the spread, not its only value.
func TestStockClogsOverSeeds(t *testing.T) {
	for _, name := range []string{"run8", "run10"} {
		for _, a := range []float64{0, 0.003, DefaultAttemptSeconds, 0.01, 0.02, 0.03} {
			var done, running, pending []int
			clogs := 0
			for seed := uint64(1); seed <= 10; seed++ {
				w := seeded(t, name, seed)
				r, err := Run(w, NewStockWith(StockOptions{Backoff: DefaultBackoff, AttemptSeconds: a}), Options{})
				if err != nil {
					t.Fatal(err)
				}
				done = append(done, r.JobsCompleted)
				if r.Stalled {
					clogs++
					running = append(running, r.RunningAtStall)
					pending = append(pending, r.PendingAtStall)
				}
			}
			line := fmt.Sprintf("%s, %g ms per attempt: clogged at %d of 10 seeds; jobs completed %s", name, a*1000, clogs, spread(done))
			if clogs > 0 {
				line += fmt.Sprintf("; at the clog %s Pending, %s Running", spread(pending), spread(running))
			}
			t.Log(line)
			switch {
			case a == 0 && clogs != 0:
				t.Errorf("%s: instantaneous attempts clogged at %d seeds; the oldest gang should win every freed node", name, clogs)
			case a > 0 && name == "run8" && clogs != 10:
				t.Errorf("%s, %g ms: clogged at %d of 10 seeds, want all", name, a*1000, clogs)
			case a > 0 && name == "run8" && (slices.Max(done) > 40 || slices.Min(running) < 6):
				t.Errorf("%s, %g ms: %s jobs done, %s pods running at the clog: not the measured kind of clog", name, a*1000, spread(done), spread(running))
			}
		}
	}
}

// The wider sweep of the design note: attempt times 2-30 ms against
// release gaps 0-2 s (0 frees a job's pods at once), at seeds 1-10: 300
// runs per workload. run8 clogs in nearly all; run10 completes at the
// shortest attempt times with most gaps, as it did at seed 1.
func TestStockSweepOverSeeds(t *testing.T) {
	for _, name := range []string{"run8", "run10"} {
		clogs, runs := 0, 0
		var done []int
		var open []string
		for _, a := range []float64{0.002, 0.005, 0.01, 0.02, 0.03} {
			for _, gap := range []float64{-1, 0.1, 0.2, 0.5, 1, 2} {
				n := 0
				for seed := uint64(1); seed <= 10; seed++ {
					r, err := Run(seeded(t, name, seed), NewStockWith(StockOptions{Backoff: DefaultBackoff, AttemptSeconds: a}), Options{PodReleaseGap: gap})
					if err != nil {
						t.Fatal(err)
					}
					runs++
					if r.Stalled {
						clogs++
						n++
						done = append(done, r.JobsCompleted)
					}
				}
				if n < 10 {
					open = append(open, fmt.Sprintf("%gms/gap %gs: %d of 10", a*1000, max(gap, 0), n))
				}
			}
		}
		t.Logf("%s: clogged in %d of %d runs (jobs done at the clog %s); not always: %v", name, clogs, runs, spread(done), open)
		if name == "run8" && clogs < runs*9/10 {
			t.Errorf("run8 clogged in only %d of %d runs", clogs, runs)
		}
		if name == "run10" && (clogs < runs/2 || clogs == runs) {
			t.Errorf("run10 clogged in %d of %d runs: the sweep no longer shows where it completes", clogs, runs)
		}
	}
}
