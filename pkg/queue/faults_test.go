package queue

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/match"
)

var errInjected = errors.New("injected failure")

// faultyEngine is a matcher whose calls that may fail fail on demand: a
// call fail picks returns errInjected and changes nothing, as a matcher
// call that fails does.
type faultyEngine struct {
	*match.Matcher
	calls int
	fail  func(call int, op string, id int64) bool
}

func (f *faultyEngine) fault(op string, id int64) error {
	f.calls++
	if f.fail != nil && f.fail(f.calls, op, id) {
		return fmt.Errorf("%s of job %d: %w", op, id, errInjected)
	}
	return nil
}

func (f *faultyEngine) Match(op match.Op, js *jobspec.Jobspec, id, now int64) (*match.Result, error) {
	if err := f.fault("match", id); err != nil {
		return nil, err
	}
	return f.Matcher.Match(op, js, id, now)
}

func (f *faultyEngine) MatchRequest(op match.Op, rq *match.Request, id, now int64) (*match.Result, error) {
	if err := f.fault("match", id); err != nil {
		return nil, err
	}
	return f.Matcher.MatchRequest(op, rq, id, now)
}

func (f *faultyEngine) FitsRequest(rq *match.Request, id, now int64) (*match.Result, error) {
	if err := f.fault("fits", id); err != nil {
		return nil, err
	}
	return f.Matcher.FitsRequest(rq, id, now)
}

func (f *faultyEngine) ReserveFrom(js *jobspec.Jobspec, id, now, from int64) (*match.Result, error) {
	if err := f.fault("reserve", id); err != nil {
		return nil, err
	}
	return f.Matcher.ReserveFrom(js, id, now, from)
}

func (f *faultyEngine) Place(js *jobspec.Jobspec, id, now int64, slotNodes []int32) (*match.Result, error) {
	if err := f.fault("place", id); err != nil {
		return nil, err
	}
	return f.Matcher.Place(js, id, now, slotNodes)
}

func (f *faultyEngine) Cancel(id int64) error {
	if err := f.fault("cancel", id); err != nil {
		return err
	}
	return f.Matcher.Cancel(id)
}

func (f *faultyEngine) PartialCancel(id int64, vertices []int32) (bool, error) {
	if err := f.fault("partial cancel", id); err != nil {
		return false, err
	}
	return f.Matcher.PartialCancel(id, vertices)
}

func (f *faultyEngine) Extend(id, duration int64) error {
	if err := f.fault("extend", id); err != nil {
		return err
	}
	return f.Matcher.Extend(id, duration)
}

func (f *faultyEngine) MarkDown(v int32) error {
	if err := f.fault("mark down", int64(v)); err != nil {
		return err
	}
	return f.Matcher.MarkDown(v)
}

func (f *faultyEngine) MarkUp(v int32) error {
	if err := f.fault("mark up", int64(v)); err != nil {
		return err
	}
	return f.Matcher.MarkUp(v)
}

// faulty puts a faultyEngine between the harness's queue and matcher.
func (h *harness) faulty() *faultyEngine {
	f := &faultyEngine{Matcher: h.m}
	h.q.m = f
	return f
}

// The packing step fails at each of its matcher calls in turn: whatever
// it had allocated is cancelled, the queue and the matcher agree, the
// error is returned, and the next loop places the groups.
func TestFailedPackingRollsBack(t *testing.T) {
	tests := []struct {
		name   string
		behind []int64 // nodes each group behind the reserved head needs
		op     string
		id     int64 // the job whose call fails
		nth    int   // of that job's calls of op
	}{
		// 3 and 4 start as the first fit; 5 cannot start beside them.
		{name: "first fit", behind: []int64{1, 1, 2}, op: "match", id: 4, nth: 1},
		// The first fit (3) is undone so 4 may be weighed alone.
		{name: "undoing the first fit", behind: []int64{2, 3}, op: "cancel", id: 3, nth: 1},
		{name: "weighing alone", behind: []int64{2, 3}, op: "fits", id: 4, nth: 1},
		// The search places 3 to look for a set with it.
		{name: "searching", behind: []int64{2, 1, 2}, op: "match", id: 4, nth: 2},
		{name: "cancelling in the search", behind: []int64{2, 1, 2}, op: "cancel", id: 3, nth: 2},
		// The best set (4) is started, then 3 fails beside it.
		{name: "starting the best set", behind: []int64{2, 3}, op: "match", id: 3, nth: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{Policy: Easy, Packing: true})
			packingWorkload(h, tt.behind...)
			f := h.faulty()
			seen, failed := 0, false
			f.fail = func(_ int, op string, id int64) bool {
				if op == tt.op && id == tt.id {
					seen++
					failed = failed || seen == tt.nth
					return seen == tt.nth
				}
				return false
			}
			ds, err := h.q.Schedule(10)
			if !failed {
				t.Fatalf("job %d had %d %s calls, fewer than %d", tt.id, seen, tt.op, tt.nth)
			}
			if !errors.Is(err, errInjected) {
				t.Fatalf("the loop returned %v, want the injected failure", err)
			}
			if err := h.q.Check(); err != nil {
				t.Fatalf("after the failed loop:\n%v", err)
			}
			for _, d := range ds {
				if st, _, _ := h.q.StateOf(d.Group.ID); d.State != Rejected && st != d.State {
					t.Errorf("decision %d:%s, the queue says %s", d.Group.ID, d.State, st)
				}
			}
			f.fail = nil
			if got := h.schedule(11); !strings.Contains(got, "running@11") {
				t.Errorf("the next loop started nothing: %s", got)
			}
			if err := h.q.Check(); err != nil {
				t.Fatalf("after the next loop:\n%v", err)
			}
		})
	}
}

// On random histories under every policy, any one matcher call of a
// step may fail: the step returns the failure and leaves the queue and
// the matcher in agreement, so the steps after it go on without error.
func TestFailuresLeaveQueueConsistent(t *testing.T) {
	for _, pol := range Policies() {
		for _, packing := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/packing=%v", pol, packing), func(t *testing.T) {
				injected := 0
				for seed := range uint64(20) {
					injected += faultyHistory(t, Config{Policy: pol, Packing: packing, QueueDepth: 6}, seed)
				}
				if injected == 0 {
					t.Error("no failure was injected")
				}
			})
		}
	}
}

// faultyHistory plays a random history with failures injected into some
// steps and checks the queue after every step; it returns how many
// failures were injected.
func faultyHistory(t *testing.T, cfg Config, seed uint64) int {
	t.Helper()
	q, m := newTestQueue(t, "cluster[1]->node[6]->core[8]", cfg)
	f := &faultyEngine{Matcher: m}
	q.m = f
	rng := rand.New(rand.NewPCG(seed, 7))
	nodeVs := m.Graph().ByTypeName("node")
	injected := 0
	var id int64
	for step := range 120 {
		now := int64(step * 10)
		// Some steps fail at one of their first calls.
		failAt := 0
		if rng.IntN(3) == 0 {
			failAt = f.calls + 1 + rng.IntN(12)
		}
		f.fail = func(call int, _ string, _ int64) bool { return call == failAt }
		do := func(what string, op func() error) {
			t.Helper()
			err := op()
			if err != nil && !errors.Is(err, errInjected) {
				t.Fatalf("seed %d step %d: %s: %v", seed, step, what, err)
			}
			if err != nil {
				injected++
			}
			if cerr := q.Check(); cerr != nil {
				t.Fatalf("seed %d step %d: after %s (error %v):\n%v", seed, step, what, err, cerr)
			}
		}
		for _, rid := range q.Running() {
			if info, ok := m.Info(rid); ok && info.At+info.Duration <= now {
				do("complete", func() error { return q.Complete(rid) })
			}
		}
		switch r := rng.IntN(12); {
		case r < 4:
			id++
			js := slotsOfCores(int64(1+rng.IntN(6)), int64(1+rng.IntN(8)), int64(20+rng.IntN(200)))
			if rng.IntN(5) == 0 {
				js = nodes(int64(1+rng.IntN(3)), int64(20+rng.IntN(200)))
			}
			g := &Group{ID: id, Name: "g", Submit: now, Jobspec: js}
			if rng.IntN(6) == 0 {
				g.NotBefore = now + int64(5+rng.IntN(30))
			}
			do("submit", func() error { _, err := q.Submit(g); return err })
		case r < 6:
			if run := q.Running(); len(run) > 0 {
				done := run[rng.IntN(len(run))]
				do("complete", func() error { return q.Complete(done) })
			}
		case r < 7:
			if p := q.Pending(); len(p) > 0 {
				gone := p[rng.IntN(len(p))].ID
				do("remove", func() error { return q.Remove(gone) })
			}
		case r < 8:
			v, up := nodeVs[rng.IntN(len(nodeVs))], rng.IntN(2) == 0
			do("node status", func() error { return q.SetNodeStatus(v, up) })
		case r < 9:
			do("resources changed", func() error { _, err := q.ResourcesChanged(); return err })
		case r < 10:
			if run := q.Running(); len(run) > 0 {
				long := run[rng.IntN(len(run))]
				info, _ := m.Info(long)
				do("extend", func() error { return q.Extend(long, info.Duration+50) })
			}
		}
		do("schedule", func() error { _, err := q.Schedule(now); return err })
	}
	return injected
}
