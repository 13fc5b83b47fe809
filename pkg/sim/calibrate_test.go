package sim

import (
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// The calibration runs with the options of the runs it is for: a longer
// pod release gap already holds the nodes longer, so it needs a shorter
// release delay to reach the same makespan.
func TestCalibrationUsesTheRunOptions(t *testing.T) {
	newSched := func() (Scheduler, error) { return NewFluence(FluenceConfig{Queue: queue.Config{Policy: queue.Easy}}) }
	delay := func(gap float64) float64 {
		w := loadMeasured(t, "run10-indexed-jobs.yaml", 1)
		d, mk, err := CalibrateReleaseDelay(w, newSched, 1432, Options{PodReleaseGap: gap})
		if err != nil {
			t.Fatal(err)
		}
		if mk < 1420 || mk > 1445 {
			t.Errorf("gap %v: calibrated makespan %.0f s, want about 1,432 s", gap, mk)
		}
		return d
	}
	none, long := delay(-1), delay(2)
	if !(long < none-5) {
		t.Errorf("release delay with a 2 s pod gap %.1f s, with none %.1f s: the gap was not applied", long, none)
	}
}
