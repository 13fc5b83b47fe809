package sim_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
	"github.com/fluence-sched/fluence/pkg/sim"
	"github.com/fluence-sched/fluence/pkg/sim/report"
)

// The topology table shows the counts sim.SummarizeTopology gives, row by
// row, for fluence (whose required groups are all within their domain) and
// for the stock model (which ignores topology).
func TestTopologyTableShowsTheSummary(t *testing.T) {
	w := sim.TopologyFragmentedWorkload()
	f, err := sim.NewFluence(sim.FluenceConfig{CheckInvariants: true, Queue: queue.Config{Policy: queue.Easy,
		QueueDepth: queue.DefaultQueueDepth, ReservationDepth: queue.DefaultReservationDepth, Packing: true}})
	if err != nil {
		t.Fatal(err)
	}
	var results []*sim.Result
	for _, s := range []sim.Scheduler{f, sim.NewStock()} {
		r, err := sim.Run(w, s, sim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
	}
	var out bytes.Buffer
	if err := report.TopologyTable(&out, w, results); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	lines := strings.Split(table, "\n")
	head := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "SCHEDULER") })
	if head < 0 {
		t.Fatalf("no header:\n%s", table)
	}
	if !strings.Contains(lines[head], "RACK  BLOCK  ZONE  ANYWHERE  WITHIN REQUIRED DOMAIN") {
		t.Errorf("header %q", lines[head])
	}
	next := head + 1
	for _, r := range results {
		s, err := sim.SummarizeTopology(w, r)
		if err != nil {
			t.Fatal(err)
		}
		for i, row := range s.Rows {
			// The row's cells, split as strings.Fields splits the line.
			want := strings.Fields(row.Label())
			want = append(want, fmt.Sprintf("%d/%d", row.Placed, row.Groups))
			var tail []string
			for l := len(row.AtLevel) - 1; l >= 0; l-- {
				tail = append(tail, fmt.Sprint(row.AtLevel[l]))
			}
			tail = append(tail, fmt.Sprint(row.Anywhere))
			if row.Required > 0 {
				tail = append(tail, fmt.Sprintf("%d/%d", row.Within, row.Required), fmt.Sprintf("(%d%%)", row.Within*100/row.Required))
			} else {
				tail = append(tail, "-")
			}
			if next >= len(lines) {
				t.Fatalf("%s %s: no line left:\n%s", r.Scheduler, row.Label(), table)
			}
			got := strings.Fields(lines[next])
			next++
			if i == 0 {
				if !strings.HasPrefix(lines[next-1], r.Scheduler) {
					t.Errorf("line %q does not start with %s", lines[next-1], r.Scheduler)
				}
				got = got[len(strings.Fields(lineName(r))):]
			}
			if !slices.Equal(got[:min(len(want), len(got))], want) || !slices.Equal(got[max(len(got)-len(tail), 0):], tail) {
				t.Errorf("%s %s: line %q, want it to begin %v and end %v", r.Scheduler, row.Label(), lines[next-1], want, tail)
			}
		}
	}
	fluence, _ := sim.SummarizeTopology(w, results[0])
	if all := fluence.Rows[0]; all.Required == 0 || all.Within != all.Required {
		t.Errorf("fluence: %d of %d required groups within their domain", all.Within, all.Required)
	}
	if !strings.Contains(lines[head+1], "/44 (100%)") {
		t.Errorf("fluence's first row %q does not show 100%% within", lines[head+1])
	}
	t.Logf("\n%s", table)
}

// lineName is how the table names the scheduler.
func lineName(r *sim.Result) string {
	if r.Model {
		return r.Scheduler + " (model)"
	}
	return r.Scheduler
}

// A workload without topology has no topology table.
func TestTopologyTableNone(t *testing.T) {
	w := sim.BackfillWorkload()
	r, err := sim.Run(w, sim.NewStock(), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := report.TopologyTable(&out, w, []*sim.Result{r}); err != nil || out.Len() != 0 {
		t.Errorf("wrote %q, error %v", out.String(), err)
	}
}
