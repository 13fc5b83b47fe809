package gang

import (
	"cmp"
	"slices"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/queue"
)

// groupState is where a group stands.
type groupState uint8

const (
	// gathering: fewer pods than the group size exist, or its pods are not
	// yet submitted.
	gathering groupState = iota
	// queued: an allocation request is in the engine's queue.
	queued
	// placed: every pod the group needs has a slot on a node.
	placed
	// rejected: the group can never be placed as it is; its pods or the
	// nodes must change before it is tried again.
	rejected
	// invalid: the group's pods disagree about it (its size) or cannot be
	// read; see reason.
	invalid
)

var groupStateNames = [...]string{"gathering", "queued", "placed", "rejected", "invalid"}

func (s groupState) String() string { return groupStateNames[s] }

// slot is one pod's place in an allocation.
type slot struct {
	shape    Shape
	requires string // the pod's filter key, "" for any node
	role     string // the pod's role in a multi-role group
	node     string
	pod      string // UID; "" when vacant (its pod went away after others bound)
	name     string // the pod's namespace/name, for messages
	// reserved: the pod passed Reserve and waits at Permit or binds.
	reserved bool
	bound    bool
	// done: its pod ended, or went away, after binding.
	done bool
	// evicting: its pod is evicted alone (a group whose disruptionMode is
	// single, preempt_pods.go); its slot is not kept when the pod goes.
	evicting bool
}

// alloc is one engine job of a group.
type alloc struct {
	id    int64 // engine job id (also the queue's group id)
	js    *jobspec.Jobspec
	slots []*slot
	start int64
	// began is when it first started: start moves when the engine is
	// rebuilt (an allocation is replayed from then on), began does not.
	began   int64
	dur     int64 // planned duration, ticks; 0 unlimited
	running bool  // placed by the engine (false while queued)
	// committed: Permit let the allocation through, so its bindings are
	// under way. From then on it is never withdrawn whole: a pod whose
	// binding failed tries again at its own slot.
	committed bool
	// placing: the allocation places the group (it is not the placement
	// of pods joining a group already underway); its commit ends the
	// group's wait (Effects.Placed).
	placing bool
	// submit is the time the request was queued at: its place in line.
	submit int64
	// nodeGen is the node generation the request's constraints were
	// evaluated at (queued requests are rebuilt when the nodes change).
	nodeGen int64
	// pods, while queued: the pods the request stands for, in slot order.
	pods []string
	// recorded is the allocation record written at binding.
	recorded string
	// domain is the topology domain (key=value) the request was confined
	// to, "" for none; domainKey, the topology level whose domain the
	// matcher chooses, the domain being read from the nodes at the start.
	domain, domainKey string
}

// group is a pod group and everything the core knows about it.
type group struct {
	// victimRec: what it would give up if evicted, kept until it is
	// touched (preempt.go).
	victimRec *victimRec
	id        GroupID
	state     groupState
	reason    string
	priority  int32
	// members are the group's pods that have not ended, by UID.
	members map[string]*Pod
	allocs  []*alloc
	// reservedAt is the reserved start while queued, -1 when none.
	reservedAt int64
	// lastEvent suppresses repeating the same explanation.
	lastEvent string
	// lastCondition suppresses repeating the same condition.
	lastCondition Condition
	// holdUntil delays the group's start after a node turned it away;
	// holdStep is the current delay; heldSubmit its place in line.
	holdUntil, holdStep, heldSubmit int64
	// avoid: per pod UID, the nodes that turned it away since the group
	// was last let through, sorted. Its next placements leave them out
	// (avoid.go).
	avoid map[string][]string
	// avoidSpent: the memory was dropped (it left a pod no node, or the
	// group could not fit with it) since the group was last let through:
	// refusals no longer narrow anything down.
	avoidSpent bool
	// checked and checkedPods are the graph generation and the number of
	// pods at which the group was last judged from its first pods.
	checked     int64
	checkedPods int
	// early: the group was rejected from its first pods only; a pod
	// joining it has it judged again.
	early bool
	// invalidBy is the pod whose size disagreed with the group's.
	invalidBy string
	// lineAt, when hasLine, is the place in line the group's next request
	// takes: the one it had before its definition changed (resize.go).
	lineAt  int64
	hasLine bool
	// unsupportedSaid is what the group asks that fluence does not place,
	// as last reported in an event.
	unsupportedSaid string
	// since is when the core first saw the group: inspection reports how
	// long it has waited.
	since int64
	// waitTold: the group's first placement was let through and reported
	// with its wait (Effects.Placed); it is reported once in its life.
	waitTold bool
	// waited is the last waiting decision the loop explained, and what
	// it left said (engine.go skips repeating it).
	waited waitNote
	// finished: members that succeeded after binding, by UID, while their
	// pods exist; they count toward the group's size (members.go).
	finished map[string]bool
	// everPlaced: an allocation of the group started once; from then on
	// the group reports whether it is whole (members.go).
	everPlaced bool
	// everWhole: every member ran or finished at once, once.
	everWhole bool
	// lastLost says how the group's last lost member went, for its
	// condition; lastWhole is the whole condition last reported.
	lastLost  string
	lastWhole Condition
	// joinRefused, when set, is why the group's pods cannot join it as it
	// runs (its domain can no longer hold them); joinGen is the node
	// generation that answer holds for.
	joinRefused string
	joinGen     int64
	// planned is the topology domain the last request built was confined
	// to (topology.go), "" for none; plannedLevel, the topology key one of
	// whose domains the matcher chooses for it.
	planned, plannedLevel string
	// evictedBy is the group that preempted this one, while its pods
	// go; preempt, a preemptor's hold on its victims' nodes; preemptNext,
	// when a group that could not preempt may try again (preempt.go).
	evictedBy string
	preempt   *preemptHold
	// yieldTo is the preemptor some of this group's pods were evicted
	// for, one by one: until its hold ends, the group takes no node
	// back for pods replacing them.
	yieldTo     string
	preemptNext int64
	// preemptNote says why the group did not preempt at its last try.
	preemptNote string
	// flatNext is when a group waiting within one domain of a label that
	// is no level next looks for another domain (topology.go).
	flatNext int64
}

// waitKey is a queue decision for a waiting group.
type waitKey struct {
	state  queue.State
	at     int64
	reason string
}

// waitNote is a waitKey and the reason, event and condition it left.
type waitNote struct {
	key    waitKey
	reason string
	event  string
	cond   Condition
}

func newGroup(id GroupID, since int64) *group {
	return &group{id: id, members: map[string]*Pod{}, reservedAt: -1, since: since}
}

// slotOf returns the pod's slot in a placed allocation.
func (g *group) slotOf(uid string) (*alloc, *slot) {
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

// liveSlots counts slots whose pods still run or wait to.
func (g *group) liveSlots() int {
	n := 0
	for _, a := range g.allocs {
		for _, s := range a.slots {
			if a.running && !s.done {
				n++
			}
		}
	}
	return n
}

func (g *group) queuedPods() int {
	n := 0
	for _, a := range g.allocs {
		if !a.running {
			n += len(a.pods)
		}
	}
	return n
}

// need is how many more pods the group must place to be whole: its size,
// less the pods placed or asked for and the members that finished.
func (g *group) need() int {
	return int(g.id.Size) - g.liveSlots() - g.queuedPods() - len(g.finished)
}

func (g *group) allocByID(id int64) *alloc {
	for _, a := range g.allocs {
		if a.id == id {
			return a
		}
	}
	return nil
}

// sortedMembers orders the group's pods oldest first, then by name.
func (g *group) sortedMembers() []*Pod {
	out := make([]*Pod, 0, len(g.members))
	for _, p := range g.members {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *Pod) int {
		if c := cmp.Compare(a.Created, b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// waitingMember is the group's oldest pod that waits for an object
// (Pod.waits) and holds no node; nil when none does.
func (g *group) waitingMember() *Pod {
	if !g.hasUnbound() {
		return nil
	}
	for _, p := range g.sortedMembers() {
		if p.waits() && p.NodeName == "" && !p.Deleting {
			return p
		}
	}
	return nil
}

// withdrawable reports whether the allocation may still be cancelled
// whole: none of its pods was let through Permit or bound.
func (a *alloc) withdrawable() bool {
	if a.committed {
		return false
	}
	for _, s := range a.slots {
		if s.bound {
			return false
		}
	}
	return true
}

// finished reports whether every slot's pod ended. A vacant slot (its
// member lost, no replacement yet) does not keep the allocation: when all
// the others ended, the group is over.
func (a *alloc) finished() bool {
	for _, s := range a.slots {
		if !s.done && s.pod != "" {
			return false
		}
	}
	return true
}

// phase is the group's state as metrics and inspection show it.
func (g *group) phase() groupState {
	switch {
	case g.state == rejected || g.state == invalid:
		return g.state
	case g.liveSlots()+len(g.finished) >= int(g.id.Size) && g.underway():
		return placed // pods beyond its size may wait to join
	case g.queuedPods() > 0:
		return queued
	case g.liveSlots()+len(g.finished) >= int(g.id.Size):
		return placed
	}
	return gathering
}
