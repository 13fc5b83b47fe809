package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/sim"
)

func TestSeedRows(t *testing.T) {
	nan := math.NaN()
	res := func(sched string, completed int, makespan, bound, wait, maxWait float64, stalled bool) *sim.Result {
		return &sim.Result{Scheduler: sched, Model: sched != "fluence", JobsTotal: 10, JobsCompleted: completed, Stalled: stalled,
			Makespan: makespan, MeanWait: wait, MaxWait: maxWait, Bounds: sim.Bounds{Runtime: bound / 2, Packing: bound}}
	}
	runs := [][]*sim.Result{
		{res("fluence", 10, 110, 100, 5, 20, false), res("stock", 4, 30, 100, 2, 8, true)},
		{res("fluence", 10, 126, 120, 7, 30, false), res("stock", 10, 150, 120, nan, nan, false)},
		{res("fluence", 10, 121, 110, 6, 25, false), res("stock", 6, 40, 110, 3, 9, true)},
	}
	rows, err := SeedRows(runs)
	if err != nil {
		t.Fatal(err)
	}
	fl, st := rows[0], rows[1]
	if fl.Complete != 3 || fl.Stalled != 0 || fl.Makespan != (Spread{N: 3, Mean: 119, Min: 110, Max: 126}) {
		t.Errorf("fluence %+v", fl)
	}
	if !near(fl.BestRatio.Mean, (1.1+1.05+1.1)/3) || fl.BestRatio.Min != 1.05 || fl.BestRatio.Max != 1.1 {
		t.Errorf("fluence ratio %+v", fl.BestRatio)
	}
	if fl.BestBound != (Spread{N: 3, Mean: 110, Min: 100, Max: 120}) || fl.MaxWait != (Spread{N: 3, Mean: 25, Min: 20, Max: 30}) {
		t.Errorf("fluence bound %+v, max wait %+v", fl.BestBound, fl.MaxWait)
	}
	// Makespans of stalled seeds do not count; NaN waits are skipped.
	if st.Complete != 1 || st.Stalled != 2 || st.Makespan != (Spread{N: 1, Mean: 150, Min: 150, Max: 150}) ||
		st.Completed != (Spread{N: 3, Mean: 20.0 / 3, Min: 4, Max: 10}) || st.MeanWait != (Spread{N: 2, Mean: 2.5, Min: 2, Max: 3}) {
		t.Errorf("stock %+v", st)
	}
	var b bytes.Buffer
	if err := SeedTable(&b, &sim.Workload{Name: "w"}, []uint{4, 5, 6}, runs); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"seeds 4-6: 3 runs per scheduler", "119.0 (110.0-126.0)", "1 of 3", "stock (model)", SeedLegend} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, b.String())
		}
	}
	if _, err := SeedRows([][]*sim.Result{runs[0], runs[1][:1]}); err == nil {
		t.Error("seeds with different schedulers accepted")
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
