package k8sadapter

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/fluence-sched/fluence/pkg/jobspec"
)

// ShapeSlots names the pods whose slots carry a label; see jobspec.PodGroup.
type ShapeSlots = jobspec.ShapeSlots

// Shape is a pod's request in graph units.
type Shape = jobspec.PodShape

// PodShape rounds requests up to what the graph counts: whole cores and
// MiB. A pod that requests no CPU is counted as one core: a slot must hold
// at least one resource, every container runs on some CPU, and counting
// zero would let the engine stack unbounded best-effort pods on one node.
// Reserving a whole core is the conservative choice.
func PodShape(r Requests) Shape {
	s := Shape{
		Cores:     (r.MilliCPU + 999) / 1000,
		MemoryMiB: (r.MemoryBytes + 1<<20 - 1) >> 20,
		GPU:       r.GPU,
	}
	if s.Cores < 1 {
		s.Cores = 1
	}
	return s
}

// GroupJobspec turns a pod group into a jobspec: one slot per pod, one slot
// request per distinct Shape and node requirement, labelled shape0,
// shape1... in order of first appearance, each slot holding {core, memory
// (MiB, when requested), gpu (when requested)}. durationSeconds 0 means
// unlimited. constraint applies to the whole group and may be nil;
// requires, nil or one per pod, limits each pod's own slot (a launcher and
// its workers may ask for different node pools). The jobspec is validated
// before it is returned.
func GroupJobspec(pods []*corev1.Pod, durationSeconds int64, constraint *jobspec.Constraint, requires []*jobspec.Constraint, opts GraphOptions) (*jobspec.Jobspec, []ShapeSlots, error) {
	if len(pods) == 0 {
		return nil, nil, fmt.Errorf("k8sadapter: a group needs at least one pod")
	}
	if durationSeconds < 0 {
		return nil, nil, fmt.Errorf("k8sadapter: negative duration %d", durationSeconds)
	}
	shapes := make([]Shape, len(pods))
	for i, p := range pods {
		if p == nil {
			return nil, nil, fmt.Errorf("k8sadapter: pod %d of the group is nil", i)
		}
		shapes[i] = PodShape(opts.PodRequests(p))
	}
	rs, slots, err := jobspec.PodGroupRequiring(shapes, requires)
	if err != nil {
		return nil, nil, fmt.Errorf("k8sadapter: group of %d pods (first %s/%s): %w", len(pods), pods[0].Namespace, pods[0].Name, err)
	}
	b := jobspec.New(rs...).Duration(durationSeconds)
	if constraint != nil {
		b = b.Constraint(constraint)
	}
	js, err := b.Build()
	if err != nil {
		return nil, nil, fmt.Errorf("k8sadapter: group of %d pods (first %s/%s): %w", len(pods), pods[0].Namespace, pods[0].Name, err)
	}
	return js, slots, nil
}
