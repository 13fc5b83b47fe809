// Package match places jobs on a resource graph: Fluxion's select + commit
// over the containment tree, written for speed and for explanations.
//
// # Model
//
// A jobspec (package jobspec) is compiled into a request tree whose levels
// are sets of sibling requests (type, count, exclusivity, children). Select
// walks the graph depth-first from the root, visiting children in the order
// the match policy dictates, and claims units as it finds them:
//
//	root ─┬─ child in policy order ──> type requested at this level? ── yes ─> test, fill its `with`, claim
//	      │                                       └─ no ─> prune by subtree aggregates, descend
//	      └─ stop as soon as every request of the level has its count
//
// Because every policy is expressed as a visiting order, selection stops at
// the first sufficient set of units and never scores the whole graph; this is
// what keeps `low`, `lonode` and `lonodex` fast where Fluxion is exhaustive.
// docs/design/001-matcher.md records where the resulting placements differ
// from Fluxion's and why.
//
// Slots follow RFC 14: everything under a slot is exclusive, and a slot's
// contents come from a single anchor vertex (a node, or the vertex the slot's
// level is searched from when that is at or below a node).
//
// # State
//
// Per vertex the matcher keeps, in flat arrays indexed by vertex:
//
//   - plan: a planner of the vertex's own size (only for vertices ever
//     claimed), holding allocations and reservations over time;
//   - agg: for inner vertices, a multi-quantity planner of units used in the
//     subtree, one dimension per tracked type plus one counting jobs, so that
//     a subtree that cannot supply a request is cut off in O(log P);
//   - tags and live-allocation counts, for exclusivity and for the `first`
//     policy's "untouched subtree first" order.
//
// Vertex properties (node labels) may change in place between operations:
// constraints read them live, and the `variation` policy checks its cached
// child orders against them once per operation (perforder.go).
//
// Commit writes spans only after a whole selection succeeded, so a failed
// match changes nothing. The ancestors of every claimed vertex are derived
// from the tree, which is why a non-exclusive node[1]->slot->core[8] request
// succeeds on graphs with sockets (Fluxion fails it; docs/reference/fluxion.md
// section 10).
//
// # Failure classes
//
// Busy: not possible now (or, for reservations, at any time under the current
// state). Unsatisfiable: not possible even on the empty, all-up graph.
// Invalid: the request itself is unusable. Every failure carries an Explain.
//
// # Counting before walking
//
// Most matches a long queue makes fail: groups that do not fit now, and
// reservation probes at times that do not work either. For the common
// request, N slots of per-node pools (a pod group), the matcher counts
// the slots each node holds from a compact cache of node usage and fails
// without walking when the sum falls short, with the explanation the walk
// would give (slotcount.go). For the current time a per-pool index of the
// nodes with 2^l units free lets the count, and a walk it found will
// succeed, pass over full nodes (slotindex.go); a reservation search keeps
// an upper bound on each probe's slots and skips probes below the count
// it needs. TestSlotCountAgreesWithTheWalk checks both against the plain
// walk. Fits answers an allocate without committing it; Compile checks a
// jobspec once for a caller that matches it many times.
//
// Place commits a job whose pods are already on known nodes (a restart's
// replay, pods another scheduler bound): it claims each slot inside its
// given node, or commits nothing.
//
// Time is an integer passed in by the caller; nothing here reads a clock or
// depends on map order.
package match
