// Package jobspec parses, validates, builds and encodes Flux jobspecs: the
// resource requests fluence schedules. It follows RFC 14 (canonical
// jobspec), RFC 25 (jobspec version 1) and RFC 31 (constraints), with the
// choices Fluxion's libjobspec makes where the RFCs leave room.
//
// # Versions
//
// Version 1 (RFC 25) is what Flux's own tools submit: one top-level node or
// slot; only node, slot, core and gpu; the shapes slot>core, node>slot>core,
// slot>(core,gpu) and node>slot>(core,gpu); fixed integer counts; exactly one
// task whose count is per_slot: 1 or total; a required duration.
//
// Version 9999 is the canonical form without those restrictions (any type
// names, any depth, ranges, several tasks), the number Fluxion's tests use.
// Every other version is refused, because a later version may mean things
// this package would silently get wrong.
//
// # Where things are checked
//
// Parse works in three stages, and every error is an *Error whose Path
// names the offending field, e.g. "resources[0].with[1].count.min":
//
//  1. Decoding (decode*.go) turns YAML or JSON into one generic tree of
//     map[string]any, []any, string, int64, float64, bool and nil. Input
//     whose first non-space byte is '{' is JSON, so JSON mistakes get JSON
//     messages with line and column; anything else is YAML. Duplicate keys,
//     NaN and infinities, invalid UTF-8, more than one YAML document, deep
//     nesting and alias bombs are refused here, so that everything that
//     parses can be encoded and parsed back to the same value.
//  2. Reading (parse.go, values.go, count.go, constraint.go) checks keys and types:
//     unknown keys are errors at every level (only attributes.system and
//     attributes.user are free-form), integers may be written as integral
//     floats (2.0), and the version 1 syntax rules that leave no trace in
//     the struct (a range written where v1 needs an integer) are applied.
//  3. Validation (validate.go) checks values and cross-references on the
//     Jobspec struct. Validate runs the same stage for jobspecs built in
//     code, so a builder mistake gets the same message a file would.
//
// # Counts
//
// A count is an integer N, meaning "match something with at least N,
// allocate exactly N", or a range {min, max, operator, operand}: at least
// min and as many as are available up to max (no max: unbounded), on the
// lattice min, next(min), ... where next adds operand ('+', the default,
// operand >= 1, default 1), multiplies by it ('*', operand >= 2) or raises
// to its power ('^', operand >= 2 and min >= 2, since 1^k never grows). The
// operand of '*' and '^' must be given. Count.Lattice picks the largest
// lattice value not above what is available, Fluxion's rule. RFC 14 also
// allows an idset string as a count; Fluxion does not read it and neither
// does this package.
//
// # Slots and exclusivity
//
// A slot is the unit tasks run in. It needs a label (unique across the
// jobspec, as all labels are) and at least one child. Everything in a slot
// is allocated exclusively to the job (RFC 14); an explicit exclusive:
// false on a slot or anywhere beneath one contradicts that, and Fluxion
// fails such a request with EINVAL at match time, so Parse rejects it up
// front, naming the field. Outside slots, a vertex without the key is
// shared and exclusive: true claims the vertex and its whole subtree; this
// is why Exclusivity keeps the unset state instead of a bool.
//
// Slots may not nest (RFC 14 does not say what a slot inside a slot would
// mean for task placement, so it is refused rather than guessed at), but
// several slots may sit side by side, for heterogeneous pod groups. Apart
// from slots, two siblings of the same type are refused, as Fluxion's simple
// traverser refuses them. Paths without any slot are allowed (a shared storage vertex
// beside a slot, say), but the jobspec as a whole needs a slot because every
// task names one.
//
// # Tasks and attributes
//
// Tasks are checked (command, a slot label that exists, exactly one of
// per_slot, per_resource or total; per_resource's type must occur in the
// slot) and kept for round trips; matching ignores them. Attributes are
// kept whole in Jobspec.Attributes. attributes.system.duration becomes
// Duration in seconds, rounded up to a whole second (0 means unlimited, at
// most MaxDuration), and attributes.system.constraints becomes Constraint.
//
// # Constraints
//
// Constraint is an RFC 31 tree of properties, hostlist (RFC 29), ranks
// (RFC 22), and, or and not. Hostlists and idsets are compiled into ranges
// when parsed, so Match never expands "node[0-99999]". See Match for the
// exact semantics, including the empty forms and not with several
// arguments. Fluxion evaluates constraints only on node-like vertices; that
// decision belongs to the matcher, not here.
//
// A slot may carry its own constraint under the key requires (Resource.Requires),
// which the node holding the slot must satisfy. It is a fluence extension
// (Flux constrains only whole jobs) for pod groups whose pods ask for
// different node pools; version 1 refuses it. A resource without children
// inside a slot may carry one too: then each vertex it takes must satisfy
// it (the devices a pod's DRA request admits).
//
// # Encoding and building
//
// Encode writes canonical JSON (sorted keys, fixed counts as integers) and
// Parse(Encode(js)) equals js; FuzzParse checks this for arbitrary input.
// The builders (New, R, Slot and the constraint constructors Properties,
// Hosts, Ranks, And, Or, Not) make jobspecs in code; Build validates.
package jobspec
