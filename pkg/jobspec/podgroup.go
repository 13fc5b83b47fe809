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
	if len(pods) == 0 {
		return nil, nil, fmt.Errorf("jobspec: a pod group needs at least one pod")
	}
	var shapes []PodShape
	var slots []ShapeSlots
	for i, p := range pods {
		if p.Cores < 0 || p.MemoryMiB < 0 || p.GPU < 0 {
			return nil, nil, fmt.Errorf("jobspec: pod %d requests a negative amount: %+v", i, p)
		}
		if p == (PodShape{}) {
			return nil, nil, fmt.Errorf("jobspec: pod %d requests no cpu, memory or gpu", i)
		}
		k := slices.Index(shapes, p)
		if k < 0 {
			k = len(shapes)
			shapes = append(shapes, p)
			slots = append(slots, ShapeSlots{Label: "shape" + strconv.Itoa(k)})
		}
		slots[k].Pods = append(slots[k].Pods, i)
	}
	rs := make([]*ResourceBuilder, len(shapes))
	for k, s := range shapes {
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
		rs[k] = Slot(int64(len(slots[k].Pods)), slots[k].Label).With(with...)
	}
	return rs, slots, nil
}
