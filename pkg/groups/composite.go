package groups

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

// CompositePodGroupV1alpha3 is scheduling.k8s.io/v1alpha3
// compositepodgroups (Kubernetes 1.37, alpha: served with
// --runtime-config=scheduling.k8s.io/v1alpha3=true and the
// CompositePodGroup feature gate). A child PodGroup (v1beta1) names its
// parent in spec.parentCompositePodGroupName. Read only while served, as
// the PodGroups are.
var CompositePodGroupV1alpha3 = schedulingv1alpha3.SchemeGroupVersion.WithResource("compositepodgroups")

func init() { watched = append(watched, CompositePodGroupV1alpha3) }

// compositePolicy is what fluence reads from a CompositePodGroup.
type compositePolicy struct {
	sharedSpec
	// Basic: its children are scheduled independently, each its own
	// group.
	Basic bool
	// MinGroupCount: how many children must be placed together (gang).
	MinGroupCount int64
}

func compositePolicyV1alpha3(u *unstructured.Unstructured) (compositePolicy, error) {
	var cpg schedulingv1alpha3.CompositePodGroup
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cpg); err != nil {
		return compositePolicy{}, fmt.Errorf("cannot be read as %s: %v", CompositePodGroupV1alpha3.GroupVersion(), err)
	}
	s := cpg.Spec
	var topo []schedulingv1alpha3.TopologyConstraint
	if c := s.SchedulingConstraints; c != nil {
		topo = c.Topology
	}
	shared, err := readSharedSpec(s.Priority, s.PreemptionPolicy, s.ParentCompositePodGroupName, topo,
		func(t schedulingv1alpha3.TopologyConstraint) string { return t.Key })
	if err != nil {
		return compositePolicy{}, err
	}
	pol := compositePolicy{sharedSpec: shared}
	switch sp := s.SchedulingPolicy; {
	case sp.Gang != nil:
		pol.MinGroupCount = int64(sp.Gang.MinGroupCount)
	case sp.Basic != nil:
		pol.Basic = true
	default:
		return compositePolicy{}, fmt.Errorf("spec.schedulingPolicy is neither basic nor gang")
	}
	return pol, nil
}

// compositeGroup returns the group of a pod whose PodGroup (child, of
// version v, read as childPol) names a parent CompositePodGroup: one gang
// of the parent's children, each child a role counting its minCount.
// handled is false when the child is placed on its own: the parent's
// policy is basic, or the API server does not serve CompositePodGroups
// (then unsupported names the parent for the group's Warning event).
func (s *resolution) compositeGroup(child string, childPol nativePolicy, v nativeVersion) (id gang.GroupID, handled bool, unsupported string, err error) {
	parent := childPol.Parent
	key := s.ns + "/" + parent
	c := s.r.custom
	if !c.serves(CompositePodGroupV1alpha3) {
		return gang.GroupID{}, false, fmt.Sprintf("a parent CompositePodGroup %s (spec.parentCompositePodGroupName), which the API server does not serve as %s", parent, CompositePodGroupV1alpha3.GroupVersion()), nil
	}
	cpg, why := c.get(CompositePodGroupV1alpha3, s.ns, parent)
	if cpg == nil {
		return gang.GroupID{}, true, "", s.fail(true, "PodGroup %s/%s names its parent (spec.parentCompositePodGroupName): CompositePodGroup %s %s", s.ns, child, key, why)
	}
	pol, err := compositePolicyV1alpha3(cpg)
	if err != nil {
		return gang.GroupID{}, true, "", s.fail(false, "CompositePodGroup %s: %v", key, err)
	}
	if pol.Basic {
		return gang.GroupID{}, false, "", nil
	}
	children, err := s.compositeChildren(parent, v)
	if err != nil {
		return gang.GroupID{}, true, "", err
	}
	if int64(len(children)) < pol.MinGroupCount {
		names := make([]string, len(children))
		for i, ch := range children {
			names[i] = ch.name
		}
		return gang.GroupID{}, true, "", s.fail(true, "CompositePodGroup %s gangs %d child PodGroups (spec.schedulingPolicy.gang.minGroupCount) and %d exist (%s): waiting for the rest",
			key, pol.MinGroupCount, len(children), strings.Join(names, ", "))
	}
	id, err = s.compositeID(parent, pol, children)
	return id, true, "", err
}

// compositeChild is one child PodGroup of a composite, as fluence reads it.
type compositeChild struct {
	name string
	pol  nativePolicy
}

// compositeChildren lists the PodGroups (of version v) in the pod's
// namespace that name parent, by name. A child that is basic, or whose
// spec does not read, is an error naming it: a composite gang counts
// gangs.
func (s *resolution) compositeChildren(parent string, v nativeVersion) ([]compositeChild, error) {
	objs, _, why := s.r.custom.list(v.gvr, s.ns)
	if why != "" {
		return nil, s.fail(true, "the child PodGroups of CompositePodGroup %s/%s %s", s.ns, parent, why)
	}
	var out []compositeChild
	for _, o := range objs {
		if p, _, _ := unstructured.NestedString(o.Object, "spec", "parentCompositePodGroupName"); p != parent {
			continue
		}
		pol, err := v.policy(o)
		if err != nil {
			return nil, s.fail(false, "PodGroup %s/%s (a child of CompositePodGroup %s): %v", s.ns, o.GetName(), parent, err)
		}
		switch {
		case pol.Basic:
			return nil, s.fail(false, "PodGroup %s/%s is basic, a child of the gang CompositePodGroup %s/%s: fluence places a composite's children as one gang of gangs, each with its minCount; give it spec.schedulingPolicy.gang",
				s.ns, o.GetName(), s.ns, parent)
		case pol.MinCount < 1 || pol.MinCount > k8sadapter.MaxGroupSize:
			return nil, s.fail(false, "PodGroup %s/%s: spec.schedulingPolicy.gang.minCount %d is out of range", s.ns, o.GetName(), pol.MinCount)
		}
		out = append(out, compositeChild{name: o.GetName(), pol: pol})
	}
	return out, nil
}

// compositeID is the gang of a composite's children: a role per child, the
// composite's priority and preemption policy, and one topology domain for
// the whole gang: the composite's, else the one its children ask for.
// Children asking for different domains (or one other than the
// composite's) cannot each have theirs in a gang fluence places in one
// domain: a lasting error naming them.
func (s *resolution) compositeID(parent string, pol compositePolicy, children []compositeChild) (gang.GroupID, error) {
	key := s.ns + "/" + parent
	var roles []gang.Role
	var size int64
	topo := map[string][]string{} // key: the children asking it
	for _, ch := range children {
		roles = append(roles, gang.Role{Name: ch.name, Min: int32(ch.pol.MinCount)})
		if size += ch.pol.MinCount; size > k8sadapter.MaxGroupSize {
			return gang.GroupID{}, s.fail(false, "CompositePodGroup %s: its children's minCounts add up to more than the maximum group size %d", key, k8sadapter.MaxGroupSize)
		}
		if k := ch.pol.TopologyKey; k != "" {
			topo[k] = append(topo[k], ch.name)
		}
	}
	asked := pol.TopologyKey
	for _, k := range slices.Sorted(maps.Keys(topo)) {
		if asked == "" {
			asked = k
		}
		if k != asked {
			return gang.GroupID{}, s.fail(false, "CompositePodGroup %s: its children ask for different topology domains (%s): fluence places a composite gang within one domain, the composite's or the one all its children ask for",
				key, topologyAsks(pol.TopologyKey, topo))
		}
	}
	id := s.id(parent, int32(size), gang.SourceCompositePodGroup)
	id.Roles = gang.RoleSizes(roles)
	id.TopologyKey = asked
	if pol.Priority != nil {
		id.Priority, id.HasPriority = *pol.Priority, true
	}
	id.PreemptionPolicy = pol.PreemptionPolicy
	var notes []string
	if n := int64(len(children)); n > pol.MinGroupCount {
		notes = append(notes, fmt.Sprintf("a gang of %d of its %d child PodGroups (minGroupCount): fluence places all %d together", pol.MinGroupCount, n, n))
	}
	if pol.Parent != "" {
		notes = append(notes, "a parent CompositePodGroup "+pol.Parent+" of its own (nested composites): fluence gangs the innermost")
	}
	id.Unsupported = strings.Join(notes, " and ")
	return id, nil
}

// topologyAsks spells who asks which domain: "composite: rack; prefill:
// zone".
func topologyAsks(composite string, byKey map[string][]string) string {
	var parts []string
	if composite != "" {
		parts = append(parts, "the composite: "+composite)
	}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		parts = append(parts, strings.Join(byKey[k], ", ")+": "+k)
	}
	return strings.Join(parts, "; ")
}
