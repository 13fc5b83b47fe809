package jobspec

import (
	"fmt"
	"slices"
	"strconv"
)

// PodShape is one pod's request in graph units: whole cores, MiB of memory
// and GPUs.
type PodShape struct {
	Cores, MemoryMiB, GPU int64
}

// ShapeSlots names the pods (indexes into the group's pod list) that the
// slots labelled Label stand for.
type ShapeSlots struct {
	Label string
	Pods  []int
}

// PodGroup returns the resources of a pod group's jobspec: one slot per
// pod, one slot request per distinct shape, labelled shape0, shape1, ... in
// order of first appearance, each slot holding {core, memory (MiB), gpu}
// for the parts the shape requests. A heterogeneous group is matched as
// itself, not as copies of its first pod. The Kubernetes adapter and the
// simulator both build their jobspecs with it, so a group is the same
// request in both.
func PodGroup(pods []PodShape) ([]*ResourceBuilder, []ShapeSlots, error) {
	return PodGroupRequiring(pods, nil)
}

// PodGroupRequiring is PodGroup for pods that may ask for different nodes:
// requires[i] (nil for any node) becomes the requires of pod i's slot, and
// pods of one shape with different requires get different slots. requires
// is nil or as long as pods.
func PodGroupRequiring(pods []PodShape, requires []*Constraint) ([]*ResourceBuilder, []ShapeSlots, error) {
	if len(pods) == 0 {
		return nil, nil, fmt.Errorf("jobspec: a pod group needs at least one pod")
	}
	if requires != nil && len(requires) != len(pods) {
		return nil, nil, fmt.Errorf("jobspec: %d pods but %d requires", len(pods), len(requires))
	}
	type key struct {
		shape    PodShape
		requires string // "" for any node; the constraint's canonical JSON otherwise
	}
	var keys []key
	var reqs []*Constraint
	var slots []ShapeSlots
	for i, p := range pods {
		if p.Cores < 0 || p.MemoryMiB < 0 || p.GPU < 0 {
			return nil, nil, fmt.Errorf("jobspec: pod %d requests a negative amount: %+v", i, p)
		}
		if p == (PodShape{}) {
			return nil, nil, fmt.Errorf("jobspec: pod %d requests no cpu, memory or gpu", i)
		}
		kk := key{shape: p}
		var r *Constraint
		if requires != nil && requires[i] != nil {
			r = requires[i]
			kk.requires = r.String()
		}
		k := slices.Index(keys, kk)
		if k < 0 {
			k = len(keys)
			keys = append(keys, kk)
			reqs = append(reqs, r)
			slots = append(slots, ShapeSlots{Label: "shape" + strconv.Itoa(k)})
		}
		slots[k].Pods = append(slots[k].Pods, i)
	}
	rs := make([]*ResourceBuilder, len(keys))
	for k, kk := range keys {
		s := kk.shape
		var with []*ResourceBuilder
		if s.Cores > 0 {
			with = append(with, R("core", s.Cores))
		}
		if s.MemoryMiB > 0 {
			with = append(with, R("memory", s.MemoryMiB).Unit("MiB"))
		}
		if s.GPU > 0 {
			with = append(with, R("gpu", s.GPU))
		}
		rs[k] = Slot(int64(len(slots[k].Pods)), slots[k].Label).With(with...).Requires(reqs[k])
	}
	return rs, slots, nil
}
