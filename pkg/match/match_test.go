package match

import (
	"slices"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/jobspec"
)

const tiny = "cluster[1]->node[4]->socket[2]->{core[4],gpu[1],memory[2]:16}"

func mustMatch(t *testing.T, m *Matcher, op Op, js *jobspec.Jobspec, id, now int64) *Result {
	t.Helper()
	res, err := m.Match(op, js, id, now)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func totalCores(nodes []NodeUsage) (cores, gpus, mem int64) {
	for _, n := range nodes {
		cores += n.Core
		gpus += n.GPU
		mem += n.Memory
	}
	return
}

func TestHeterogeneousSlots(t *testing.T) {
	// A pod group with two shapes: 3 workers of 4 cores, 1 GPU pod.
	js := jobspec.New(
		jobspec.Slot(3, "worker").With(jobspec.R("core", 4)),
		jobspec.Slot(1, "gpu").With(jobspec.R("core", 1), jobspec.R("gpu", 2)),
	).Duration(60).Obj()
	m := newMatcher(t, tiny, "lonode")
	res := mustMatch(t, m, AllocateWithSatisfiability, js, 1, 0)
	if res.Status != Allocated {
		t.Fatalf("got %s: %s", res.Status, res.Reason)
	}
	c, g, _ := totalCores(res.Nodes)
	if c != 13 || g != 2 {
		t.Fatalf("got %d cores %d gpus, want 13 and 2: %+v", c, g, res.Nodes)
	}
	// Each GPU pod needs both GPUs of one node: 4 nodes hold at most 4.
	many := jobspec.New(jobspec.Slot(5, "gpu").With(jobspec.R("gpu", 2))).Duration(60).Obj()
	if res := mustMatch(t, m, Satisfiability, many, 0, 0); res.Status != Unsatisfiable {
		t.Fatalf("5 pods of 2 GPUs on 4 two-GPU nodes: got %s", res.Status)
	}
}

func TestMissingTypeIsUnsatisfiable(t *testing.T) {
	m := newMatcher(t, "cluster[1]->node[2]->core[4]", "first")
	js := jobspec.New(jobspec.Slot(1, "t").With(jobspec.R("gpu", 1))).Duration(60).Obj()
	if res := mustMatch(t, m, Allocate, js, 1, 0); res.Status != Busy {
		t.Errorf("plain allocate: got %s, want BUSY (as Fluxion)", res.Status)
	}
	res := mustMatch(t, m, AllocateOrElseReserve, js, 2, 0)
	if res.Status != Unsatisfiable || !strings.Contains(res.Reason, "no gpu") {
		t.Errorf("got %s %q, want UNSATISFIABLE naming gpu", res.Status, res.Reason)
	}
}

func TestInvalidRequests(t *testing.T) {
	m := newMatcher(t, tiny, "first")
	long := slotCores(1, 1, 1<<40)
	cases := []struct {
		name string
		js   *jobspec.Jobspec
		now  int64
	}{
		{"nil jobspec", nil, 0},
		{"past the horizon", long, 10},
		{"negative time", slotCores(1, 1, 60), -1},
		{"exclusive false under slot", jobspec.New(jobspec.Slot(1, "t").With(jobspec.R("core", 1).Shared())).Duration(60).Obj(), 0},
	}
	for _, c := range cases {
		for _, op := range []Op{Allocate, AllocateWithSatisfiability, AllocateOrElseReserve, Satisfiability} {
			res := mustMatch(t, m, op, c.js, 1, c.now)
			if res.Status != Invalid || res.Reason == "" {
				t.Errorf("%s, %s: got %s %q, want INVALID with a reason", c.name, op, res.Status, res.Reason)
			}
		}
	}
	if !m.idle() {
		t.Fatal("invalid requests changed state")
	}
}

func TestDuplicateJobID(t *testing.T) {
	m := newMatcher(t, tiny, "first")
	mustMatch(t, m, Allocate, slotCores(1, 1, 60), 7, 0)
	if _, err := m.Match(Allocate, slotCores(1, 1, 60), 7, 0); err == nil {
		t.Fatal("second job with id 7 accepted")
	}
}

func TestRangeCountTakesLatticeValue(t *testing.T) {
	// node count {min 2, max 8, +2}: with 3 free nodes, take 2.
	js := jobspec.New(jobspec.R("node", 2).Range(2, 8, '+', 2).Exclusive().With(
		jobspec.Slot(1, "t").With(jobspec.R("core", 1)))).Duration(60).Obj()
	m := newMatcher(t, tiny, "lonode")
	mustMatch(t, m, Allocate, nodesX(1, 60), 1, 0)
	res := mustMatch(t, m, Allocate, js, 2, 0)
	if res.Status != Allocated || len(res.Nodes) != 2 {
		t.Fatalf("got %s with %d nodes, want 2: %s", res.Status, len(res.Nodes), res.Reason)
	}
	// Unbounded max takes every free node: one left, below min 2.
	res = mustMatch(t, m, Allocate, js, 3, 0)
	if res.Status != Busy {
		t.Fatalf("with one free node: got %s, want BUSY", res.Status)
	}
	m2 := newMatcher(t, tiny, "lonode")
	all := jobspec.New(jobspec.R("node", 1).Range(1, jobspec.Unbounded, '+', 1).Exclusive().With(
		jobspec.Slot(1, "t").With(jobspec.R("core", 1)))).Duration(60).Obj()
	if res := mustMatch(t, m2, Allocate, all, 1, 0); len(res.Nodes) != 4 {
		t.Fatalf("min 1 without max: got %d nodes, want all 4", len(res.Nodes))
	}
}

func TestReservationStartsWhenResourcesFree(t *testing.T) {
	m := newMatcher(t, "cluster[1]->node[2]->core[2]", "first")
	mustMatch(t, m, Allocate, nodesX(1, 100), 1, 0)
	mustMatch(t, m, Allocate, nodesX(1, 300), 2, 0)
	res := mustMatch(t, m, AllocateOrElseReserve, nodesX(2, 50), 3, 0)
	if res.Status != Reserved || res.At != 300 {
		t.Fatalf("2 nodes: got %s at %d, want RESERVED at 300", res.Status, res.At)
	}
	// A short job fits before the reservation on the node freed at 100:
	// backfill falls out of the planners (docs/reference/fluxion.md §8).
	res = mustMatch(t, m, AllocateOrElseReserve, nodesX(1, 200), 4, 0)
	if res.Status != Reserved || res.At != 100 {
		t.Fatalf("backfill: got %s at %d, want RESERVED at 100", res.Status, res.At)
	}
	// One that would overlap the reservation must wait until it ends.
	res = mustMatch(t, m, AllocateOrElseReserve, nodesX(1, 250), 5, 0)
	if res.Status != Reserved || res.At != 350 {
		t.Fatalf("after the reservation: got %s at %d, want RESERVED at 350", res.Status, res.At)
	}
	for _, id := range m.JobIDs() {
		if err := m.Cancel(id); err != nil {
			t.Fatal(err)
		}
	}
	if !m.idle() {
		t.Fatal("cancelling allocations and reservations did not restore the empty state")
	}
}

func TestExplainNamesTheShortfall(t *testing.T) {
	m := newMatcher(t, tiny, "lonode")
	if err := m.MarkDown(m.g.ByTypeName("node")[0]); err != nil {
		t.Fatal(err)
	}
	mustMatch(t, m, Allocate, nodesX(1, 60), 1, 0)
	res := mustMatch(t, m, AllocateWithSatisfiability, nodesX(3, 60), 2, 0)
	if res.Status != Busy {
		t.Fatalf("got %s", res.Status)
	}
	for _, want := range []string{"node", "1 down"} {
		if !strings.Contains(res.Reason, want) {
			t.Errorf("reason %q lacks %q", res.Reason, want)
		}
	}
	if res.Explain == nil || res.Explain.NodesDown != 1 {
		t.Errorf("explain: %+v", res.Explain)
	}
}

func TestSatisfiabilityIgnoresStateButNotConstraints(t *testing.T) {
	m := newMatcher(t, tiny, "first")
	for _, v := range m.g.ByTypeName("node") {
		if err := m.MarkDown(v); err != nil {
			t.Fatal(err)
		}
	}
	if res := mustMatch(t, m, Satisfiability, nodesX(4, 60), 0, 0); res.Status != Satisfiable {
		t.Fatalf("all nodes down: got %s, want SATISFIABLE", res.Status)
	}
	js := nodesX(1, 60)
	js.Constraint = jobspec.Hosts("nosuch[0-3]")
	if res := mustMatch(t, m, Satisfiability, js, 0, 0); res.Status != Unsatisfiable || res.Explain.NodesConstrained != 4 {
		t.Fatalf("constraint matching no node: got %s %+v", res.Status, res.Explain)
	}
}

func TestPolicyNames(t *testing.T) {
	for _, n := range []string{"first", "low", "high", "lonode", "hinode", "lonodex", "hinodex", "firstnodex", "locality", "variation"} {
		if _, err := LookupPolicy(n); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	if _, err := LookupPolicy("fastest"); err == nil || !strings.Contains(err.Error(), "lonode") {
		t.Errorf("unknown policy error should list the known ones: %v", err)
	}
}

// TestFitsAnswersAsMatchAndHoldsNothing: on a partly filled graph, Fits
// gives every request the status and reason Match(Allocate) gives it, and
// leaves the matcher holding what it held.
func TestFitsAnswersAsMatchAndHoldsNothing(t *testing.T) {
	m := newMatcher(t, "cluster[1]->node[4]->{cpu[1]:8000,memory[1]:64,pods[1]:16}", "lonode")
	if err := allocated(m.Match(Allocate, podSlots(3, 6000, 8, 100), 1, 0)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		js   *jobspec.Jobspec
		want Status
	}{
		{"fits on the free node", podSlots(4, 2000, 4, 50), Allocated},
		{"too many slots", podSlots(8, 2000, 4, 50), Busy},
		{"more than the cluster has", podSlots(1, 9000, 4, 50), Busy},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := m.JobIDs()
			got, err := m.Fits(c.js, 2, 10)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(m.JobIDs(), before) {
				t.Fatalf("Fits left jobs %v, had %v", m.JobIDs(), before)
			}
			want, err := m.Match(Allocate, c.js, 2, 10)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != c.want || want.Status != c.want || got.Reason != want.Reason {
				t.Fatalf("Fits: %s %q; Match: %s %q; want %s", got.Status, got.Reason, want.Status, want.Reason, c.want)
			}
			if want.Status == Allocated {
				if err := m.Cancel(2); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestCompiledRequestMatchesAsTheJobspec: a compiled request gives the
// answers its jobspec gives, an unusable jobspec stays Invalid, and a
// request compiled for another matcher is refused.
func TestCompiledRequestMatchesAsTheJobspec(t *testing.T) {
	m := newMatcher(t, tiny, "lonode")
	cases := []struct {
		name    string
		js      *jobspec.Jobspec
		invalid bool
	}{
		{"fits", slotCores(2, 2, 100), false},
		{"too big", slotCores(40, 2, 100), false},
		{"invalid", jobspec.New().Obj(), true},
		{"nil", nil, true},
	}
	id := int64(0)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rq := m.Compile(c.js)
			for _, op := range []Op{Allocate, AllocateOrElseReserve, Satisfiability} {
				id += 2
				got, err := m.MatchRequest(op, rq, id, 0)
				if err != nil {
					t.Fatal(err)
				}
				want, err := m.Match(op, c.js, id+1, 0)
				if err != nil {
					t.Fatal(err)
				}
				if got.Status != want.Status || got.Reason != want.Reason || (got.Status == Invalid) != c.invalid {
					t.Fatalf("op %d: compiled %s %q, jobspec %s %q", op, got.Status, got.Reason, want.Status, want.Reason)
				}
			}
		})
	}
	other := newMatcher(t, tiny, "lonode")
	if _, err := other.MatchRequest(Allocate, m.Compile(slotCores(1, 1, 10)), 1, 0); err == nil {
		t.Fatal("a request compiled for another matcher was accepted")
	}
}
