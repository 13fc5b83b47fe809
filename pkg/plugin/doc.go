// Package plugin is the fluence kube-scheduler plugin: it places pod groups
// whole with the engine (pkg/match, pkg/queue) inside a stock
// kube-scheduler.
//
// # Model
//
// The plugin keeps one picture of the cluster (cluster), fed by informers
// and guarded by one lock:
//
//   - nodes, turned into the engine's graph by k8sadapter.BuildGraph. The
//     graph's structure is fixed once built, so a change the graph shows
//     (capacity, labels, taints, up/down) marks it dirty and the next
//     decision rebuilds it and replays everything that holds resources.
//   - groups, keyed namespace/name (GroupID, found by Resolver from labels,
//     a PodGroup, or the owning workload). A group holds allocations
//     (alloc), each one engine job whose slots say which pod sits on which
//     node. A group is placed when its live slots cover its size.
//   - foreign pods: bound pods no allocation accounts for (other
//     schedulers, pods bound by hand), summed per node into one engine job.
//
// # One scheduling cycle
//
// PreFilter resolves the pod's group. Once enough of the group's pods
// exist, one request for all of them goes to the queue, and a queue loop
// runs: the engine either places the whole group (every pod gets a node),
// reserves it a future start, or says why it waits or can never fit. The
// pod's node is the only candidate handed to the stock filters. Reserve
// marks the slot; Permit holds each pod until every pod of its allocation
// is reserved, then lets them through together; Bind writes the allocation
// into the Binding's annotations (the API server copies them onto the pod),
// which is what a restarted scheduler rebuilds from.
//
// Failures before any pod of an allocation is bound (a pod deleted, a
// Permit timeout, a node turning the pod away, another scheduler filling
// the node) withdraw the whole allocation; the group is placed again. An
// allocation is released when every pod holding it ended.
//
// Calls back into the framework (activating pods, allowing or rejecting
// waiting pods, events) are collected as effects under the lock and made
// after it is released: the framework's queue calls QueueSort under its
// own lock.
package plugin
