package report

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/queue"
	"github.com/fluence-sched/fluence/pkg/sim"
)

// The preemption table has a row per setting, with the summary's
// figures, and says how fluence preempts.
func TestPreemptionTable(t *testing.T) {
	w := sim.UrgentWorkload()
	runs, table := preemptionTableOf(t, w, sim.ComparePreemption, PreemptionTable)
	for _, want := range []string{
		"preemption on workload urgent: 6 urgent groups (priority 1000) of 46\n",
		"fluence preempts when a group's reserved start is more than 60 s away (min runtime 0 s, timeout 120 s); evicted pods are gone 5 s after their eviction\n",
		"SCHEDULER  ", "URGENT MEAN WAIT (s)", "WORK LOST (%)", "PARTLY BOUND (MAX)",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("no %q in\n%s", want, table)
		}
	}
	// The cells after COMPLETED (which has a space when stalled).
	wantRows(t, table, runs, 9, func(s sim.PreemptionSummary) []string {
		return []string{itoa(s.UrgentStarted) + "/" + itoa(s.Urgent), seconds(s.UrgentMean), seconds(s.UrgentMax), seconds(s.Makespan),
			itoa(s.Evictions) + "/" + itoa(s.EvictedPods)}
	})
	if runs[0].Summary.Evictions != 0 || runs[1].Summary.Evictions == 0 {
		t.Errorf("fluence: %d evictions without preemption, %d with", runs[0].Summary.Evictions, runs[1].Summary.Evictions)
	}
}

// preemptionTableOf runs a comparison on w with the default preemption
// and renders its table.
func preemptionTableOf(t *testing.T, w *sim.Workload,
	compare func(*sim.Workload, sim.PreemptionSetup, sim.Options) ([]sim.PreemptionRun, error),
	render func(io.Writer, *sim.Workload, gang.Preemption, float64, []sim.PreemptionRun) error) ([]sim.PreemptionRun, string) {
	t.Helper()
	runs, err := compare(w, sim.PreemptionSetup{
		Fluence:    sim.FluenceConfig{Queue: queue.Config{Policy: queue.Easy, QueueDepth: queue.DefaultQueueDepth, Packing: true}},
		Preemption: sim.DefaultPreemption,
		Stock:      sim.StockOptions{Backoff: sim.DefaultBackoff, AttemptSeconds: sim.DefaultAttemptSeconds},
	}, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := render(&out, w, sim.DefaultPreemption, 0, runs); err != nil {
		t.Fatal(err)
	}
	return runs, out.String()
}

// wantRows checks each run's row: its last n cells begin with want's.
func wantRows(t *testing.T, table string, runs []sim.PreemptionRun, n int, want func(sim.PreemptionSummary) []string) {
	t.Helper()
	for _, r := range runs {
		cells, ok := rowCells(table, r.Label)
		if !ok {
			t.Errorf("no row %q in\n%s", r.Label, table)
			continue
		}
		tail := cells[len(cells)-n:]
		for k, c := range want(r.Summary) {
			if tail[k] != c {
				t.Errorf("%s: cell %d is %q, want %q", r.Label, k, tail[k], c)
			}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// rowCells is the cells of a table's row after its label, and whether
// the table has the row.
func rowCells(table, label string) ([]string, bool) {
	for _, line := range strings.Split(table, "\n") {
		if rest, ok := strings.CutPrefix(line, label+"  "); ok {
			return strings.Fields(rest), true
		}
	}
	return nil, false
}

// The rack table: the preemption table's columns with the urgent gangs
// kept within one rack and the moves, a row per comparison row, its cells
// the summaries'.
func TestRackPreemptionTable(t *testing.T) {
	w := sim.PackedRackWorkload(1)
	runs, table := preemptionTableOf(t, w, sim.CompareRackPreemption, RackPreemptionTable)
	for _, want := range []string{
		"topology-aware preemption on workload packed-rack-1: 8 urgent groups (priority 1000) of ",
		", each requiring one example.com/rack\n",
		"URGENT IN ONE RACK", "  MOVES  ", "rack requirement dropped", "Rows: fluence without preemption",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("no %q in\n%s", want, table)
		}
	}
	wantRows(t, table, runs, 11, func(s sim.PreemptionSummary) []string {
		return []string{itoa(s.UrgentStarted) + "/" + itoa(s.Urgent), seconds(s.UrgentMean), seconds(s.UrgentMax),
			itoa(s.UrgentWithin) + "/" + itoa(s.UrgentRequired), seconds(s.Makespan), itoa(s.Evictions) + "/" + itoa(s.EvictedPods), itoa(s.Moves)}
	})
	var out bytes.Buffer
	if err := RackPreemptionTable(&out, sim.UrgentWorkload(), sim.DefaultPreemption, 0, runs); err == nil {
		t.Error("a rack table for a workload whose urgent groups require no domain")
	}
}
