package sim

import (
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// TestEasyBackfillCutsWaitWithoutDelayingTheBlockedGroup: on a workload
// with a large blocked group and many short small ones, easy backfill lowers
// the mean wait against fcfs, and the large group still starts when the
// nodes it needs are freed (t = 100, when "head" releases them) under both.
func TestEasyBackfillCutsWaitWithoutDelayingTheBlockedGroup(t *testing.T) {
	run := func(p queue.Policy) *Result {
		s, err := NewFluence(FluenceConfig{MatchPolicy: "lonode", Queue: queue.Config{Policy: p}})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(BackfillWorkload(), s, Options{PodReleaseGap: -1})
		if err != nil {
			t.Fatal(err)
		}
		if r.JobsCompleted != r.JobsTotal {
			t.Fatalf("%s: %d of %d completed", p, r.JobsCompleted, r.JobsTotal)
		}
		return r
	}
	start := func(r *Result, name string) float64 {
		for _, j := range r.Jobs {
			if j.Name == name {
				return j.Start
			}
		}
		t.Fatalf("no job %s", name)
		return 0
	}
	fcfs, easy := run(queue.FCFS), run(queue.Easy)
	if easy.MeanWait >= fcfs.MeanWait {
		t.Errorf("mean wait: easy %.1f s, fcfs %.1f s; backfill should cut it", easy.MeanWait, fcfs.MeanWait)
	}
	for _, r := range []*Result{fcfs, easy} {
		if got := start(r, "big"); got != 100 {
			t.Errorf("%s: the large group started at %.1f, want 100 (its reservation)", r.Config, got)
		}
	}
	// Backfill did happen: some short group started before the large one.
	backfilled := 0
	for _, j := range easy.Jobs {
		if j.Start >= 0 && j.Start < 100 && j.Name != "head" {
			backfilled++
		}
	}
	if backfilled == 0 {
		t.Error("easy: no group ran ahead of the blocked large group")
	}
	t.Logf("mean wait fcfs %.1f s, easy %.1f s; %d groups backfilled", fcfs.MeanWait, easy.MeanWait, backfilled)
}
