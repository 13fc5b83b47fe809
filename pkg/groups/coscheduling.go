package groups

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// What fluence reads from a scheduler-plugins PodGroup
// (scheduling.x-k8s.io/v1alpha1) besides spec.minMember, the group's
// size. Teams moving from the coscheduling plugin keep their PodGroups,
// and the two fields below keep the meaning coscheduling gives them:
//
//   - spec.minResources, the group's total minimum: the core rejects the
//     group when it is more than the nodes' allocatable summed
//     (GroupID.MinResources). Coscheduling compares it with the room free
//     now and holds the group back until it is; fluence's queue already
//     waits for room, from the pods' own requests, so only what can never
//     be free is judged. cpu, memory, pods and the resources counted as
//     GPUs are checked; others (ephemeral-storage, hugepages-*, other
//     extended resources) are not in the core's model of a node, and the
//     group is told so once (GroupID.Unsupported).
//   - spec.scheduleTimeoutSeconds, how long the group's reserved pods wait
//     at Permit (GroupID.PermitTimeout), in place of the plugin's
//     permitTimeout. 0 is read as unset: the MPI Operator writes 0 into
//     every PodGroup whose MPIJob asks no timeout, and the Kubeflow
//     Training Operator documents 0 as its default, while coscheduling
//     would wait 0 s (a group could start only if all its pods reached
//     Permit at once), which no one asks on purpose. A negative value,
//     which the API server accepts, is an error naming the PodGroup.
//
// Any other field of the spec is coscheduling's own and not read.

// podGroupSpec reads spec.minResources and spec.scheduleTimeoutSeconds of
// the PodGroup key into id. A malformed value is an error naming the
// PodGroup and the field; it does not pass by itself.
func (s *resolution) podGroupSpec(pg *unstructured.Unstructured, key string, id *gang.GroupID) error {
	t, _, err := nestedInt(pg.Object, "spec", "scheduleTimeoutSeconds")
	switch {
	case err != nil:
		return s.fail(false, "PodGroup %s: spec.scheduleTimeoutSeconds %v", key, err)
	case t < 0:
		return s.fail(false, "PodGroup %s: spec.scheduleTimeoutSeconds %d is negative", key, t)
	case t > 0:
		id.PermitTimeout = t
	}
	raw, _, _ := unstructured.NestedFieldNoCopy(pg.Object, "spec", "minResources")
	if raw == nil {
		return nil
	}
	list, ok := raw.(map[string]any)
	if !ok {
		return s.fail(false, "PodGroup %s: spec.minResources is not a map of resource names to quantities", key)
	}
	var want gang.Resources
	var unchecked []string
	for _, name := range slices.Sorted(maps.Keys(list)) {
		q, err := quantityOf(list[name])
		if err != nil {
			return s.fail(false, "PodGroup %s: spec.minResources.%s: %v", key, name, err)
		}
		if q.Sign() < 0 {
			return s.fail(false, "PodGroup %s: spec.minResources.%s: %s is negative", key, name, q.String())
		}
		switch rn := corev1.ResourceName(name); {
		case rn == corev1.ResourceCPU:
			want.MilliCPU = scaled(q, resource.Milli)
		case rn == corev1.ResourceMemory:
			want.MemoryBytes = scaled(q, 0)
		case rn == corev1.ResourcePods:
			want.Pods = scaled(q, 0)
		case s.r.gpus.IsGPU(rn):
			// Several GPU names sum, as on a node.
			want.GPU = min(want.GPU+scaled(q, 0), scaledLimit)
		case !q.IsZero():
			unchecked = append(unchecked, name)
		}
	}
	id.MinResources = want
	if len(unchecked) > 0 {
		id.Unsupported = fmt.Sprintf("%s in spec.minResources (not checked: fluence counts cpu, memory, pods and GPUs)", joinAnd(unchecked))
	}
	return nil
}

// quantityOf reads a quantity as the API server stores it in an
// unstructured object: a string ("500m", "4Gi") or a JSON number.
func quantityOf(v any) (resource.Quantity, error) {
	var text string
	switch x := v.(type) {
	case string:
		text = x
	case int64:
		return *resource.NewQuantity(x, resource.DecimalSI), nil
	case int32:
		return *resource.NewQuantity(int64(x), resource.DecimalSI), nil
	case int:
		return *resource.NewQuantity(int64(x), resource.DecimalSI), nil
	case float64:
		text = strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return resource.Quantity{}, fmt.Errorf("%v is not a quantity", v)
	}
	q, err := resource.ParseQuantity(text)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("%q is not a quantity such as 500m, 2 or 4Gi", text)
	}
	return q, nil
}

// scaled is q in units of 10^scale, rounded up; an amount beyond int64 is
// the largest int64 (more than any cluster has, so the group is rejected
// as it would be), never a wrapped small or negative one. The bound is
// half the range so that sums of such amounts stay positive too.
func scaled(q resource.Quantity, scale resource.Scale) int64 {
	if q.Cmp(*resource.NewScaledQuantity(scaledLimit, scale)) >= 0 {
		return scaledLimit
	}
	return q.ScaledValue(scale)
}

const scaledLimit = math.MaxInt64 / 2

// joinAnd joins names as prose: "a", "a and b", "a, b and c".
func joinAnd(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
