package groups

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

// Volcano's PodGroup (scheduling.volcano.sh/v1beta1), for teams coming
// from Volcano: a pod annotated scheduling.k8s.io/group-name (or
// scheduling.volcano.sh/group-name) belongs to the PodGroup of that name
// in its namespace, its size being spec.minMember. The rest of its spec
// is Volcano's own (queues, per-task minimums, minimum resources, network
// topology): fluence does not act on it and says so (GroupID.Unsupported).

// volcanoGroupName returns the Volcano PodGroup the pod's annotations name.
func volcanoGroupName(pod *corev1.Pod) (string, bool) {
	for _, key := range []string{k8sadapter.VolcanoGroupKey, k8sadapter.VolcanoGroupAltKey} {
		if name := pod.Annotations[key]; name != "" {
			return name, true
		}
	}
	return "", false
}

// volcanoIgnored are the spec fields of a Volcano PodGroup fluence does
// not act on.
var volcanoIgnored = []string{"minTaskMember", "minResources", "queue", "networkTopology", "subGroupPolicy"}

// volcanoPodGroup returns the group of the Volcano PodGroup name in the
// pod's namespace.
func (s *resolution) volcanoPodGroup(name string) (gang.GroupID, error) {
	key := s.ns + "/" + name
	pg, why := s.r.custom.get(VolcanoPodGroupResource, s.ns, name)
	if pg == nil {
		return gang.GroupID{}, s.fail(true, "Volcano PodGroup %s (annotation %s) %s", key, k8sadapter.VolcanoGroupKey, why)
	}
	n, found, err := nestedInt(pg.Object, "spec", "minMember")
	switch {
	case err != nil:
		return gang.GroupID{}, s.fail(false, "Volcano PodGroup %s: spec.minMember %v", key, err)
	case !found:
		return gang.GroupID{}, s.fail(false, "Volcano PodGroup %s has no spec.minMember", key)
	case n < 1:
		return gang.GroupID{}, s.fail(false, "Volcano PodGroup %s: spec.minMember %d is not a positive integer", key, n)
	case n > k8sadapter.MaxGroupSize:
		return gang.GroupID{}, s.fail(false, "Volcano PodGroup %s: spec.minMember %d exceeds the maximum group size %d", key, n, k8sadapter.MaxGroupSize)
	}
	id := s.id(name, int32(n), gang.SourceVolcanoPodGroup)
	spec, _ := pg.Object["spec"].(map[string]any)
	var ignored []string
	for _, f := range volcanoIgnored {
		// queue "default" is what Volcano fills in when none is asked for.
		if v, ok := spec[f]; ok && v != nil && !(f == "queue" && v == "default") {
			ignored = append(ignored, "spec."+f)
		}
	}
	if len(ignored) > 0 {
		slices.Sort(ignored)
		id.Unsupported = "Volcano's " + strings.Join(ignored, ", ")
	}
	return id, nil
}
