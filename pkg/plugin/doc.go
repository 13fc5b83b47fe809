// Package plugin is the fluence kube-scheduler plugin. It decides
// nothing itself: the gang core (pkg/gang) owns the groups, their
// allocations and the queue; the plugin translates.
//
// # Events in
//
//   - Node informer: every node, as k8sadapter.CoreNode (labels, taints,
//     allocatable, cordoned or NotReady), to Core.NodeSet / NodeRemoved.
//   - Pod informer: every pod, whoever schedules it, as
//     k8sadapter.CorePod, to Core.PodSeen / PodRemoved: bound pods
//     consume resources, ended pods free them.
//   - Extension points: PreFilter resolves the pod's group (groups.Resolver:
//     labels, a PodGroup, or the owning workload) and asks Core.Place for
//     its node; Filter admits only that node; PostFilter reports a node
//     that turned the pod away (Core.TurnedAway); Reserve, Unreserve,
//     Permit and Bind report the pod's progress.
//   - A loop calls Core.Tick once a second and whenever resources are
//     freed, so reservations come due and holds end.
//
// # Effects out
//
// After each call the plugin takes the core's effects and, with the core's
// lock released (the framework's queue calls QueueSort and the queueing
// hints under its own lock), activates pods, allows or rejects pods
// waiting at Permit, records events, queues PodGroup conditions for a
// writer that writes one group at a time (groups.ConditionWriter), and
// queues the pods of preempted groups for the evictor (evict.go), which
// marks each DisruptionTarget and deletes it, as kube-scheduler's own
// preemption does.
//
// # Inspection
//
// Inspectors collects the process's fluence plugins by profile; its
// Handler serves the read-only inspection API (pkg/inspect) from a
// snapshot of the core taken under the plugin's lock. The scheduler
// command mounts it on the secure port (internal/schedserver). A group
// whose pods all wait for their scheduling gates never reaches the core
// (kube-scheduler hands gated pods to no plugin): the API finds it in the
// informer of the profile's pods instead and answers that it is gated
// (gated.go).
//
// # Leadership
//
// kube-scheduler builds its plugins before leader election decides who
// schedules. With Options.Leadership the plugin of a standby keeps only its
// informers' caches: its core is fed nothing, and the condition and status
// writers, the evictor and the loop (events, PodGroup writes, evictions,
// gauges) do not run. When
// the process leads, the plugin reads every node and pod from the caches
// into the core, as a restarted scheduler does, and starts them.
//
// Bind writes the allocation record into the Binding's annotations (the
// API server copies them onto the pod), which is what a restarted
// scheduler rebuilds from.
package plugin
