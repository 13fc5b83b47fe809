// Package groups decides which group a pod belongs to: Resolver.Resolve
// returns the pod's gang.GroupID, whose key is qualified by where the group
// came from (gang.NewGroupID), and the group's size.
//
// # Rules
//
// They are tried in this order; the first that applies decides.
//
//  0. spec.schedulingGroup.podGroupName: the pod belongs to that
//     Kubernetes PodGroup (scheduling.k8s.io, same namespace;
//     gang.SourceNativePodGroup, keyed namespace/native-podgroup:name).
//     A gang policy's minCount is the group size; a basic policy makes the
//     pod a lone pod. Its priority, preemptionPolicy, disruptionMode and
//     topology key go with the group (gang.GroupID); resource claims and a
//     composite parent are named in GroupID.Unsupported. The PodGroup is
//     read from the first served version in nativeVersions (v1beta1 since
//     Kubernetes 1.37; each version is one adapter file); one not yet in
//     the cache is a retryable error. A pod naming a PodGroup when the
//     API server serves only a version this build does not read (v1alpha2,
//     Kubernetes 1.36) is told so and not retried for it.
//  1. Group labels or annotations on the pod (k8sadapter.ParseGroup):
//     fluence.flux-framework.org/pod-group with group-size, the older
//     fluence.flux-framework.org/group, or scheduling.x-k8s.io/pod-group
//     with fluence.group-size. A declared size is used as is
//     (gang.SourceLabel). scheduling.x-k8s.io/pod-group alone takes its
//     size from the scheduler-plugins PodGroup's spec.minMember
//     (gang.SourcePodGroup), and its spec.minResources and
//     spec.scheduleTimeoutSeconds go with the group (GroupID.MinResources,
//     PermitTimeout; resources fluence does not count in Unsupported:
//     coscheduling.go). A group name without a size takes the size of
//     the owning workload (rule 2); without one it is an error. Without
//     any of these, the annotation scheduling.k8s.io/group-name (or
//     scheduling.volcano.sh/group-name) names a Volcano PodGroup, its size
//     being spec.minMember (gang.SourceVolcanoPodGroup, volcano.go).
//  2. The pod's controller. A Job: the group labels on the Job
//     (gang.SourceWorkloadLabel); else the Job's own controller, one
//     replicated job of a JobSet (its replicas x the Job's parallelism,
//     gang.SourceJobSet; the pod or the Job names the replicated job with
//     JobSetReplicatedJobLabel), an MPIJob (the launcher's Job) or a Flux
//     Operator MiniCluster (the Job's parallelism, gang.SourceMiniCluster);
//     else the Job itself (its parallelism, capped at its completions,
//     gang.SourceJob). A StatefulSet: its group labels, else its replicas
//     when it creates its pods together (podManagementPolicy Parallel,
//     gang.SourceStatefulSet). A workload whose pods run independently
//     implies no gang: a Job with more completions than parallelism, a
//     StatefulSet of the default OrderedReady policy (which creates a pod
//     only once the one before runs); each of its pods is a lone pod. An MPIJob: its group labels, else workers +
//     launcher (gang.SourceMPIJob), so its workers and its launcher's Job
//     share a group. Group labels on a JobSet or MPIJob count as on a Job;
//     a group name without a size there takes the size the workload
//     implies.
//  3. Anything else is a lone pod of size 1 (gang.SourcePod).
//
// # Reads
//
// Everything is read from informer caches (Sources), never from the API
// server while a pod is being scheduled: Jobs and StatefulSets through the
// scheduler's listers; PodGroups (both kinds), JobSets and MPIJobs through
// CustomResources, which runs a dynamic informer for each of them only while
// discovery shows the API server serves it (checked at start, every
// DiscoveryInterval, and sooner when a lookup needs a resource that is not
// served). An object missing from a cache is a retryable error, reported
// as not found only once the cache has synced; a resource that is not
// served is reported as such.
//
// # PodGroup conditions
//
// ConditionWriter records a group's condition (the gang core's
// gang.Condition) on its PodGroup, one group at a time: on a
// scheduler-plugins PodGroup as the Schedulable condition in the
// annotation ConditionKey; on a Kubernetes PodGroup as
// status.conditions[PodGroupInitiallyScheduled] (True/Scheduled when placed, never back once True,
// False/Unschedulable with fluence's message otherwise), written through
// the status subresource.
//
// # Errors
//
// Errors are *ResolveError. Retryable is true when the answer may change by
// itself: an owner or a PodGroup not yet in an informer cache, not created
// yet, or recreated under the same name. It is false for a malformed label
// or an inconsistent object, and the reason then names the object and what
// is wrong with it.
package groups
