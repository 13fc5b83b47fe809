package jobspec

import "math"

// Versions accepted by Parse and Validate.
const (
	// Version1 is RFC 25: a strict subset of the canonical form (node, slot,
	// core and gpu only, fixed counts, one task, duration required).
	Version1 = 1
	// VersionCanonical is the canonical RFC 14 form without the version 1
	// restrictions. Fluxion's own tests use this number.
	VersionCanonical = 9999
)

// Unbounded is Count.Max for a range with no max ("as many as available").
const Unbounded int64 = math.MaxInt64

// MaxDuration is the largest accepted attributes.system.duration in seconds
// (2^40 s, about 35,000 years). It keeps start+duration far from int64
// overflow anywhere in the scheduler.
const MaxDuration int64 = 1 << 40

// Limits that keep hostile input cheap. They are far above anything a real
// jobspec needs.
const (
	// MaxInputSize bounds the bytes Parse accepts.
	MaxInputSize = 16 << 20
	// MaxExpansion bounds the names or ids a hostlist or idset may expand to.
	MaxExpansion = 1_000_000
	// maxDepth bounds the nesting of the document (and of constraints).
	maxDepth = 256
	// maxNodes bounds the values in the document after YAML aliases are
	// expanded, so an alias "bomb" cannot exhaust memory.
	maxNodes = 200_000
)

// SlotType is the reserved resource type that groups resources into a task
// slot.
const SlotType = "slot"

// Jobspec is a parsed and validated jobspec.
type Jobspec struct {
	Version   int
	Resources []*Resource
	Tasks     []Task
	// Duration is attributes.system.duration in seconds, rounded up to a
	// whole second; 0 means unlimited.
	Duration int64
	// Constraint is attributes.system.constraints (RFC 31); nil when absent.
	Constraint *Constraint
	// Attributes holds the attributes mapping as parsed (system and user),
	// so unknown system keys survive a round trip. Nil when the document's
	// attributes were null or empty. Encode takes Duration and Constraint
	// from the fields above when they disagree with this map.
	Attributes map[string]any
}

// Resource is one resource vertex of the request graph.
type Resource struct {
	Type      string
	Count     Count
	Unit      string
	Exclusive Exclusivity
	With      []*Resource // nil when the vertex has no children
	Label     string
	ID        string
	// Requires limits where a slot may be placed: the node holding it must
	// satisfy this RFC 31 constraint, as attributes.system.constraints does
	// for the whole job. A fluence extension, for groups whose pods ask
	// for different nodes (an MPI launcher on a CPU pool, its workers on
	// GPU nodes); version 1 has none.
	//
	// On a resource without children inside a slot, Requires limits the
	// vertices it may take instead: each one claimed must satisfy it by
	// its own name and properties (a pod's DRA request takes only the
	// devices its selectors admit).
	Requires *Constraint
}

// IsSlot reports whether r is a task slot.
func (r *Resource) IsSlot() bool { return r != nil && r.Type == SlotType }

// Exclusivity is the tri-state "exclusive" key of a resource vertex. The
// unset state matters: inside a slot it means exclusive, outside it means
// shared (RFC 14), so it cannot be folded into a bool at parse time.
type Exclusivity uint8

const (
	ExclusiveUnset Exclusivity = iota // no exclusive key
	ExclusiveTrue                     // exclusive: true
	ExclusiveFalse                    // exclusive: false (an explicit request to share)
)

func (e Exclusivity) String() string {
	switch e {
	case ExclusiveUnset:
		return "unset"
	case ExclusiveTrue:
		return "true"
	case ExclusiveFalse:
		return "false"
	}
	return "invalid"
}

// Task is one entry of the tasks list. Fluxion parses tasks but does not
// use them for matching; they are kept for round trips and for the launcher.
type Task struct {
	Command      []string
	Slot         string // label of the slot the tasks run in
	Count        TaskCount
	Distribution string
	Attributes   map[string]any // nil when absent
}

// TaskCount holds exactly one of PerSlot, Total (both > 0 when set) or
// PerResource (non-nil when set).
type TaskCount struct {
	PerSlot     int64
	Total       int64
	PerResource *PerResource
}

// PerResource asks for Count tasks per resource of Type in the task's slot.
type PerResource struct {
	Type  string
	Count int64
}

// Error is a jobspec parse or validation error. Path names the offending
// field, e.g. "resources[0].with[1].count.min"; it is empty for errors about
// the document as a whole (syntax errors, empty input).
type Error struct {
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "jobspec: " + e.Msg
	}
	return "jobspec: " + e.Path + ": " + e.Msg
}

// Slots returns every slot vertex in depth-first order.
func (js *Jobspec) Slots() []*Resource {
	var out []*Resource
	Walk(js.Resources, func(r *Resource, _ []*Resource) bool {
		if r.IsSlot() {
			out = append(out, r)
		}
		return true
	})
	return out
}

// SlotByLabel returns the slot with the given label, or nil.
func (js *Jobspec) SlotByLabel(label string) *Resource {
	for _, s := range js.Slots() {
		if s.Label == label {
			return s
		}
	}
	return nil
}

// Walk visits the resource graph depth first in document order. fn gets each
// vertex and its ancestors (outermost first; the slice is reused, copy it to
// keep it); returning false skips the vertex's children. Nil entries are
// skipped.
func Walk(rs []*Resource, fn func(r *Resource, ancestors []*Resource) bool) {
	var stack []*Resource
	var visit func(rs []*Resource)
	visit = func(rs []*Resource) {
		for _, r := range rs {
			if r == nil {
				continue
			}
			// The depth guard only matters for a graph built in code with a
			// cycle; Validate rejects anything this deep.
			if fn(r, stack) && len(r.With) > 0 && len(stack) <= maxDepth {
				stack = append(stack, r)
				visit(r.With)
				stack = stack[:len(stack)-1]
			}
		}
	}
	visit(rs)
}

// Queue returns attributes.system.queue, or "" when absent.
func (js *Jobspec) Queue() string {
	sys, _ := js.Attributes["system"].(map[string]any)
	q, _ := sys["queue"].(string)
	return q
}
