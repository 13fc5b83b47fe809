package plugin

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fluence-sched/fluence/pkg/jobspec"
)

// groupState is where a group stands in the plugin.
type groupState uint8

const (
	// gathering: fewer pods than the group size exist, or the group's pods
	// are not yet submitted.
	gathering groupState = iota
	// queued: an allocation request is in the engine's queue.
	queued
	// placed: every pod the group needs has a slot on a node.
	placed
	// rejected: the group can never be placed as it is; its pods must
	// change (or the cluster must grow) before it is tried again.
	rejected
	// invalid: the group's labels are malformed; see reason.
	invalid
)

var groupStateNames = [...]string{"gathering", "queued", "placed", "rejected", "invalid"}

func (s groupState) String() string { return groupStateNames[s] }

// slot is one pod's place in an allocation.
type slot struct {
	shape jobspec.PodShape
	node  string
	pod   types.UID // empty when vacant (its pod went away before binding)
	// reserved: the pod passed Reserve and waits at Permit or binds.
	reserved bool
	bound    bool
	// done: its pod ended (or was deleted) after binding.
	done bool
}

// alloc is one engine job of a group: its slots, in jobspec order.
type alloc struct {
	id      int64 // engine job id (also the queue's group id)
	js      *jobspec.Jobspec
	slots   []*slot
	start   int64 // engine seconds
	dur     int64 // planned duration, seconds
	running bool  // placed by the engine (false while queued)
	submit  int64 // engine seconds the request was queued at: its place in line
	// pods, while queued: the pods the request stands for, in slot order.
	pods []types.UID
	// recorded is the allocation annotation value written at binding.
	recorded string
}

// group is a pod group and everything the plugin knows about it.
type group struct {
	id       GroupID
	state    groupState
	reason   string
	priority int32
	// members are the group's pods that are not terminal, by UID.
	members map[types.UID]*corev1.Pod
	allocs  []*alloc
	// reservedAt is the reserved start (engine seconds) while queued, -1
	// when there is none.
	reservedAt int64
	// lastEvent suppresses repeating the same explanation event.
	lastEvent string
	// holdUntil (engine seconds) delays the next request after a node
	// turned the group away; holdStep is the current delay.
	holdUntil, holdStep int64
	// heldSubmit is the place in line (submit time) of the request a node
	// turned away: the request made during the hold keeps it.
	heldSubmit int64
	// checked is the graph generation (rebuild count) at which the group
	// was last judged from its first pods; 0 when never.
	checked int64
}

func newGroup(id GroupID) *group {
	return &group{id: id, members: map[types.UID]*corev1.Pod{}, reservedAt: -1}
}

// slotOf returns the pod's slot and its allocation.
func (g *group) slotOf(uid types.UID) (*alloc, *slot) {
	for _, a := range g.allocs {
		if !a.running {
			continue
		}
		for _, s := range a.slots {
			if s.pod == uid {
				return a, s
			}
		}
	}
	return nil, nil
}

// liveSlots counts slots whose pods still run or wait to (not done).
func (g *group) liveSlots() int {
	n := 0
	for _, a := range g.allocs {
		for _, s := range a.slots {
			if !s.done {
				n++
			}
		}
	}
	return n
}

// anyBound reports whether a pod of the allocation has been bound: from
// then on the allocation cannot be withdrawn as a whole.
func (a *alloc) anyBound() bool {
	for _, s := range a.slots {
		if s.bound {
			return true
		}
	}
	return false
}

// finished reports whether every slot's pod ended.
func (a *alloc) finished() bool {
	for _, s := range a.slots {
		if !s.done {
			return false
		}
	}
	return true
}

// phase is the group's state as the metrics and logs show it.
func (c *cluster) phase(gr *group) groupState {
	switch {
	case gr.state == rejected || gr.state == invalid:
		return gr.state
	case gr.queuedPods() > 0:
		return queued
	case gr.id.Size > 0 && gr.liveSlots() >= int(gr.id.Size):
		return placed
	}
	return gathering
}
