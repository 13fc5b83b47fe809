package sim

import (
	"math"
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
	"github.com/fluence-sched/fluence/pkg/sim/experiments"
)

// simDefault is fluence as `fluence sim` runs it by default: easy backfill
// with packing, queue depth 32, lonode, declared durations (default 1 h).
func simDefault(packing bool) FluenceConfig {
	return FluenceConfig{MatchPolicy: "lonode", Queue: queue.Config{Policy: queue.Easy, Packing: packing}}
}

// run8 over seeds 1-10: packing-aware backfill brings fluence's makespan
// from 1.054x the best bound to 1.036x (the issue asked for 1.03x; the
// design note says where the rest goes), and no group waits longer than
// under the best policy without packing (easy, hybrid and conservative
// all give the same schedule there) by more than 10 %.
func TestRun8AgainstTheBestBoundOverSeeds(t *testing.T) {
	var ratio [2]float64
	worstWait := [2]float64{}
	for seed := uint64(1); seed <= 10; seed++ {
		for i, packing := range []bool{false, true} {
			s, err := NewFluence(simDefault(packing))
			if err != nil {
				t.Fatal(err)
			}
			r, err := Run(seeded(t, "run8", seed), s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.JobsCompleted != r.JobsTotal {
				t.Fatalf("seed %d packing=%v: %d of %d completed", seed, packing, r.JobsCompleted, r.JobsTotal)
			}
			ratio[i] += r.BestRatio() / 10
			worstWait[i] = max(worstWait[i], r.MaxWait)
		}
	}
	t.Logf("run8, seeds 1-10: makespan / best bound %.4f without packing, %.4f with; longest wait %.1f s and %.1f s", ratio[0], ratio[1], worstWait[0], worstWait[1])
	if !(ratio[1] < ratio[0]-0.01) || ratio[1] > 1.04 {
		t.Errorf("packing: mean ratio %.4f (without %.4f)", ratio[1], ratio[0])
	}
	if worstWait[1] > 1.1*worstWait[0] {
		t.Errorf("with packing a group waited %.1f s, more than 1.1 x %.1f s", worstWait[1], worstWait[0])
	}
}

// run10's release delay is fitted so that today's engine reproduces the
// 2024 fluence's 1,432 s. Kueue was measured at 1,006 s on the same jobs.
// The packing bound (every job holds for its 2 s plus the delay; no
// schedule beats it) shows the fitted delay cannot be the harness's alone:
// at 48.8 s no scheduler finishes before 1,221 s, and Kueue's 1,006 s is
// possible only with a delay of 39.8 s or less. So about 9 s per job or
// more of the fitted delay is old fluence's own behaviour.
func TestRun10DelayAgainstKueue(t *testing.T) {
	w := seeded(t, "run10", 1)
	at := func(d float64) float64 {
		for i := range w.Groups {
			w.Groups[i].ReleaseDelay = d
		}
		pb := PackingBoundOf(w)
		if pb.Skipped != "" {
			t.Fatal(pb.Skipped)
		}
		return pb.Bound
	}
	kueue := *w.Measured["quota"].Makespan // Kueue, replayed by the quota model
	// Sixes beside twos, fives beside threes, fours in pairs: 25 rounds
	// of 2 s plus the delay, less the last delay.
	if b, want := at(run10ReleaseDelay), 25*(2+run10ReleaseDelay)-run10ReleaseDelay; math.Abs(b-want) > 0.5 || b <= kueue {
		t.Errorf("packing bound at %.1f s: %.1f s, want %.1f s, above Kueue's %.0f s", run10ReleaseDelay, b, want, kueue)
	}
	// The largest delay Kueue's makespan allows, by bisection.
	lo, hi := 0.0, run10ReleaseDelay
	for range 40 {
		if mid := (lo + hi) / 2; at(mid) <= kueue {
			lo = mid
		} else {
			hi = mid
		}
	}
	if math.Abs(lo-39.8) > 0.1 {
		t.Errorf("largest delay consistent with Kueue's %.0f s: %.2f s, want about 39.8 s", kueue, lo)
	}
	s, err := NewFluence(simDefault(true))
	if err != nil {
		t.Fatal(err)
	}
	at(lo)
	r, err := Run(w, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Kueue's %.0f s allows a delay of at most %.1f s per job; fluence then takes %.1f s (%.3fx the bound)", kueue, lo, r.Makespan, r.BestRatio())
}

// The coscheduling model does not reproduce the real plugin's freeze on
// run8 (7 jobs over two attempts): at every seed it completes several
// times as many, and at about half the seeds all 100. The design note says
// what the model lacks; this test fails if that changes, so the note is
// updated with it.
func TestCoschedulingGapOverSeeds(t *testing.T) {
	var done []int
	complete := 0
	for seed := uint64(1); seed <= 10; seed++ {
		r, err := Run(seeded(t, "run8", seed), NewCoscheduling(10), Options{})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, r.JobsCompleted)
		if r.JobsCompleted == r.JobsTotal {
			complete++
		}
	}
	t.Logf("coscheduling (model), run8, 10 s Permit wait, seeds 1-10: jobs completed %v; all 100 at %d seeds (measured: 7, froze)", done, complete)
	for _, d := range done {
		if d <= 2*7 {
			t.Errorf("the model completed %d jobs at some seed: close to the measured 7; update the design note", d)
		}
	}
}

// The stand-in delay the tests use is the one calibration finds now, for
// fluence sim's default configuration: a stale fitted value (it was 45,
// then 48.7 before packing) fails here rather than in a figure.
func TestRun10StandInDelayIsCalibrated(t *testing.T) {
	data, err := experiments.Read("run10")
	if err != nil {
		t.Fatal(err)
	}
	w, err := ParseWorkload(data, LoadOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	d, mk, err := CalibrateReleaseDelay(w, func() (Scheduler, error) { return NewFluence(simDefault(true)) }, *w.Measured["fluence"].Makespan, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(d-run10ReleaseDelay) > 0.05 {
		t.Errorf("calibration finds %.1f s (makespan %.1f s); the tests use %.1f s", d, mk, run10ReleaseDelay)
	}
}
