package k8sadapter

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// AllocationKey is the pod annotation written at binding: the group key and
// an allocation id, so a restarted scheduler knows which bound pods form
// one allocation.
const AllocationKey = "fluence.flux-framework.org/allocation"

// DomainKey is the pod annotation written at binding when the pod's group
// is kept within a topology domain: the domain, as label=value (for
// example example.com/rack=r3). It is for people and tools; fluence reads
// a group's domain from its nodes' labels, not from this.
const DomainKey = "fluence.flux-framework.org/domain"

// CoreNode translates a Node for the gang core: its labels, taints,
// allocatable resources (GPUs summed over nvidia.com/gpu and the extra
// names) and whether it takes new pods.
func (o GraphOptions) CoreNode(n *corev1.Node) gang.Node {
	a := n.Status.Allocatable
	out := gang.Node{
		Name:   n.Name,
		Labels: n.Labels,
		Allocatable: gang.Resources{
			MilliCPU:    max(a.Cpu().MilliValue(), 0),
			MemoryBytes: max(a.Memory().Value(), 0),
			GPU:         max(o.gpuCount(a), 0),
			Pods:        max(a.Pods().Value(), 0),
		},
		Down: NodeDown(n),
	}
	for _, t := range n.Spec.Taints {
		out.Taints = append(out.Taints, gang.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	return out
}

// Preempted reports whether a scheduler's preemption is taking the pod:
// it has the DisruptionTarget condition, True, with the reason
// PreemptionByScheduler (set by kube-scheduler's preemption, and by
// fluence's own, before the pod is deleted). Other disruptions (a
// drained node, a taint, the pod garbage collector) have other reasons.
func Preempted(p *corev1.Pod) bool {
	ok, _ := preemption(p)
	return ok
}

// preemption is Preempted with the condition's message, which names the
// preemptor when fluence's preemption wrote it.
func preemption(p *corev1.Pod) (bool, string) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			if c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonPreemptionByScheduler {
				return true, c.Message
			}
			return false, ""
		}
	}
	return false, ""
}

// CorePod translates a pod for the gang core. owned says whether this
// scheduler places it. A malformed duration or requirement does not fail
// the translation: the pod carries it as Invalid, and its group is
// rejected with that reason.
func (o GraphOptions) CorePod(p *corev1.Pod, owned bool) gang.Pod {
	r := o.PodRequests(p)
	out := podState(p, owned)
	out.Created = p.CreationTimestamp.UnixNano()
	out.Requests = gang.Resources{MilliCPU: r.MilliCPU, MemoryBytes: r.MemoryBytes, GPU: r.GPU}
	out.Priority = corev1helpers.PodPriority(p)
	// The admission plugin copies the PriorityClass's preemptionPolicy
	// onto the pod; a pod that says Never keeps its group from preempting
	// (unless a PodGroup says otherwise).
	out.PreemptNever = p.Spec.PreemptionPolicy != nil && *p.Spec.PreemptionPolicy == corev1.PreemptNever
	out.Preempted, out.PreemptedNote = preemption(p)
	out.Succeeded = p.Status.Phase == corev1.PodSucceeded
	out.Allocation = p.Annotations[AllocationKey]
	out.Movable = p.Annotations[MovableKey] == "true"
	if p.Status.Phase == corev1.PodFailed {
		out.FailReason = p.Status.Reason
	}
	if !owned && p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
		out.Nominated = p.Status.NominatedNodeName
	}
	if !owned || p.Spec.NodeName != "" {
		return out // only its requests and place matter
	}
	// The core names the pod itself: keep only what is wrong.
	invalid := func(err error) string {
		return strings.TrimPrefix(err.Error(), "pod "+p.Namespace+"/"+p.Name+": ")
	}
	if d, err := DurationOf(p); err != nil {
		out.Invalid = invalid(err)
	} else {
		out.Duration = d
	}
	if f, err := NewPodFilter(p); err != nil {
		out.Invalid = invalid(err)
	} else {
		out.Filter = f
	}
	out.Apart = RepelsItself(p)
	out.Labeled, _ = LabeledGroup(p)
	return out
}

// HoldPod is the part of CorePod that gang.Core.Hold reads: who the pod
// is, its state, its labelled group. PreEnqueue asks it for every pod
// entering the scheduling queue, under the queue's lock, so it skips the
// requests, filters and durations only a placement needs.
func HoldPod(p *corev1.Pod) gang.Pod {
	out := podState(p, true)
	if p.Spec.NodeName == "" { // as CorePod: a bound pod's group is its record's
		out.Labeled, _ = LabeledGroup(p)
	}
	return out
}

// podState is a pod's identity and state, as CorePod and HoldPod both
// give them.
func podState(p *corev1.Pod, owned bool) gang.Pod {
	return gang.Pod{
		UID:       string(p.UID),
		Namespace: p.Namespace,
		Name:      p.Name,
		Owned:     owned,
		NodeName:  p.Spec.NodeName,
		Done:      p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed,
		Deleting:  p.DeletionTimestamp != nil,
		Gated:     len(p.Spec.SchedulingGates) > 0,
		Role:      RoleOf(p),
	}
}

// LabeledGroup is the group a pod's own labels name with a size (fluence's
// labels, or scheduler-plugins' with the legacy size label); false when
// they name none, a malformed one, or one without a size, and for a pod
// naming a Kubernetes PodGroup, which belongs to it whatever its labels
// say (the resolver's first rule): counting it in a labelled group would
// place that group for pods that never join it.
func LabeledGroup(p *corev1.Pod) (gang.GroupID, bool) {
	if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil && *sg.PodGroupName != "" {
		return gang.GroupID{}, false
	}
	if g, found, err := ParseGroup(p); err == nil && found && g.Size > 0 {
		id := gang.NewGroupID(p.Namespace, g.Name, g.Size, gang.SourceLabel)
		id.Roles = g.Roles
		return id, true
	}
	return gang.GroupID{}, false
}
