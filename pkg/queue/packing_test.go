package queue

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/match"
)

// Group 1 holds one of the 4 nodes until 100; group 2 needs all 4 and
// reserves 100. The groups behind it end before 100, so any of them may
// run in the 3 free nodes.
func packingWorkload(h *harness, behind ...int64) {
	h.submit(1, 0, 0, nodes(1, 100))
	if got := h.schedule(0); got != "1:running@0" {
		h.t.Fatalf("setup: %s", got)
	}
	h.submit(2, 0, 1, nodes(4, 100))
	for i, n := range behind {
		h.submit(int64(3+i), 0, int64(2+i), nodes(n, 50))
	}
}

func TestPackingChoosesTheBestFill(t *testing.T) {
	tests := []struct {
		name    string
		behind  []int64 // nodes each group behind the head needs
		packing bool
		want    string
	}{
		// The first fit takes the 2-node group and strands a node.
		{name: "first fit", behind: []int64{2, 3}, want: "2:reserved@100 3:running@10 4:pending"},
		{name: "best fill", behind: []int64{2, 3}, packing: true, want: "2:reserved@100 3:pending 4:running@10"},
		// Equal fills keep queue order: 1+2 nodes before the 3-node group.
		{name: "tie keeps queue order", behind: []int64{1, 2, 3}, packing: true, want: "2:reserved@100 3:running@10 4:running@10 5:pending"},
		// Sets of several groups count: 1+2 beats the 2-node group ahead.
		{name: "a set beats one group", behind: []int64{2, 1, 2}, packing: true, want: "2:reserved@100 3:running@10 4:running@10 5:pending"},
		{name: "two groups behind", behind: []int64{2, 2, 1}, packing: true, want: "2:reserved@100 3:running@10 4:pending 5:running@10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{Policy: Easy, Packing: tc.packing})
			packingWorkload(h, tc.behind...)
			if got := h.schedule(10); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A group that would delay the reservation is never chosen, however well
// it fills: the reservation is in place before the search.
func TestPackingKeepsReservations(t *testing.T) {
	h := newHarness(t, Config{Policy: Easy, Packing: true})
	h.submit(1, 0, 0, nodes(1, 100))
	h.schedule(0)
	h.submit(2, 0, 1, nodes(4, 100))
	h.submit(3, 0, 2, nodes(1, 50))
	h.submit(4, 0, 3, nodes(3, 200)) // fills all 3 free nodes past 100
	if got := h.schedule(10); got != "2:reserved@100 3:running@10 4:pending" {
		t.Fatalf("got %q", got)
	}
	if err := h.q.Complete(1); err != nil {
		t.Fatal(err)
	}
	if err := h.q.Complete(3); err != nil {
		t.Fatal(err)
	}
	if got := h.schedule(100); got != "2:running@100 4:reserved@200" {
		t.Fatalf("t=100: %q, want the head started at its reservation", got)
	}
}

// Packing changes nothing where no group is left to start only now: fcfs
// stops at the head, conservative reserves for every group.
func TestPackingOnlyAfterTheReservations(t *testing.T) {
	for _, p := range []Policy{FCFS, Conservative} {
		plain, packed := newHarness(t, Config{Policy: p}), newHarness(t, Config{Policy: p, Packing: true})
		packingWorkload(plain, 2, 3)
		packingWorkload(packed, 2, 3)
		if a, b := plain.schedule(10), packed.schedule(10); a != b {
			t.Errorf("%s: packing changed the loop: %q, without %q", p, b, a)
		}
	}
}

// A loop with nothing changed since the last one makes no match with
// packing either: every candidate's answer is known.
func TestPackingSkipsUnchangedLoops(t *testing.T) {
	h := newHarness(t, Config{Policy: Easy, Packing: true})
	packingWorkload(h, 2, 3, 3)
	first := h.schedule(10)
	before := h.m.Stats()
	if second := h.schedule(11); second != "2:reserved@100 3:pending 5:pending" || !strings.HasPrefix(first, "2:reserved@100") {
		t.Fatalf("loops %q then %q", first, second)
	}
	if after := h.m.Stats(); after.MatchOK != before.MatchOK || after.MatchFailed != before.MatchFailed {
		t.Errorf("the unchanged loop matched: %+v then %+v", before, after)
	}
}

func TestPackingBudgetValidated(t *testing.T) {
	c := Config{Policy: Easy, Packing: true, PackingBudget: -1}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "packing budget -1") {
		t.Fatalf("error %v", err)
	}
	c = Config{Policy: Easy}
	if err := c.Validate(); err != nil || c.PackingBudget != DefaultPackingBudget {
		t.Fatalf("default budget %d (%v)", c.PackingBudget, err)
	}
}

// On random queues the packed loop starts a set filling at least as much
// as the first fit does from the same state, the matcher holds exactly
// the running and reserved groups after every loop, and a tiny search
// budget still starts a maximal set.
func TestPackingNeverFillsLessThanFirstFit(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	better := 0
	for trial := range 200 {
		budget := 0
		if trial%4 == 3 {
			budget = 1
		}
		plain := newHarness(t, Config{Policy: Easy})
		packed := newHarness(t, Config{Policy: Easy, Packing: true, PackingBudget: budget})
		hold := int64(1 + rng.IntN(3))
		packingWorkloadBoth := func(h *harness) { h.submit(1, 0, 0, nodes(hold, 100)); h.schedule(0) }
		packingWorkloadBoth(plain)
		packingWorkloadBoth(packed)
		// A 4-node group at the head cannot start: the rest backfill.
		plain.submit(2, 0, 1, nodes(4, 100))
		packed.submit(2, 0, 1, nodes(4, 100))
		for id := int64(3); id < int64(4+rng.IntN(8)); id++ {
			js := nodes(int64(1+rng.IntN(4)), int64(20+rng.IntN(80)))
			plain.submit(id, 0, id, js)
			packed.submit(id, 0, id, js)
		}
		plain.schedule(10)
		packed.schedule(10)
		used := func(h *harness) (n int64) {
			for _, id := range h.q.Running() {
				info, _ := h.m.Info(id)
				n += int64(len(info.Nodes))
			}
			return n
		}
		if a, b := used(plain), used(packed); b < a {
			t.Errorf("trial %d: packing holds %d nodes, the first fit %d", trial, b, a)
		} else if b > a {
			better++
		}
		for _, h := range []*harness{plain, packed} {
			want := h.q.Running()
			for _, g := range h.q.Pending() {
				if st, _, _ := h.q.StateOf(g.ID); st == Reserved {
					want = append(want, g.ID)
				}
			}
			slices.Sort(want)
			if got := h.m.JobIDs(); !slices.Equal(got, want) {
				t.Fatalf("trial %d: matcher holds %v, queue says %v", trial, got, want)
			}
			if err := h.q.Check(); err != nil {
				t.Fatalf("trial %d:\n%v", trial, err)
			}
		}
		// Maximal: no waiting group fits beside what runs.
		for _, g := range packed.q.Pending() {
			if st, _, _ := packed.q.StateOf(g.ID); st != Pending {
				continue
			}
			if ok := packed.fitsNow(g.ID, 10); ok {
				t.Errorf("trial %d: group %d fits beside the packed set but waits", trial, g.ID)
			}
		}
	}
	if better == 0 {
		t.Error("packing never filled more than the first fit")
	}
	t.Logf("packing filled more than the first fit in %d of 200 trials", better)
}

// fitsNow reports whether a queued group could start now beside what the
// matcher holds, leaving the matcher as it was.
func (h *harness) fitsNow(id, now int64) bool {
	h.t.Helper()
	e := h.q.byID[id]
	const probe = int64(1) << 40
	res, err := h.m.Match(match.Allocate, e.g.Jobspec, probe, now)
	if err != nil {
		h.t.Fatal(err)
	}
	if res.Status != match.Allocated {
		return false
	}
	if err := h.m.Cancel(probe); err != nil {
		h.t.Fatal(err)
	}
	return true
}
