package match

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fluence-sched/fluence/pkg/jobspec"
)

// TestNoOvercommitOverTime drives random allocations, reservations,
// cancels and partial cancels with random durations, then checks the whole
// timeline: on every node, at every moment, the jobs' cores and GPUs fit the
// node, and a job holding a node whole shares it with no other job.
func TestNoOvercommitOverTime(t *testing.T) {
	for _, policy := range []string{"first", "lonode", "hinode", "lonodex", "locality"} {
		reservations := 0
		for seed := uint64(1); seed <= 25; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", policy, seed), func(t *testing.T) {
				reservations += timeline(t, policy, seed)
			})
		}
		// The walk must exercise reservations, or it checks little.
		if reservations < 50 {
			t.Errorf("%s: only %d reservations in 25 walks", policy, reservations)
		}
	}
}

func timeline(t *testing.T, policy string, seed uint64) int {
	r := rand.New(rand.NewPCG(seed, 99))
	m := newMatcher(t, "cluster[1]->node[3]->socket[2]->{core[2],gpu[1]}", policy)
	nodes := m.g.ByTypeName("node")
	id := int64(0)
	reserved := 0
	for step := 0; step < 80; step++ {
		live := m.JobIDs()
		switch k := r.IntN(10); {
		case k < 6:
			id++
			dur := 10 * (1 + r.Int64N(20))
			var js *jobspec.Jobspec
			switch r.IntN(3) {
			case 0:
				js = slotCores(1+r.Int64N(4), 1+r.Int64N(2), dur)
			case 1:
				js = nodesX(1+r.Int64N(2), dur)
			default:
				js = jobspec.New(jobspec.Slot(1+r.Int64N(2), "t").With(jobspec.R("core", 1), jobspec.R("gpu", 1))).Duration(dur).Obj()
			}
			res := mustMatch(t, m, AllocateOrElseReserve, js, id, 0)
			if res.Status == Reserved {
				reserved++
				if res.At <= 0 {
					t.Fatalf("reservation at %d", res.At)
				}
			}
		case k < 8 && len(live) > 0:
			if err := m.Cancel(live[r.IntN(len(live))]); err != nil {
				t.Fatal(err)
			}
		case len(live) > 0:
			if _, err := m.PartialCancel(live[r.IntN(len(live))], []int32{nodes[r.IntN(len(nodes))]}); err != nil {
				t.Fatal(err)
			}
		}
		checkTimeline(t, m, step)
	}
	for _, j := range m.JobIDs() {
		if err := m.Cancel(j); err != nil {
			t.Fatal(err)
		}
	}
	if !m.idle() {
		t.Fatal("state not empty after cancelling everything")
	}
	return reserved
}

func checkTimeline(t *testing.T, m *Matcher, step int) {
	t.Helper()
	type use struct {
		job, start, end, cores, gpus int64
		whole                        bool
	}
	per := map[string][]use{}
	for _, id := range m.JobIDs() {
		ji, _ := m.Info(id)
		for _, n := range ji.Nodes {
			per[n.Name] = append(per[n.Name], use{id, ji.At, ji.At + ji.Duration, n.Core, n.GPU, n.Whole})
		}
	}
	for name, uses := range per {
		for _, u := range uses {
			// Usage only changes at starts, so checking each start suffices.
			t0 := u.start
			var cores, gpus, jobs int64
			whole := false
			for _, o := range uses {
				if o.start <= t0 && t0 < o.end {
					cores += o.cores
					gpus += o.gpus
					jobs++
					whole = whole || o.whole
				}
			}
			if cores > 4 || gpus > 2 || (whole && jobs > 1) {
				t.Fatalf("step %d: %s at t=%d over-committed: %d cores, %d gpus, %d jobs (whole=%v): %+v",
					step, name, t0, cores, gpus, jobs, whole, uses)
			}
		}
	}
}
