package queue

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// nodes is a group of n exclusive nodes for dur seconds.
func nodes(n, dur int64) *jobspec.Jobspec {
	return jobspec.New(jobspec.R("node", n).Exclusive().With(
		jobspec.Slot(1, "t").With(jobspec.R("core", 1)))).Duration(dur).Obj()
}

// harness is a 4-node cluster with a queue manager.
type harness struct {
	t *testing.T
	m *match.Matcher
	q *Manager
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	q, m := newTestQueue(t, "cluster[1]->node[4]->core[4]", cfg)
	return &harness{t: t, m: m, q: q}
}

// newTestQueue builds a queue over a lonode matcher on a generated graph.
func newTestQueue(t *testing.T, spec string, cfg Config) (*Manager, *match.Matcher) {
	t.Helper()
	m, err := match.New(resource.MustGenerate(spec), match.Options{Policy: "lonode"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := New(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return q, m
}

func (h *harness) submit(id, prio, at int64, js *jobspec.Jobspec) Decision {
	h.t.Helper()
	d, err := h.q.Submit(&Group{ID: id, Name: "g", Priority: prio, Submit: at, Jobspec: js})
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}

// schedule runs a loop and returns "id:state@at" for each decision.
func (h *harness) schedule(now int64) string {
	h.t.Helper()
	ds, err := h.q.Schedule(now)
	if err != nil {
		h.t.Fatal(err)
	}
	var parts []string
	for _, d := range ds {
		s := d.State.String()
		if d.State == Running || d.State == Reserved {
			s += "@" + itoa(d.At)
		}
		parts = append(parts, itoa(d.Group.ID)+":"+s)
	}
	return strings.Join(parts, " ")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// backfillWorkload: group 1 holds 3 of 4 nodes until 100; group 2 needs all
// 4 for 100 s; group 3 needs 1 node for 50 s (fits before 100); group 4
// needs 1 node for 200 s (would delay group 2).
func backfillWorkload(h *harness) {
	h.submit(1, 0, 0, nodes(3, 100))
	if got := h.schedule(0); got != "1:running@0" {
		h.t.Fatalf("setup: %s", got)
	}
	h.submit(2, 0, 1, nodes(4, 100))
	h.submit(3, 0, 2, nodes(1, 50))
	h.submit(4, 0, 3, nodes(1, 200))
}

func TestPolicies(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		// fcfs: the blocked head stops the loop; nothing is backfilled.
		{Config{Policy: FCFS}, "2:pending"},
		// easy: the head reserves the earliest start, a short job runs in the
		// gap, a long one waits rather than delay the reservation.
		{Config{Policy: Easy}, "2:reserved@100 3:running@10 4:pending"},
		// conservative: every group reserves; group 4 starts after group 2.
		{Config{Policy: Conservative}, "2:reserved@100 3:running@10 4:reserved@200"},
		// hybrid with depth 1 behaves as easy.
		{Config{Policy: Hybrid, ReservationDepth: 1}, "2:reserved@100 3:running@10 4:pending"},
		// queue-depth 2 never considers group 4.
		{Config{Policy: Conservative, QueueDepth: 2}, "2:reserved@100 3:running@10"},
	}
	for _, c := range cases {
		t.Run(string(c.cfg.Policy), func(t *testing.T) {
			h := newHarness(t, c.cfg)
			backfillWorkload(h)
			if got := h.schedule(10); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestEasyBackfillDoesNotDelayReservation plays the backfill workload to
// the end: the blocked group starts exactly at its reserved time.
func TestEasyBackfillDoesNotDelayReservation(t *testing.T) {
	h := newHarness(t, Config{Policy: Easy})
	backfillWorkload(h)
	h.schedule(10) // 2 reserved at 100, 3 runs
	if err := h.q.Complete(3); err != nil {
		t.Fatal(err)
	}
	if got := h.schedule(60); got != "2:reserved@100 4:pending" {
		t.Fatalf("t=60: %s", got)
	}
	if err := h.q.Complete(1); err != nil {
		t.Fatal(err)
	}
	if got := h.schedule(100); got != "2:running@100 4:reserved@200" {
		t.Fatalf("t=100: %s", got)
	}
}

// TestReservationsMoveEarlier: reservations are recomputed each loop, so a
// job ending early brings the reserved start forward.
func TestReservationsMoveEarlier(t *testing.T) {
	h := newHarness(t, Config{Policy: Easy})
	backfillWorkload(h)
	h.schedule(10)
	if err := h.q.Complete(1); err != nil { // ends at 40 instead of 100
		t.Fatal(err)
	}
	if got := h.schedule(40); got != "2:reserved@60 4:pending" {
		t.Fatalf("got %s, want group 2 reserved when group 3 ends at 60", got)
	}
}

func TestPriorityThenSubmitOrder(t *testing.T) {
	h := newHarness(t, Config{Policy: FCFS})
	h.submit(1, 0, 0, nodes(4, 100))
	h.submit(2, 5, 1, nodes(4, 100))
	h.submit(3, 5, 0, nodes(4, 100))
	if got := h.schedule(0); got != "3:running@0 2:pending" {
		t.Fatalf("got %s", got)
	}
	var ids []int64
	for _, g := range h.q.Pending() {
		ids = append(ids, g.ID)
	}
	if len(ids) != 2 || ids[0] != 2 || ids[1] != 1 {
		t.Fatalf("pending order %v, want [2 1]", ids)
	}
}

func TestUnsatisfiableRejectedAtSubmit(t *testing.T) {
	h := newHarness(t, Config{Policy: FCFS})
	d := h.submit(1, 0, 0, nodes(50, 10))
	if d.State != Rejected || !strings.Contains(d.Reason, "UNSATISFIABLE") || !strings.Contains(d.Reason, "node") {
		t.Fatalf("got %+v", d)
	}
	// It never blocks the groups behind it.
	h.submit(2, 0, 1, nodes(1, 10))
	if got := h.schedule(0); got != "2:running@0" {
		t.Fatalf("got %s", got)
	}
}

func TestBlockedUntilResourcesChange(t *testing.T) {
	h := newHarness(t, Config{Policy: Easy})
	for _, v := range h.m.Graph().ByTypeName("node")[:2] {
		if err := h.m.MarkDown(v); err != nil {
			t.Fatal(err)
		}
	}
	h.submit(1, 0, 0, nodes(3, 10))
	if got := h.schedule(0); got != "1:blocked" {
		t.Fatalf("got %s", got)
	}
	if st, reason, _ := h.q.StateOf(1); st != Blocked || !strings.Contains(reason, "down") {
		t.Fatalf("state %s reason %q", st, reason)
	}
	if got := h.schedule(1); got != "" {
		t.Fatalf("blocked group considered again: %s", got)
	}
	if err := h.m.MarkUp(h.m.Graph().ByTypeName("node")[0]); err != nil {
		t.Fatal(err)
	}
	if rej, err := h.q.ResourcesChanged(); err != nil || len(rej) != 0 {
		t.Fatalf("ResourcesChanged: %v %v", rej, err)
	}
	if got := h.schedule(2); got != "1:running@2" {
		t.Fatalf("after node up: %s", got)
	}
}

func TestRemoveReleasesEverything(t *testing.T) {
	h := newHarness(t, Config{Policy: Conservative})
	backfillWorkload(h)
	h.schedule(10)
	for _, id := range []int64{1, 2, 3, 4} {
		if err := h.q.Remove(id); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.m.JobIDs()); n != 0 {
		t.Fatalf("%d jobs left in the matcher", n)
	}
	if err := h.q.Remove(1); err == nil {
		t.Fatal("removing an unknown group succeeded")
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{{Policy: "lifo"}, {Policy: Easy, QueueDepth: -1}, {Policy: Hybrid, ReservationDepth: 2_000_000}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	c := Config{}
	if err := c.Validate(); err != nil || c.Policy != FCFS || c.QueueDepth != 32 || c.ReservationDepth != 64 {
		t.Errorf("defaults: %+v %v", c, err)
	}
}

// TestBlockedByOverrunUntilCompletion: a job running past its planned end
// still holds its nodes, so no reservation can be found (every planned
// change is in the past): the group waits on the blocked list, and the
// completion of the overrunning job returns it to the queue.
func TestBlockedByOverrunUntilCompletion(t *testing.T) {
	h := newHarness(t, Config{Policy: Easy})
	h.submit(1, 0, 0, nodes(4, 10))
	if got := h.schedule(0); got != "1:running@0" {
		t.Fatalf("setup: %s", got)
	}
	h.submit(2, 0, 5, nodes(1, 10))
	if got := h.schedule(20); got != "2:blocked" {
		t.Fatalf("t=20, group 1 overrunning: %s", got)
	}
	if err := h.q.Complete(1); err != nil {
		t.Fatal(err)
	}
	if got := h.schedule(25); got != "2:running@25" {
		t.Fatalf("after the overrunning job ended: %s", got)
	}
}

// TestExtendMovesReservation: group 1 overruns its declared 100 s; once
// extended, group 2's reservation moves past the new end.
func TestExtendMovesReservation(t *testing.T) {
	h := newHarness(t, Config{Policy: Easy})
	backfillWorkload(h)
	h.schedule(10) // 2 reserved at 100
	if err := h.q.Extend(1, 150); err != nil {
		t.Fatal(err)
	}
	// 3 still runs until 60 and 4 (200 s) now fits nowhere before 150 either.
	if got := h.schedule(10); got != "2:reserved@150 4:pending" {
		t.Fatalf("after extend: %s", got)
	}
	if err := h.q.Extend(3, 10); err != nil {
		t.Fatalf("shortening: %v", err)
	}
	if err := h.q.Extend(42, 10); err == nil {
		t.Fatal("extending an unknown group succeeded")
	}
}

// TestPlaceRecordsRunningGroup: a replayed group holds its nodes, can be
// completed like any running group, and a second copy is refused.
func TestPlaceRecordsRunningGroup(t *testing.T) {
	h := newHarness(t, Config{Policy: Easy})
	js := jobspec.New(jobspec.Slot(2, "p").With(jobspec.R("core", 4))).Duration(100).Obj()
	n0, n1 := h.m.Graph().ByName("node0")[0], h.m.Graph().ByName("node1")[0]
	d, err := h.q.Place(&Group{ID: 7, Name: "replayed", Jobspec: js}, []int32{n0, n1}, 5)
	if err != nil || d.State != Running {
		t.Fatalf("place: %+v %v", d, err)
	}
	// Only two whole nodes are left.
	h.submit(8, 0, 6, nodes(3, 10))
	if got := h.schedule(6); got != "8:reserved@105" {
		t.Fatalf("after replay: %s", got)
	}
	if _, err := h.q.Place(&Group{ID: 7, Jobspec: js}, []int32{n0, n1}, 5); err == nil {
		t.Fatal("placing the same id twice succeeded")
	}
	// The same nodes are full: a second replay there is refused, not recorded.
	d, err = h.q.Place(&Group{ID: 9, Jobspec: js}, []int32{n0, n1}, 6)
	if err != nil || d.State != Pending || !strings.Contains(d.Reason, "does not fit") {
		t.Fatalf("over-commit: %+v %v", d, err)
	}
	if err := h.q.Complete(7); err != nil {
		t.Fatal(err)
	}
	if got := h.schedule(7); got != "8:running@7" {
		t.Fatalf("after completion: %s", got)
	}
}

// A group held off until a later time keeps its place: under easy it holds
// the reservation at its NotBefore, so a short group may run in the gap
// but a long one may not start ahead of it; under fcfs nothing behind it
// starts. Once the time comes it starts like any other group.
func TestHeldGroupKeepsItsPlace(t *testing.T) {
	cases := []struct {
		cfg       Config
		at0, at10 string
	}{
		{Config{Policy: Easy}, "1:reserved@10 2:running@0 3:pending", "1:running@10 3:reserved@20"},
		{Config{Policy: FCFS}, "1:pending", "1:running@10 2:pending"},
		{Config{Policy: Conservative}, "1:reserved@10 2:running@0 3:reserved@20", "1:running@10 3:reserved@20"},
	}
	for _, c := range cases {
		t.Run(string(c.cfg.Policy), func(t *testing.T) {
			h := newHarness(t, c.cfg)
			// Group 1 needs all 4 nodes for 10 s but may not start before 10.
			if _, err := h.q.Submit(&Group{ID: 1, Name: "held", Submit: 0, NotBefore: 10, Jobspec: nodes(4, 10)}); err != nil {
				t.Fatal(err)
			}
			h.submit(2, 0, 1, nodes(1, 5))  // ends before 10: may run in the gap
			h.submit(3, 0, 2, nodes(1, 30)) // would delay group 1
			if got := h.schedule(0); got != c.at0 {
				t.Fatalf("t=0: %q, want %q", got, c.at0)
			}
			if c.cfg.Policy != FCFS {
				if err := h.q.Complete(2); err != nil {
					t.Fatal(err)
				}
			}
			if got := h.schedule(10); got != c.at10 {
				t.Fatalf("t=10: %q, want %q", got, c.at10)
			}
		})
	}
}
