package main

import (
	"fmt"
	"io"
	"math"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/queue"
	"github.com/fluence-sched/fluence/pkg/sim"
	"github.com/fluence-sched/fluence/pkg/sim/report"
)

// checkPreemptFlags checks the preemption table's flags.
func checkPreemptFlags(f simFlags) error {
	switch {
	case f.preemptAfter < 0:
		return fmt.Errorf("--preempt-after %d: give a number of seconds, 0 or more", f.preemptAfter)
	case f.preemptMinRun < 0:
		return fmt.Errorf("--preempt-min-runtime %d: give a number of seconds, 0 or more", f.preemptMinRun)
	case f.preemptTimeout < 1:
		return fmt.Errorf("--preempt-timeout %d: give a number of seconds, 1 or more", f.preemptTimeout)
	case !(f.evictionGrace >= 0) || math.IsInf(f.evictionGrace, 0):
		return fmt.Errorf("--eviction-grace %v: give a finite number of seconds, 0 or more", f.evictionGrace)
	}
	return nil
}

// simPreemption runs and prints the preemption table: fluence (the first
// --queue-policy) without and with preemption, the stock model without
// and with its pod-by-pod preemption. For a workload whose urgent groups
// require a domain (sim.HasRackPreemption: packed-rack) it prints the
// rack comparison instead (sim.CompareRackPreemption).
func simPreemption(stdout io.Writer, f simFlags, w *sim.Workload, opts sim.Options) error {
	if !(f.defaultDur >= 1) || math.IsInf(f.defaultDur, 0) {
		return fmt.Errorf("--default-duration %v: give a number of seconds, 1 or more", f.defaultDur)
	}
	p := gang.Preemption{After: f.preemptAfter, MinRuntime: f.preemptMinRun, Timeout: f.preemptTimeout}
	grace := f.evictionGrace
	if grace == 0 {
		grace = -1 // FluenceConfig and StockOptions read 0 as "default"
	}
	setup := sim.PreemptionSetup{
		Fluence: sim.FluenceConfig{MatchPolicy: f.matchPolicy, Oracle: f.oracle, DefaultDuration: int64(math.Ceil(f.defaultDur)),
			Queue: queue.Config{Policy: queue.Policy(f.queuePolicies[0]), QueueDepth: f.queueDepth, ReservationDepth: f.resDepth, Packing: f.packing}},
		Preemption:    p,
		Stock:         sim.StockOptions{Backoff: sim.DefaultBackoff, AttemptSeconds: f.attempt},
		EvictionGrace: grace,
	}
	compare, table := sim.ComparePreemption, report.PreemptionTable
	if sim.HasRackPreemption(w) {
		compare, table = sim.CompareRackPreemption, report.RackPreemptionTable
	}
	runs, err := compare(w, setup, opts)
	if err != nil {
		return err
	}
	return table(stdout, w, p, f.evictionGrace, runs)
}
