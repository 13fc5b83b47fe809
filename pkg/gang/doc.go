// Package gang is the group lifecycle of fluence: the deterministic core
// that decides, for the kube-scheduler plugin and the simulator alike,
// where a pod group goes and what becomes of it until its last pod ends.
//
// # Model
//
// The core is a state machine. Its inputs are events, each with the time
// (an integer, in the caller's ticks): a node added, changed or removed
// (NodeSet, NodeRemoved); a pod seen or gone (PodSeen, PodRemoved), whoever
// scheduled it; and the steps of a pod's scheduling cycle (Place, Reserve,
// Permit, Bound, Unreserve, TurnedAway), plus Tick, the periodic loop. Its
// output is a list of effects the caller carries out (Ready): wake these
// pods, let these waiting pods bind, turn these away with this message,
// record these events and group conditions. It imports no Kubernetes
// package, reads no clock, starts no goroutine and takes no lock; map
// order never reaches a decision.
//
// It owns:
//
//   - the graph, built from the nodes (BuildGraph: zone, rack, node, or
//     BuildGraphLevels: a level of domains per configured node label,
//     then node; per node a cpu pool in millicores, a memory pool in MiB,
//     GPUs, a pool of pod places and a vertex per DRA device). Up/down and label changes are
//     applied in place; a node added or removed, new capacity, or a new
//     value of a level's label rebuilds the graph and replays everything
//     that holds resources.
//   - groups, keyed by GroupID.Key, with their member pods, allocations
//     (one engine job each) and slots (one pod on one node each).
//   - the queue (pkg/queue) over the matcher (pkg/match), which decides
//     which group starts, which holds a reservation, which waits.
//   - foreign load: pods bound by others, summed per node into one job,
//     with the node's devices claims hold for pods without a slot.
//
// # Devices
//
// A node's Devices (what DRA ResourceSlices publish) are vertices under
// it; a pod's Devices are requests, each so many devices a DeviceFilter
// admits (or, with several choices, those of one choice the whole group
// takes). The core marks on the graph, once per filter, the devices each
// filter admits (a vertex property), and a slot's device requests
// require the mark; a pod's allocated devices are required by their IDs.
// A bound pod whose allocation names other devices than the engine took
// has the graph replayed on what it holds (device_claims.go).
//
// # A group's life
//
//	gathering --(size pods exist)--> queued --(engine places it)--> placed
//	    ^                               |                              |
//	    |                               +--(can never fit)--> rejected |
//	    +------(withdrawn: a pod went away, a node turned it away)-----+
//
// Placing a group pins each pod to its slot's node; Place answers a pod's
// cycle with that node. Reserve marks the slot; Permit holds pods until
// every pod of the allocation is reserved, then commits the allocation and
// lets them all through. Before commit, any failure withdraws the whole
// allocation; after, a pod whose binding failed keeps its slot and binds
// there on its next try, so a group is never left partly bound. An
// allocation is released when every pod holding it ended.
//
// After its first placement a group is underway (members.go): finished
// members count toward its size, a lost member's slot is kept on its node
// for its replacement, and each pod still to be placed (a replacement, or
// a pod beyond the group's size) joins alone as it fits, never waiting
// for a whole group that cannot form again. A group placed once reports
// whether it is whole (Whole, Elastic, Broken).
//
// Internal failures are effects too (Effects.Errors), and CheckInvariants
// verifies the core's bookkeeping against the engine's (tests run it after
// every step).
//
// A pod's node constraints (NodeFilter: selectors, affinity, taints,
// requirements) are evaluated against the nodes each time a request is
// built, and queued requests are rebuilt whenever the nodes change, so a
// waiting group sees new nodes at once; a rejected group is judged again
// when the nodes change, or when one of its pods changes what it asks for
// (a malformed requirement fixed).
//
// Snapshot copies the core's state for inspection (the queue in the
// engine's order with its reservations, groups with their placement and
// what their waiting pods ask against what is free to them, nodes with what
// is held on them, the graph's shape); Snapshot.Explain turns it into the
// reasons a group waits, is held or was rejected, in words and numbers.
// Taking one changes nothing, but it walks every group and node. A caller
// that serialises the core with a lock calls Publish instead, under the
// lock, when it needs the state (publish.go): it renders again only what
// changed since the last Publish and returns an immutable Published whose
// Snapshot and Stats are built after the lock is released.
//
// Framework drives the core the way kube-scheduler drives the plugin,
// without an API server: the simulator and the scripted tests
// (testdata/scripts) use it.
package gang
