// Package planner tracks how much of a quantity is in use over integer
// time, the role Fluxion's planner plays for every vertex of the resource
// graph. Planner tracks one quantity; Multi tracks a vector of them that
// share one span table (used for subtree aggregates).
//
// # Model
//
// A span uses an amount over the half-open window [start, start+dur). The
// planner does not store usage per interval. It stores a point per time at
// which some span starts or ends, holding the delta there: +amount where a
// span starts, -amount where it ends. Usage at t is the sum of deltas at
// points <= t, a prefix sum. A point counts the spans that start or end
// there and disappears when that count drops to 0. A point whose deltas
// cancel (one span ends where an equal one starts) is kept: usage does not
// change there, but which spans hold it does, and callers that step through
// time with NextChange (reservation search) need to stop at that moment.
//
// # Why it is logarithmic
//
// The points sit in a treap (a search tree kept balanced by pseudo-random
// priorities, drawn from a seeded xorshift held in the planner so that
// runs are reproducible). Each node also stores, for its subtree, the sum
// of deltas and the largest and smallest prefix sum. A node's values
// follow from its children's in O(1), so adding or removing a span updates
// two root-to-leaf paths: O(log P) for P points.
//
// A query walks down the tree. Any subtree hanging off the path that lies
// wholly inside the query range is summarized by its stored values instead
// of being visited:
//
//   - UsedAt(t): the prefix sum up to t, added up along one path.
//   - UsedMax(at, dur): usage is constant between points, so its maximum
//     over the window is the larger of usage at `at` and the largest prefix
//     sum at a point inside (at, at+dur). The walk splits at the first node
//     inside the window and follows two paths from there.
//   - EarliestFit: t fits if no point in [t, t+dur) has usage above
//     capacity-amount. A cursor moves forward through the points and finds
//     the next point above that limit, or the next point back at or below
//     it. Whole subtrees with no such point are skipped using their max or
//     min prefix. Each blocked region costs O(log P), so the cost is
//     O(log P) per blocked region skipped, not per point passed. Fluxion
//     instead checks each window point by point.
//
// Multi keeps the same tree with a vector in place of each number. In a
// multi-dimensional EarliestFit, a start is blocked while any dimension is
// over its limit. The cursor jumps past each blocked dimension in turn.
// Every start it skips fails in at least one dimension, so none that fits
// is missed.
//
// # Memory
//
// Nodes live in a slice arena addressed by int32 and recycled through a
// free list, so a tree holds no pointers for the garbage collector to
// scan, and a planner costs one allocation per arena rather than one per
// node. Spans are kept in a slice sorted by ID, since IDs only grow, and
// found by binary search. Removed spans leave tombstones that are
// compacted once they outnumber live spans. A new Planner allocates only
// its struct, and nothing more until its first span.
//
// Planners are not safe for concurrent mutation. Concurrent reads are safe:
// queries keep their scratch space on the caller's stack.
package planner
