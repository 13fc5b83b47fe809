package k8sadapter

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Group label and annotation keys.
const (
	PodGroupKey        = "fluence.flux-framework.org/pod-group"
	GroupKey           = "fluence.flux-framework.org/group" // older Fluence spelling
	GroupSizeKey       = "fluence.flux-framework.org/group-size"
	SchedulingGroupKey = "scheduling.x-k8s.io/pod-group" // scheduler-plugins PodGroup
	LegacySizeKey      = "fluence.group-size"            // beside scheduling.x-k8s.io/pod-group
	// A Volcano PodGroup (scheduling.volcano.sh) is named by either
	// annotation, the first as Volcano itself reads it.
	VolcanoGroupKey    = "scheduling.k8s.io/group-name"
	VolcanoGroupAltKey = "scheduling.volcano.sh/group-name"
	// Kueue's plain-pod groups: the label names the group, the annotation
	// its total count, as Kueue itself reads them.
	KueueGroupKey = "kueue.x-k8s.io/pod-group-name"
	KueueCountKey = "kueue.x-k8s.io/pod-group-total-count"
)

// Group sources: which spelling ParseGroup found.
const (
	SourcePodGroup       = "fluence"         // pod-group (+ group-size)
	SourceGroup          = "fluence-group"   // group (+ group-size)
	SourceSchedulingSize = "scheduling+size" // scheduling.x-k8s.io/pod-group + fluence.group-size
	SourcePodGroupObject = "podgroup"        // scheduling.x-k8s.io/pod-group alone: size is the PodGroup's minMember
	SourceKueue          = "kueue"           // kueue.x-k8s.io/pod-group-name + pod-group-total-count
)

// MaxGroupSize bounds a declared group size.
const MaxGroupSize = 100000

// Group is a pod group as declared on an object.
type Group struct {
	Name string
	// Size is the declared size; 0 means the object names a group without a
	// size, and the caller takes it from the owning workload (Source
	// fluence or fluence-group) or from the PodGroup's minMember (Source
	// podgroup).
	Size   int32
	Source string
	// Roles, for a multi-role group (fluence's spellings with the
	// role-sizes annotation), is each role's count as gang.RoleSizes
	// spells it; Size is then their sum.
	Roles string
}

// ParseGroup reads an object's group from its labels or annotations (a
// label wins over an annotation with the same key). The spellings are tried
// in this order and the first whose name key is present wins:
//
//  1. fluence.flux-framework.org/pod-group [+ fluence.flux-framework.org/group-size]
//  2. fluence.flux-framework.org/group [+ fluence.flux-framework.org/group-size]
//  3. scheduling.x-k8s.io/pod-group + fluence.group-size
//  4. scheduling.x-k8s.io/pod-group alone (Size 0, Source "podgroup")
//  5. kueue.x-k8s.io/pod-group-name + kueue.x-k8s.io/pod-group-total-count
//     (Kueue's plain-pod groups; the count is required, as Kueue requires it)
//
// Beside fluence's own spellings (1 and 2), the annotation
// fluence.flux-framework.org/role-sizes makes a multi-role group
// (roles.go): its size is the roles' counts summed, which a group-size
// given too must equal.
//
// found is false when the object names no group. A size that is not an
// integer in 1..MaxGroupSize, or a name that is not a valid label value, is
// an error naming the object, the key and the value.
func ParseGroup(obj metav1.Object) (Group, bool, error) {
	type spelling struct{ name, size, source string }
	for _, s := range []spelling{
		{PodGroupKey, GroupSizeKey, SourcePodGroup},
		{GroupKey, GroupSizeKey, SourceGroup},
		{SchedulingGroupKey, LegacySizeKey, SourceSchedulingSize},
		{SchedulingGroupKey, "", SourcePodGroupObject},
		{KueueGroupKey, KueueCountKey, SourceKueue},
	} {
		name, nameWhere, ok := lookup(obj, s.name)
		if !ok {
			continue
		}
		sizeVal, sizeWhere, hasSize := "", "", false
		if s.size != "" {
			sizeVal, sizeWhere, hasSize = lookup(obj, s.size)
			if !hasSize && s.source == SourceSchedulingSize {
				continue // spelling 4 applies
			}
			if !hasSize && s.source == SourceKueue {
				return Group{}, true, fmt.Errorf("%s: %s %s names a Kueue pod group without the annotation %s (its total count)", describe(obj), nameWhere, s.name, KueueCountKey)
			}
		}
		if errs := validation.IsValidLabelValue(name); name == "" || len(errs) > 0 {
			why := "must not be empty"
			if len(errs) > 0 {
				why = strings.Join(errs, "; ")
			}
			return Group{}, true, fmt.Errorf("%s: %s %s: %q is not a valid group name: %s", describe(obj), nameWhere, s.name, name, why)
		}
		g := Group{Name: name, Source: s.source}
		if hasSize {
			n, err := parseSize(sizeVal)
			if err != nil {
				return Group{}, true, fmt.Errorf("%s: %s %s: %q %s", describe(obj), sizeWhere, s.size, sizeVal, err.Error())
			}
			g.Size = n
		}
		if s.source == SourcePodGroup || s.source == SourceGroup {
			roles, size, err := groupRoles(obj, g.Size, s.size)
			if err != nil {
				return Group{}, true, err
			}
			g.Roles, g.Size = roles, size
		}
		return g, true, nil
	}
	return Group{}, false, nil
}

type sizeError string

func (e sizeError) Error() string { return string(e) }

// parseSize accepts decimal digits only (no sign, no fraction).
func parseSize(v string) (int32, error) {
	if v == "" {
		return 0, sizeError("is not a positive integer")
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, sizeError("is not a positive integer")
		}
		n = n*10 + int64(c-'0')
		if n > MaxGroupSize {
			return 0, sizeError(fmt.Sprintf("exceeds the maximum group size %d", MaxGroupSize))
		}
	}
	if n == 0 {
		return 0, sizeError("is not a positive integer")
	}
	return int32(n), nil
}

func lookup(obj metav1.Object, key string) (value, where string, ok bool) {
	if v, ok := obj.GetLabels()[key]; ok {
		return v, "label", true
	}
	if v, ok := obj.GetAnnotations()[key]; ok {
		return v, "annotation", true
	}
	return "", "", false
}

// describe names an object as "kind namespace/name".
func describe(obj metav1.Object) string {
	kind := "object"
	switch obj.(type) {
	case *corev1.Pod:
		kind = "pod"
	case *batchv1.Job:
		kind = "job"
	case *appsv1.StatefulSet:
		kind = "statefulset"
	case *appsv1.ReplicaSet:
		kind = "replicaset"
	}
	if ns := obj.GetNamespace(); ns != "" {
		return kind + " " + ns + "/" + obj.GetName()
	}
	return kind + " " + obj.GetName()
}

// JobGroupSize is the group size a Job implies: its parallelism (default 1;
// a parallelism of 0, a suspended-like job, also counts as 1), capped at
// its completions. A Job with more completions than parallelism runs its
// pods as independent tasks in waves, the last of which may be smaller than
// the parallelism: as a gang its last wave would wait forever, so each of
// its pods is a group of one (label the pods to gang them anyway).
func JobGroupSize(j *batchv1.Job) int32 {
	if j == nil || j.Spec.Parallelism == nil || *j.Spec.Parallelism < 1 {
		return 1
	}
	p := *j.Spec.Parallelism
	if c := j.Spec.Completions; c != nil {
		switch {
		case *c > p:
			return 1
		case *c >= 1:
			return *c
		}
	}
	return p
}

// StatefulSetGroupSize is the group size a StatefulSet implies: its replicas
// (default 1; 0 replicas also counts as 1) when it creates its pods
// together (podManagementPolicy Parallel). Under the default policy,
// OrderedReady, the controller creates each pod only once the one before
// it runs and is ready: as a gang, its first pod would wait forever for
// the rest, so each of its pods is a group of one.
func StatefulSetGroupSize(s *appsv1.StatefulSet) int32 {
	if s == nil || s.Spec.Replicas == nil || *s.Spec.Replicas < 1 || !StatefulSetParallel(s) {
		return 1
	}
	return *s.Spec.Replicas
}

// StatefulSetParallel reports whether a StatefulSet creates its pods
// together. An empty policy is the API server's default, OrderedReady.
func StatefulSetParallel(s *appsv1.StatefulSet) bool {
	return s != nil && s.Spec.PodManagementPolicy == appsv1.ParallelPodManagement
}
