package gang

import (
	"fmt"
	"strings"
)

// Resources is what a node offers or a pod asks for, counted as
// Kubernetes counts them: CPU in millicores, memory in bytes, GPUs and pods
// as whole numbers.
type Resources struct {
	MilliCPU    int64
	MemoryBytes int64
	GPU         int64
	// Pods is a node's allocatable pod count (0: the kubelet default,
	// DefaultMaxPods). Ignored on a pod, which always takes one.
	Pods int64
}

// DefaultMaxPods is the kubelet's default pod limit, used for nodes that
// report none.
const DefaultMaxPods = 110

// podPlaces is how many pods a node's allocatable r holds: its count, or
// DefaultMaxPods when it reports none.
func podPlaces(r Resources) int64 {
	if r.Pods == 0 {
		return DefaultMaxPods
	}
	return r.Pods
}

// Taint is a node taint; Effect is NoSchedule, PreferNoSchedule or
// NoExecute.
type Taint struct{ Key, Value, Effect string }

// Node is one node as the core sees it.
type Node struct {
	Name        string
	Labels      map[string]string
	Taints      []Taint
	Allocatable Resources
	// Down: cordoned or not Ready. The node stays in the graph (a group
	// that fits only with it waits rather than being rejected) but takes
	// no new work.
	Down bool
	// Devices are the devices the node offers through Dynamic Resource
	// Allocation, in the order DRA's allocator considers them: one
	// vertex each under the node (devices.go).
	Devices []Device
}

// NodeFilter says which nodes a pod may run on. It is evaluated against
// the nodes as they are whenever the core builds or rebuilds a request, so
// a waiting group sees nodes that join, leave or change.
type NodeFilter interface {
	// Admits reports whether the pod may run on n.
	Admits(n *Node) bool
	// Why explains, when no node admits the pod, which requirement
	// excludes how many of the nodes.
	Why(nodes []*Node) string
	// Key is equal for filters that admit the same nodes on any cluster:
	// pods of a group with equal shapes and keys share a slot request.
	Key() string
}

// Group sources, as GroupID.Source.
const (
	SourceLabel         = "label"          // group name and size on the pod
	SourceWorkloadLabel = "workload-label" // group labels on the owning workload
	SourcePodGroup      = "podgroup"       // a scheduler-plugins PodGroup
	// SourceNativePodGroup: a Kubernetes PodGroup (scheduling.k8s.io) named
	// by the pod's spec.schedulingGroup; its key is
	// namespace/native-podgroup:name, apart from a scheduler-plugins
	// PodGroup or a labelled group of the same name.
	SourceNativePodGroup = "native-podgroup"
	// SourceCompositePodGroup: a Kubernetes CompositePodGroup
	// (scheduling.k8s.io/v1alpha3) whose child PodGroups are its roles;
	// keyed namespace/composite-podgroup:name.
	SourceCompositePodGroup = "composite-podgroup"
	// SourceVolcanoPodGroup: a Volcano PodGroup (scheduling.volcano.sh)
	// named by the pod's annotation; keyed namespace/volcano-podgroup:name.
	SourceVolcanoPodGroup = "volcano-podgroup"
	SourceJob             = "job"         // a Job: its parallelism
	SourceJobSet          = "jobset"      // one replicated job of a JobSet
	SourceStatefulSet     = "statefulset" // a StatefulSet: its replicas
	SourceMPIJob          = "mpijob"      // an MPIJob: workers + launcher
	SourceMiniCluster     = "minicluster" // a Flux Operator MiniCluster
	SourcePod             = "pod"         // a lone pod, size 1
	SourceRecord          = "record"      // known only from an allocation record (after a restart)
)

// GroupID identifies a pod group.
type GroupID struct {
	Namespace string
	Name      string
	// Key is unique across sources: groups named by the user (labels, a
	// PodGroup) are namespace/name; groups implied by a workload or a lone
	// pod are namespace/source:name. A colon is not allowed in a label
	// value, so a lone pod "x" never meets a labelled group "pod-x".
	Key    string
	Size   int32
	Source string
	// Roles, for a multi-role group, is each role's least count as
	// RoleSizes spells it ("launcher=1,workers=8"), the counts adding up
	// to Size; "" for a group of one role (roles.go).
	Roles string
	// Priority, when HasPriority, is the group's own priority (a
	// Kubernetes PodGroup's spec.priority): it orders the group in the
	// queue instead of the highest priority among its pods.
	Priority    int32
	HasPriority bool
	// What a Kubernetes PodGroup (scheduling.k8s.io/v1beta1) asks of its
	// group besides a size. PreemptionPolicy is "Never",
	// "PreemptLowerPriority" or "" (unset). DisruptionSingle: its
	// disruptionMode is single, so a preemption may take its pods one
	// node at a time when that alone makes room, and a member another
	// scheduler preempts does not take the rest with it. Unset, fluence
	// disrupts a group whole (Kubernetes' own default is single; fluence
	// keeps the gang promise unless asked otherwise). Both are kept with
	// the group for preemption, which reads them.
	PreemptionPolicy string
	DisruptionSingle bool
	// TopologyKey is a node label: the whole group must be placed on
	// nodes sharing one value of it (one domain). "" places anywhere.
	TopologyKey string
	// TopologyPreferred is a node label the group would rather share
	// one value of: the tightest level that holds the group when its
	// request is built, falling back to the levels outside it, then
	// anywhere. Ignored when TopologyKey is set.
	TopologyPreferred string
	// Unsupported names what the group's object asks that fluence does
	// not place yet (resource claims, a composite parent); the group is
	// placed without it, and the core says so once in a Warning event.
	Unsupported string
	// MinResources is what a scheduler-plugins PodGroup's
	// spec.minResources asks of the cluster for the whole group: the
	// group is rejected while any of it (cpu, memory, GPUs, pods; zero
	// asks nothing) is more than the nodes' allocatable summed, which is
	// all the cluster could ever offer. Less than that, the group waits
	// for room as any group does: what it asks of each node is its pods'
	// requests. Pods counts pods here.
	MinResources Resources
	// PermitTimeout, when positive, is how long in seconds the group's
	// reserved pods wait at Permit for the rest of the group (a
	// scheduler-plugins PodGroup's spec.scheduleTimeoutSeconds), in place
	// of the scheduler's own permitTimeout. 0 leaves that.
	PermitTimeout int64
}

// NewGroupID returns the id of a group, its Key set from the source.
func NewGroupID(namespace, name string, size int32, source string) GroupID {
	if size < 1 {
		size = 1
	}
	key := namespace + "/" + name
	switch source {
	case SourceLabel, SourceWorkloadLabel, SourcePodGroup, SourceRecord, "":
	default:
		key = namespace + "/" + source + ":" + name
	}
	return GroupID{Namespace: namespace, Name: name, Key: key, Size: size, Source: source}
}

// Named reports whether the group was named by the user, so that its
// pods of other sources may meet it under the same key.
func (id GroupID) named() bool {
	return !strings.Contains(strings.TrimPrefix(id.Key, id.Namespace+"/"), ":")
}

// Pod is one pod as the core sees it.
type Pod struct {
	UID       string
	Namespace string
	Name      string
	// Created orders a group's pods (oldest first; any monotonic number,
	// such as Unix nanoseconds).
	Created  int64
	Requests Resources
	Priority int32
	// Duration is the declared run time in seconds; 0 when none.
	Duration int64
	// Filter limits the nodes the pod may run on; nil for any node.
	Filter NodeFilter
	// Apart: the pod may not share a node with another pod like it (it
	// asks for a host port, or a required pod anti-affinity on the
	// hostname matches its own labels, as MPI jobs ask for one rank per
	// node). A group whose pods are all apart is placed on as many
	// distinct nodes.
	Apart bool
	// Invalid, when set, says why the pod's scheduling requirements
	// cannot be read (a malformed annotation): its group is rejected
	// until the pod changes.
	Invalid string
	// Waiting, when set, names what the pod waits for before it can be
	// placed: an object its spec names that the scheduler has not seen
	// yet (a resource claim, or the template it is made from, created
	// with the pod). The pod takes no part in its group's request until
	// it is clear, and its group waits for it as for a pod that does not
	// exist yet, never rejected for it.
	Waiting string
	// Owned: this scheduler places the pod (its schedulerName).
	Owned bool
	// NodeName is the node the pod is bound to; "" while unbound.
	NodeName string
	// Nominated is the node another scheduler's preemption nominated an
	// unbound pod of its own for (status.nominatedNodeName): its victims
	// are going, and it binds there next. The core counts it on that node
	// meanwhile, as kube-scheduler's own filter does, so that nothing is
	// placed on room already promised. Ignored for pods this scheduler
	// places.
	Nominated string
	// Done: the pod ended (Succeeded or Failed) and holds nothing.
	Done bool
	// Succeeded: Done, and it finished its work. A finished member still
	// counts toward its group's size while its pod exists (an Indexed
	// Job's completed index is never run again), so the group's other
	// pods never wait for it to be replaced.
	Succeeded bool
	// FailReason is a Failed pod's status reason ("OutOfcpu", "Evicted",
	// "DeadlineExceeded"), for messages, and to tell a node's refusal
	// from other failures.
	FailReason string
	// Preempted: the pod has the DisruptionTarget condition with reason
	// PreemptionByScheduler: a scheduler's preemption is taking it (in
	// one-scheduler mode, the stock profile's, pod by pod). A group loses
	// no single member so: the rest of it is evicted too. (A member lost
	// otherwise, its node drained or failed, is replaced alone.)
	Preempted bool
	// PreemptNever: the pod's preemptionPolicy is Never; a group of such
	// pods does not preempt, unless its PodGroup says otherwise.
	PreemptNever bool
	// PreemptedNote is the message of a Preempted pod's DisruptionTarget
	// condition. When fluence's preemption wrote it, it names the
	// preemptor: a scheduler that restarts while victims are going
	// carries that preemption on instead of choosing victims again.
	PreemptedNote string
	// Ran is how long, in ticks, a bound pod had run when it was seen
	// (since its status.startTime); 0 when unknown. An allocation adopted
	// after a restart began when its first pod started, not at the
	// restart: its planned end, and what evicting it would lose, follow.
	Ran int64
	// Checkpointed, when HasCheckpoint, is when the pod's workload last
	// saved its state (the checkpointed-at annotation, in the core's
	// ticks): a preemption that evicts it loses only the work since then
	// (preempt_search.go). A checkpoint before the pod began counts as
	// none.
	Checkpointed  int64
	HasCheckpoint bool
	// Movable: the pod's workload may be moved (the movable annotation,
	// for restartable jobs): a group all of whose pods say so may be
	// evicted to let a group bound to one domain in, when it fits
	// elsewhere now, and is then placed again first (preempt_move.go).
	Movable bool
	// MovedAt, when HasMovedAt, is when the pod's group was last moved to
	// make room (the moved-at annotation written at binding, in the
	// core's ticks, negative before this run began): a restarted core
	// remembers the move, so the group is not moved again within
	// Preemption.MoveEvery of it (preempt_move.go).
	MovedAt    int64
	HasMovedAt bool
	// Deleting: the pod is being deleted and will not be scheduled.
	Deleting bool
	// Gated: the pod has scheduling gates (Kueue holds pods so until
	// their workload is admitted). kube-scheduler does not try it, and
	// its group does not count it until the gates are lifted: a group
	// of gated pods holds nothing.
	Gated bool
	// Devices are the requests of the pod's resource claims, each taking
	// devices of the pod's node. A pod whose claims are allocated asks
	// for exactly the devices they hold (ExactDevices), so that what it
	// holds is counted where it is, whoever placed it.
	Devices []DeviceRequest
	// Claims are the resource claims (namespace/name) the pod uses: the
	// devices they hold are its own, not foreign load, while it holds a
	// slot.
	Claims []string
	// Allocation is the allocation record written at binding (see
	// Core.Record), when the pod carries one.
	Allocation string
	// Role is the pod's part in a multi-role group (GroupID.Roles): its
	// role label, the child PodGroup it names, or its JobSet replicated
	// job. Ignored in a group without roles.
	Role string
	// Labeled is the pod's group when its own labels give name and size,
	// so its arrival is counted before it is scheduled. Zero otherwise.
	Labeled GroupID
}

// Ref names a pod in effects.
type Ref struct{ UID, Namespace, Name string }

func (p *Pod) ref() Ref       { return Ref{UID: p.UID, Namespace: p.Namespace, Name: p.Name} }
func (p *Pod) String() string { return p.Namespace + "/" + p.Name }

// waits reports whether the pod waits for an object it names: a pod whose
// requirements cannot be read is judged (and its group rejected) instead,
// since seeing the object would not make it placeable.
func (p *Pod) waits() bool { return p.Waiting != "" && p.Invalid == "" }

func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// Verdict answers a pod's scheduling cycle: its node, or why it waits.
type Verdict struct {
	Node string
	// Final: the pod cannot be placed until it or the cluster changes;
	// otherwise it waits for its group or for resources.
	Final  bool
	Reason string
}

func waitf(format string, args ...any) Verdict {
	return Verdict{Reason: "fluence: " + fmt.Sprintf(format, args...)}
}
