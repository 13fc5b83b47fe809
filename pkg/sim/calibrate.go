package sim

import (
	"errors"
	"math"
)

// CalibrateReleaseDelay finds the one release delay, applied to every
// group, at which the scheduler built by newSched reaches the target
// makespan. run10's harness held resources long after each job's 2 s of
// work (watcher polling, deletion), and that hold time was not logged: the
// experiment notes say to calibrate it on the measured fluence makespan.
// Makespan grows with the delay, so bisection over [0, 600] s converges;
// the result is rounded to 0.1 s. The runs use opts, the options of the
// runs the delay is for (a different pod release gap needs a different
// delay). It returns the delay and the makespan reached, and leaves w's
// groups set to that delay.
func CalibrateReleaseDelay(w *Workload, newSched func() (Scheduler, error), target float64, opts Options) (delay, makespan float64, err error) {
	if target <= 0 {
		return 0, 0, errors.New("sim: calibration needs a positive target makespan")
	}
	run := func(d float64) (float64, error) {
		for i := range w.Groups {
			w.Groups[i].ReleaseDelay = d
		}
		s, err := newSched()
		if err != nil {
			return 0, err
		}
		r, err := Run(w, s, opts)
		if err != nil {
			return 0, err
		}
		if r.JobsCompleted == 0 {
			return math.Inf(1), nil
		}
		return r.Makespan, nil
	}
	lo, hi := 0.0, 600.0
	for range 24 {
		mid := (lo + hi) / 2
		m, err := run(mid)
		if err != nil {
			return 0, 0, err
		}
		if m < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	delay = math.Round((lo+hi)/2*10) / 10
	makespan, err = run(delay)
	return delay, makespan, err
}
