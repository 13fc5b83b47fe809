package gang

import (
	"cmp"
	"slices"
)

// Effects are what the caller must do after feeding the core events: the
// core decides, the caller only carries the decisions out. Take them with
// Core.Ready after every call (or batch of calls).
type Effects struct {
	// Activate: pods to send to a scheduling cycle now (their group was
	// placed, withdrawn, or may be placed again). Sorted by namespace and
	// name, each once.
	Activate []Ref
	// Allow: pods waiting at Permit that may now bind.
	Allow []Ref
	// Reject: pods waiting at Permit to turn away, each with its group's
	// own message.
	Reject []Rejection
	// Events to record on pods.
	Events []Event
	// Conditions: a group's condition changed (only groups that name an
	// object: a scheduler-plugins or a Kubernetes PodGroup).
	Conditions []Condition
	// Evictions: pods to evict, their group preempted (preempt.go).
	Evictions []Eviction
	// Placements: groups that asked for a topology domain and were
	// placed, with the level they got.
	Placements []Placement
	// Errors the core met inside itself: an engine call that failed where
	// it should not. The core carried on with its picture kept consistent;
	// each one is a bug to report, never a verdict on a pod.
	Errors []InternalError
	// Placed: groups let through whole for the first time (the allocation
	// that placed them committed at Permit), with how long they waited.
	// Each group is reported once in its life, so a withdrawn placement
	// does not end its wait and a group placed again after losing its
	// members does not count twice.
	Placed []GroupPlaced
	// Rejected: the keys of groups judged impossible, once per verdict
	// (the FluenceGroupRejected event, which goes to every pod, names one
	// group): a group judged again when the nodes change counts again
	// only when the verdict changed.
	Rejected []string
	// Withdrawn: the group key of each allocation withdrawn before it was
	// let through (FluenceGroupWithdrawn), a joining pod's too.
	Withdrawn []string
}

// GroupPlaced is a group's first placement: Waited is the time, in the
// core's ticks, from when the core first saw a pod of the group to when
// its placing allocation was let through whole. The caller converts ticks
// (Config.TicksPerSecond); the core reads no clock.
type GroupPlaced struct {
	Group  string
	Waited int64
}

// Placement is a group kept within a topology domain, placed: Asked is
// "required" or "preferred"; Level is the label key of the domain it got
// when that is one of the topology levels, "other" for another label, ""
// for none (a preference no domain could meet).
type Placement struct {
	Group, Asked, Level string
}

// InternalError is a failure inside the core: which operation, for which
// group (a group key, "" when none), and the error.
type InternalError struct {
	Op    string
	Group string
	Err   error
}

func (e InternalError) Error() string {
	if e.Group == "" {
		return "gang: " + e.Op + ": " + e.Err.Error()
	}
	return "gang: " + e.Op + " (group " + e.Group + "): " + e.Err.Error()
}

func (e InternalError) Unwrap() error { return e.Err }

// Rejection turns a waiting pod away.
type Rejection struct {
	Pod     Ref
	Message string
}

// Event is a Kubernetes event on a pod.
type Event struct {
	Pod     Ref
	Warning bool
	Reason  string
	Note    string
}

// ConditionStatus is where a group stands, as a condition shows it.
type ConditionStatus uint8

const (
	// Scheduled: the group is placed whole.
	Scheduled ConditionStatus = iota + 1
	// Waiting: the group waits for its pods or for resources.
	Waiting
	// Unsatisfiable: the group can never be placed as it is.
	Unsatisfiable
	// Whole, Elastic and Broken say whether a group placed once is whole
	// now: each of its members placed or finished; whole with pods beyond
	// its size; or members missing. They are a condition of their own,
	// apart from the three above.
	Whole
	Elastic
	Broken
	// Disrupted: the group is being preempted (a Kubernetes PodGroup's
	// DisruptionTarget condition), a condition of its own too.
	Disrupted
)

var conditionNames = [...]string{"", "Scheduled", "Waiting", "Unsatisfiable", "Whole", "Elastic", "Broken", "Disrupted"}

// Wholeness reports whether the status is one of the whole condition's.
func (s ConditionStatus) Wholeness() bool { return s >= Whole && s <= Broken }

func (s ConditionStatus) String() string { return conditionNames[s] }

// Condition is a group's status for the object that defines it.
type Condition struct {
	Group   GroupID
	Status  ConditionStatus
	Message string
}

// effects collects Effects while the core works.
type effects struct {
	activate map[string]Ref
	out      Effects
}

func (e *effects) activatePod(r Ref) {
	if e.activate == nil {
		e.activate = map[string]Ref{}
	}
	e.activate[r.UID] = r
}

func (e *effects) take() Effects {
	out := e.out
	for _, r := range e.activate {
		out.Activate = append(out.Activate, r)
	}
	slices.SortFunc(out.Activate, func(a, b Ref) int {
		if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	*e = effects{}
	return out
}
