package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/fluence-sched/fluence/pkg/queue"
)

func TestZZExplore(t *testing.T) {
	w := TopologyFragmentedWorkload()
	for _, pol := range []string{"easy", "fcfs", "hybrid", "conservative"} {
		s, err := NewFluence(FluenceConfig{Queue: queue.Config{Policy: queue.Policy(pol), QueueDepth: queue.DefaultQueueDepth, ReservationDepth: queue.DefaultReservationDepth, Packing: true}})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		r, err := Run(w, s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := SummarizeTopology(w, r)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println(pol, time.Since(t0), r.JobsCompleted, r.JobsTotal, r.Makespan, r.MeanWait, r.Config)
		for _, row := range sum.Rows {
			fmt.Printf("  %-16s %3d %3d %v any=%d within=%d/%d wait=%.1f\n", row.Label(), row.Groups, row.Placed, row.AtLevel, row.Anywhere, row.Within, row.Required, row.MeanWait)
		}
		if pol == "easy" {
			f := s.(*fluence)
			for i := 0; i < 14; i++ {
				fmt.Println("   ", w.Groups[i].Name, r.Jobs[i].Nodes, f.within[i], r.Jobs[i].Start)
			}
		}
	}
	for _, s := range []Scheduler{NewStock(), NewCoscheduling(60), NewQuotaWith(0, 0, DefaultAttemptSeconds)} {
		t0 := time.Now()
		r, err := Run(w, s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		sum, _ := SummarizeTopology(w, r)
		fmt.Println(s.Name(), time.Since(t0), r.JobsCompleted, r.JobsTotal, r.Stalled, r.Makespan, r.MeanWait)
		for _, row := range sum.Rows {
			fmt.Printf("  %-16s %3d %3d %v any=%d within=%d/%d wait=%.1f\n", row.Label(), row.Groups, row.Placed, row.AtLevel, row.Anywhere, row.Within, row.Required, row.MeanWait)
		}
	}
}
