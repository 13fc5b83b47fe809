// Package resource holds the resource graph: the containment tree of pools
// (cluster, zone, rack, node, socket, core, gpu, memory, ...) that every
// placement decision in fluence is made on.
//
// # Model
//
// A vertex is a pool of Size indistinguishable units of one type (a core is a
// pool of one; a memory vertex may be a pool of 64 GB). Vertices form a single
// rooted tree, the containment hierarchy (Fluxion's "containment" subsystem).
// Other subsystems (power, network) are not modelled: readers drop their edges.
//
// A Graph is built in two steps. Builders (AddVertex, the JGF reader, the
// generator) append vertices with a parent link in any order; Finalize then
// renumbers every vertex into depth-first pre-order with children sorted by
// uniq_id. After Finalize:
//
//   - a vertex's index is its pre-order position, so the subtree of v is the
//     contiguous index range [v, SubtreeEnd(v));
//   - children are stored in one flat array (compressed sparse rows), so
//     Children(v) is a sub-slice and allocates nothing;
//   - indexes by type, name, rank and path answer lookups; the path index is
//     built on first use because most callers never need it.
//
// Vertex status (up/down) and properties may change after Finalize; structure
// may not. The matcher keeps its own per-vertex state in arrays indexed by the
// same vertex index, which is why the numbering is fixed once finalized.
//
// Nothing here reads the clock or ranges over a map in an output path: the
// same input always yields the same numbering and the same output.
package resource
