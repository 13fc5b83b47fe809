package queue

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/fluence-sched/fluence/pkg/match"
)

// Check verifies that the queue and its matcher agree, and returns every
// disagreement found: each group is in exactly one of pending (pending
// or reserved), blocked and running, in the state of its list, and
// known by id; pending is in queue order; the reservation list is
// exactly the reserved groups; the matcher holds an allocation for every
// running group, a reservation for every reserved one and no other job;
// and what the queue counts as held on each node is what its running
// groups hold. A scheduler calls it after an error to learn whether the
// error left the state sound; tests call it after every step.
func (q *Manager) Check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("queue: "+format, args...)) }
	seen := map[*entry]string{}
	list := func(name string, es []*entry, states ...State) {
		for _, e := range es {
			if where, dup := seen[e]; dup {
				bad("group %d is both %s and %s", e.g.ID, where, name)
				continue
			}
			seen[e] = name
			if !slices.Contains(states, e.state) {
				bad("group %d is %s on the %s list", e.g.ID, e.state, name)
			}
			if q.byID[e.g.ID] != e {
				bad("group %d on the %s list is not known by its id", e.g.ID, name)
			}
		}
	}
	list("pending", q.pending, Pending, Reserved)
	list("blocked", q.blocked, Blocked)
	var running []*entry
	for _, id := range slices.Sorted(maps.Keys(q.running)) {
		e := q.running[id]
		if e.g.ID != id {
			bad("group %d is running under id %d", e.g.ID, id)
		}
		running = append(running, e)
	}
	list("running", running, Running)
	for _, id := range slices.Sorted(maps.Keys(q.byID)) {
		if _, ok := seen[q.byID[id]]; !ok {
			bad("group %d is known by its id but on no list", id)
		}
	}
	for i := 1; i < len(q.pending); i++ {
		if less(q.pending[i-1], q.pending[i]) >= 0 {
			bad("pending is out of order at groups %d, %d", q.pending[i-1].g.ID, q.pending[i].g.ID)
		}
	}
	want := map[int64]match.Status{}
	for _, e := range q.pending {
		if e.state == Reserved {
			want[e.g.ID] = match.Reserved
		}
	}
	reserved := map[int64]bool{}
	for _, e := range q.reserved {
		if e.state != Reserved || seen[e] != "pending" || reserved[e.g.ID] {
			bad("group %d is on the reservation list, %s on the %q list", e.g.ID, e.state, seen[e])
		}
		reserved[e.g.ID] = true
	}
	for id := range want {
		if !reserved[id] {
			bad("group %d is reserved but not on the reservation list", id)
		}
	}
	for id := range q.running {
		want[id] = match.Allocated
	}
	errs = append(errs, q.checkMatcher(want)...)
	errs = append(errs, q.checkHeld()...)
	return errors.Join(errs...)
}

// checkMatcher compares the matcher's jobs with the jobs the queue
// expects it to hold, by id.
func (q *Manager) checkMatcher(want map[int64]match.Status) []error {
	var errs []error
	jobs := q.m.JobIDs()
	for _, id := range jobs {
		info, _ := q.m.Info(id)
		switch st, ok := want[id]; {
		case !ok:
			state := "unknown to the queue"
			if e := q.byID[id]; e != nil {
				state = e.state.String() + " in the queue"
			}
			errs = append(errs, fmt.Errorf("queue: the matcher holds job %d (%s), which is %s", id, info.Status, state))
		case st != info.Status:
			errs = append(errs, fmt.Errorf("queue: the matcher holds job %d as %s, the queue expects %s", id, info.Status, st))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if _, ok := slices.BinarySearch(jobs, id); !ok {
			errs = append(errs, fmt.Errorf("queue: group %d is %s, yet the matcher holds no job for it", id, q.byID[id].state))
		}
	}
	return errs
}

// checkHeld compares what the queue counts as held per node (holding)
// with what its running groups hold.
func (q *Manager) checkHeld() []error {
	want := map[int32]units{}
	for _, id := range slices.Sorted(maps.Keys(q.running)) {
		info, ok := q.m.Info(id)
		if !ok {
			continue // reported by checkMatcher
		}
		per, ok := byNode(q.running[id], info.Slots)
		if !ok {
			continue // not weighed: its nodes are unknown
		}
		for v, us := range per {
			want[v] = want[v].add(us, 1)
		}
	}
	var errs []error
	nodes := map[int32]bool{}
	for v := range want {
		nodes[v] = true
	}
	for v := range q.used {
		nodes[v] = true
	}
	for _, v := range slices.Sorted(maps.Keys(nodes)) {
		if a, b := nonZero(q.used[v]), nonZero(want[v]); !slices.Equal(a, b) {
			errs = append(errs, fmt.Errorf("queue: node vertex %d: the queue counts %v held, its running groups hold %v", v, a, b))
		}
	}
	return errs
}

func nonZero(us units) units {
	return slices.DeleteFunc(slices.Clone(us), func(u unit) bool { return u.n == 0 })
}
