package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// --workload urgent prints the preemption table after the comparison:
// fluence without and with preemption, the stock model without and with
// its pod-by-pod preemption.
func TestSimUrgentPrintsThePreemptionTable(t *testing.T) {
	cmd := simCmd()
	cmd.SetArgs([]string{"--workload", "urgent", "--schedulers", "fluence", "--queue-policy", "easy", "--no-files", "--preempt-after", "30"})
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"workload urgent: 46 jobs, 184 pods, 8 nodes, 24.0 cores",
		"preemption on workload urgent: 6 urgent groups (priority 1000) of 46",
		"more than 30 s away",
		"\nfluence, no preemption  ", "\nfluence, preemption  ", "\nstock (model), no preemption  ", "\nstock (model), pod-by-pod preemption  ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	// The backfill workload has one priority: no such table.
	cmd = simCmd()
	cmd.SetArgs([]string{"--workload", "backfill", "--schedulers", "fluence", "--queue-policy", "easy", "--no-files"})
	out.Reset()
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "preemption on workload") {
		t.Errorf("a preemption table for a workload of one priority:\n%s", out.String())
	}
}

func TestSimPreemptFlags(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"--preempt-after", "-1", "--preempt-after -1: give a number of seconds, 0 or more"},
		{"--preempt-min-runtime", "-5", "--preempt-min-runtime -5"},
		{"--preempt-timeout", "0", "--preempt-timeout 0: give a number of seconds, 1 or more"},
		{"--eviction-grace", "-1", "--eviction-grace -1"},
	} {
		cmd := simCmd()
		cmd.SetArgs([]string{"--workload", "urgent", "--no-files", tc.flag, tc.value})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: error %v, want %q", tc.flag, tc.value, err, tc.want)
		}
	}
}

// --workload packed-rack prints the rack comparison in place of the
// preemption table: the topology-aware row starts every urgent gang
// within one rack and moves at least one group; the row with the rack
// requirement dropped does not keep them all in one rack. The figures
// are read from the table, not written here.
func TestSimPackedRackPrintsTheRackTable(t *testing.T) {
	cmd := simCmd()
	if u := cmd.Flags().Lookup("workload").Usage; !strings.Contains(u, "packed-rack") {
		t.Errorf("--workload usage %q does not list packed-rack", u)
	}
	cmd.SetArgs([]string{"--workload", "packed-rack", "--seeds", "1", "--schedulers", "fluence", "--queue-policy", "easy", "--no-files"})
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"workload packed-rack-1: 39 jobs",
		"topology-aware preemption on workload packed-rack-1: 8 urgent groups (priority 1000) of 39, each requiring one example.com/rack",
		"URGENT IN ONE RACK",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "\npreemption on workload") {
		t.Errorf("the plain preemption table too:\n%s", got)
	}
	// cells returns a row's cells after its label: COMPLETED, URGENT
	// STARTED, MEAN and MAX WAIT, IN ONE RACK, MAKESPAN, EVICTIONS, MOVES,
	// WORK LOST.
	cells := func(label string) []string {
		for _, line := range strings.Split(got, "\n") {
			if rest, ok := strings.CutPrefix(line, label+"  "); ok {
				return strings.Fields(rest)
			}
		}
		t.Fatalf("no row %q in\n%s", label, got)
		return nil
	}
	topo := cells("fluence, topology-aware preemption")
	if topo[4] != "8/8" || topo[7] == "0" {
		t.Errorf("topology-aware row: %s urgent gangs in one rack, %s moves: %v", topo[4], topo[7], topo)
	}
	if anywhere := cells("fluence, preemption, rack requirement dropped"); anywhere[4] == "8/8" {
		t.Errorf("rack requirement dropped, yet every urgent gang within one rack: %v", anywhere)
	}
	none := cells("fluence, no preemption")
	if none[6] != "0/0" || topo[6] == "0/0" {
		t.Errorf("evictions: %s without preemption, %s with", none[6], topo[6])
	}
}
