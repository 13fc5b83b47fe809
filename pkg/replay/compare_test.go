package replay

import (
	"flag"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/sim"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestCompareTable(t *testing.T) {
	done := func(completed int, makespan, turnaround float64) *sim.Result {
		return &sim.Result{JobsTotal: 100, JobsCompleted: completed, Makespan: makespan, MeanTurnaround: turnaround}
	}
	stalled := func(completed int, at float64, pending, running int) *sim.Result {
		r := done(completed, at, 80)
		r.Stalled, r.StalledAt, r.PendingAtStall, r.RunningAtStall = true, at, pending, running
		return r
	}
	rows := []Comparison{
		{Scheduler: "fluence", Live: done(100, 1650.2, 700), Sim: done(100, 1581.4, 662)},
		{Scheduler: "stock", Live: stalled(24, 190.5, 337, 8), Sim: stalled(22, 179.5, 345, 8)},
		{Scheduler: "gang", Live: &sim.Result{JobsTotal: 100, MeanTurnaround: math.NaN()}, NoModel: "none here"},
		{Scheduler: "other", Live: done(100, 10, 5), Sim: stalled(3, 7, 1, 2)},
	}
	var out strings.Builder
	if err := CompareTable(&out, "model check", rows); err != nil {
		t.Fatal(err)
	}
	golden := "testdata/compare.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("table differs from %s (rerun with -update if meant):\n%s", golden, out.String())
	}
	if err := CompareTable(&out, "x", []Comparison{{Scheduler: "lost"}}); err == nil {
		t.Error("a row without a live result accepted")
	}
}

func TestSigned(t *testing.T) {
	for _, tc := range []struct {
		v      float64
		format string
		want   string
	}{{3, "%.0f", "+3"}, {-2, "%.0f", "-2"}, {0, "%.0f", "0"}, {-0.04, "%.1f", "0.0"}, {0.04, "%.1f", "0.0"}, {12.34, "%.1f", "+12.3"}} {
		if got := signed(tc.v, tc.format); got != tc.want {
			t.Errorf("signed(%v, %q) = %q, want %q", tc.v, tc.format, got, tc.want)
		}
	}
}
