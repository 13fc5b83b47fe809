package groups

import "fmt"

// sharedSpec is what a PodGroup and a CompositePodGroup say in the same
// words, in every served version: read once, by readSharedSpec, so the two
// kinds cannot drift apart in how they are understood.
type sharedSpec struct {
	// Priority is spec.priority, which the Priority admission plugin
	// fills from spec.priorityClassName; nil when unset.
	Priority *int32
	// PreemptionPolicy is spec.preemptionPolicy ("Never",
	// "PreemptLowerPriority", or "" when unset).
	PreemptionPolicy string
	// TopologyKey is spec.schedulingConstraints.topology[0].key: the
	// node label whose one value must hold the whole group.
	TopologyKey string
	// Parent is spec.parentCompositePodGroupName: the group is one role
	// of its parent's gang (composite.go); composites nest, and fluence
	// gangs only the innermost.
	Parent string
}

// readSharedSpec reads the common fields. The API types differ by version
// (each has its own PreemptionPolicy and TopologyConstraint), hence the
// type parameters; key reads one topology entry's node label key.
func readSharedSpec[P ~string, T any](priority *int32, preemption *P, parent *string, topology []T, key func(T) string) (sharedSpec, error) {
	s := sharedSpec{Priority: priority}
	if preemption != nil {
		s.PreemptionPolicy = string(*preemption)
	}
	if parent != nil {
		s.Parent = *parent
	}
	switch len(topology) {
	case 0:
	case 1:
		s.TopologyKey = key(topology[0])
	default:
		// fluence holds a group to one domain of one level; several levels
		// at once (a rack inside a zone) would need nested domains.
		return sharedSpec{}, fmt.Errorf("spec.schedulingConstraints.topology has %d entries; at most one is allowed", len(topology))
	}
	return s, nil
}
