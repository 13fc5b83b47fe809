package queue

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/jobspec"
)

// slotsOfCores is n slots of c cores each, for dur seconds.
func slotsOfCores(n, c, dur int64) *jobspec.Jobspec {
	return jobspec.New(jobspec.Slot(n, "task").With(jobspec.R("core", c))).Duration(dur).Obj()
}

// The skip rules change no decision: a manager that matches every group
// in every loop decides the same on random histories of submissions,
// completions, removals and nodes going down and up, under every policy.
func TestSkippingMatchesChangesNoDecision(t *testing.T) {
	var shortSkips int64
	defer func() {
		if shortSkips == 0 {
			t.Error("no match was skipped for a shortfall")
		}
		t.Logf("%d matches skipped for a shortfall", shortSkips)
	}()
	for _, pol := range Policies() {
		for _, packing := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/packing=%v", pol, packing), func(t *testing.T) {
				for trial := range 30 {
					shortSkips += compareHistories(t, Config{Policy: pol, Packing: packing, QueueDepth: 6}, uint64(trial))
				}
			})
		}
	}
}

func compareHistories(t *testing.T, cfg Config, seed uint64) int64 {
	t.Helper()
	mk := func(all bool) *Manager {
		q, _ := newTestQueue(t, "cluster[1]->node[6]->core[8]", cfg)
		q.matchAll = all
		return q
	}
	fast, ref := mk(false), mk(true)
	rng := rand.New(rand.NewPCG(seed, 99))
	nodeVs := fast.m.Graph().ByTypeName("node")
	var id int64
	for step := range 120 {
		now := int64(step * 10)
		both := func(f func(q *Manager) error) {
			if err1, err2 := f(fast), f(ref); (err1 == nil) != (err2 == nil) {
				t.Fatalf("seed %d step %d: errors differ: %v / %v", seed, step, err1, err2)
			}
		}
		// Jobs end by their planned end at the latest, as the gang core
		// makes them (it extends a plan before it runs out): a plan that
		// ran out would let a later loop find room the last one did not.
		for _, rid := range fast.Running() {
			if info, ok := fast.m.Info(rid); ok && info.At+info.Duration <= now {
				both(func(q *Manager) error { return q.Complete(rid) })
			}
		}
		switch r := rng.IntN(10); {
		case r < 4:
			id++
			js := slotsOfCores(int64(1+rng.IntN(6)), int64(1+rng.IntN(8)), int64(20+rng.IntN(200)))
			if rng.IntN(5) == 0 { // whole nodes: not plain slots, so not weighed
				js = nodes(int64(1+rng.IntN(3)), int64(20+rng.IntN(200)))
			}
			both(func(q *Manager) error {
				_, err := q.Submit(&Group{ID: id, Name: "g", Submit: now, Jobspec: js})
				return err
			})
		case r < 7:
			if run := fast.Running(); len(run) > 0 {
				done := run[rng.IntN(len(run))]
				both(func(q *Manager) error { return q.Complete(done) })
			}
		case r < 8:
			if p := fast.Pending(); len(p) > 0 {
				gone := p[rng.IntN(len(p))].ID
				both(func(q *Manager) error { return q.Remove(gone) })
			}
		case r < 9:
			v, up := nodeVs[rng.IntN(len(nodeVs))], rng.IntN(2) == 0
			both(func(q *Manager) error { return q.SetNodeStatus(v, up) })
		}
		a, err1 := fast.Schedule(now)
		sa := decisions(a)
		b, err2 := ref.Schedule(now)
		if sb := decisions(b); sa != sb || (err1 == nil) != (err2 == nil) {
			t.Fatalf("seed %d step %d at %d:\n skipping: %s\n matching: %s", seed, step, now, sa, sb)
		}
		if !slices.Equal(fast.m.JobIDs(), ref.m.JobIDs()) {
			t.Fatalf("seed %d step %d: matchers hold %v and %v", seed, step, fast.m.JobIDs(), ref.m.JobIDs())
		}
		for _, q := range []*Manager{fast, ref} {
			if err := q.Check(); err != nil {
				t.Fatalf("seed %d step %d:\n%v", seed, step, err)
			}
		}
	}
	if fast.Skipped == 0 {
		t.Errorf("seed %d: nothing was skipped", seed)
	}
	return fast.ShortfallSkips
}

func decisions(ds []Decision) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%d:%s@%d ", d.Group.ID, d.State, d.At)
		if d.State != Running {
			continue // a reservation kept from the last loop is not described again
		}
		for _, n := range d.Nodes {
			fmt.Fprintf(&b, "%d/%d,", n.Vertex, n.Core)
		}
	}
	return b.String()
}

// A group short of slots is not matched again while completions free less
// than it misses, and is once they free enough.
func TestShortfallWaitsForEnoughFreed(t *testing.T) {
	q, m := newTestQueue(t, "cluster[1]->node[4]->core[4]", Config{Policy: FCFS})
	submit := func(id, at int64, js *jobspec.Jobspec) {
		if _, err := q.Submit(&Group{ID: id, Name: "g", Submit: at, Jobspec: js}); err != nil {
			t.Fatal(err)
		}
	}
	// Four 1-core jobs, one per node (lonode packs node 0 first: 4 on it).
	for i := int64(1); i <= 4; i++ {
		submit(i, 0, slotsOfCores(4, 1, 100)) // each fills one node
	}
	q.Schedule(0)
	submit(9, 1, slotsOfCores(2, 4, 100)) // needs two whole nodes
	if ds, _ := q.Schedule(1); len(ds) != 1 || ds[0].State != Pending {
		t.Fatalf("setup: %v", ds)
	}
	matches := func() int64 { s := m.Stats(); return s.MatchOK + s.MatchFailed }
	if err := q.Complete(1); err != nil { // one node free: one slot of two
		t.Fatal(err)
	}
	before := matches()
	if ds, _ := q.Schedule(2); ds[0].State != Pending {
		t.Fatalf("started with one node free: %v", ds)
	}
	if matches() != before {
		t.Error("matched again though one freed node could not cover the two slots missing")
	}
	if err := q.Complete(2); err != nil {
		t.Fatal(err)
	}
	if ds, _ := q.Schedule(3); ds[0].State != Running {
		t.Fatalf("not started with two nodes free: %v", ds)
	}
}

// TestExactSlotGainIsFitsAfterLessBefore: on a node where the queue knows
// what was free, an event adds the slots that fit after it less those that
// fit before (slotGain computes it without building the sum).
func TestExactSlotGainIsFitsAfterLessBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	types := []string{"cpu", "memory", "pods"}
	randUnits := func(lo int64) units {
		var us units
		for _, typ := range types {
			if rng.IntN(4) > 0 {
				us = us.add(units{{typ, lo + rng.Int64N(20)}}, 1)
			}
		}
		return us
	}
	for i := range 2000 {
		shape, before, freed := randUnits(1), randUnits(-5), randUnits(0)
		fn := freedNode{exact: true, before: before, freed: freed}
		want := fits(slices.Clone(before).add(freed, 1), shape) - fits(before, shape)
		if got := slotGain(fn, shape); got != want {
			t.Fatalf("case %d: shape %v before %v freed %v: gain %d, want %d", i, shape, before, freed, got, want)
		}
	}
}
