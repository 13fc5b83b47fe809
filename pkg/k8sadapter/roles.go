package k8sadapter

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// Multi-role groups: one gang whose pods play different parts, each part
// with a count of its own (a launcher and eight workers).
const (
	// RoleKey, a label on a pod, names its role in its group.
	RoleKey = "fluence.flux-framework.org/role"
	// RoleSizesKey gives each role's least count, "launcher=1,workers=8",
	// beside the group's name. A label value cannot hold "=" or ",", so
	// it is an annotation (a label is read too, as for the other keys,
	// but can never be valid).
	RoleSizesKey = "fluence.flux-framework.org/role-sizes"
	// JobSetReplicatedJobKey is the label JobSet puts on its Jobs and
	// pods naming the replicated job they belong to: a pod's role in a
	// JobSet placed as one gang.
	JobSetReplicatedJobKey = "jobset.sigs.k8s.io/replicatedjob-name"
)

// ParseRoleSizes reads a role-sizes value: comma-separated name=count
// entries, each name a valid label value used once, each count a positive
// integer, their sum at most MaxGroupSize. Spaces around entries are
// allowed. The error says what is wrong with the value (the caller names
// the object and the key).
func ParseRoleSizes(v string) ([]gang.Role, error) {
	if strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("names no role (want name=count entries joined by commas, e.g. launcher=1,workers=8)")
	}
	var roles []gang.Role
	var sum int64
	for entry := range strings.SplitSeq(v, ",") {
		entry = strings.TrimSpace(entry)
		name, count, ok := strings.Cut(entry, "=")
		name, count = strings.TrimSpace(name), strings.TrimSpace(count)
		if !ok || name == "" {
			return nil, fmt.Errorf("entry %q is not name=count", entry)
		}
		if errs := validation.IsValidLabelValue(name); len(errs) > 0 {
			return nil, fmt.Errorf("role %q is not a valid label value: %s", name, strings.Join(errs, "; "))
		}
		if slices.ContainsFunc(roles, func(r gang.Role) bool { return r.Name == name }) {
			return nil, fmt.Errorf("role %q is named twice", name)
		}
		n, err := parseSize(count)
		if err != nil {
			return nil, fmt.Errorf("role %s: count %q %v", name, count, err)
		}
		if sum += int64(n); sum > MaxGroupSize {
			return nil, fmt.Errorf("the roles' counts add up to more than the maximum group size %d", MaxGroupSize)
		}
		roles = append(roles, gang.Role{Name: name, Min: n})
	}
	return roles, nil
}

// groupRoles reads the role sizes of a group named on obj with the given
// size key: the group's roles as gang.RoleSizes spells them, and its size
// (their sum, which a declared size must equal). roles is "" when obj
// gives none, and size is then declared.
func groupRoles(obj metav1.Object, declared int32, sizeKey string) (roles string, size int32, err error) {
	v, where, ok := lookup(obj, RoleSizesKey)
	if !ok {
		return "", declared, nil
	}
	list, err := ParseRoleSizes(v)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %s %s: %q %v", describe(obj), where, RoleSizesKey, v, err)
	}
	var sum int32
	for _, r := range list {
		sum += r.Min
	}
	if declared > 0 && declared != sum {
		return "", 0, fmt.Errorf("%s: %s %s is %d but %s %q adds up to %d pods: drop the size or make them agree",
			describe(obj), sizeWhere(obj, sizeKey), sizeKey, declared, RoleSizesKey, v, sum)
	}
	return gang.RoleSizes(list), sum, nil
}

func sizeWhere(obj metav1.Object, key string) string {
	_, where, _ := lookup(obj, key)
	return where
}

// RoleOf is a pod's role in a multi-role group: the child PodGroup its
// spec.schedulingGroup names (a child of a CompositePodGroup is a role),
// else its fluence role label, else its JobSet replicated job. "" when
// none; a group without roles ignores it.
func RoleOf(p *corev1.Pod) string {
	if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil && *sg.PodGroupName != "" {
		return *sg.PodGroupName
	}
	if r := p.Labels[RoleKey]; r != "" {
		return r
	}
	return p.Labels[JobSetReplicatedJobKey]
}

// CheckRole says, for a pod of a multi-role group, what is wrong with its
// role: it has none, or one the group does not count. "" when it is one
// of the roles (or the group has none).
func CheckRole(p *corev1.Pod, id gang.GroupID) string {
	roles := id.RoleList()
	if roles == nil {
		return ""
	}
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = r.Name
	}
	role := RoleOf(p)
	switch {
	case role == "":
		return fmt.Sprintf("group %s has roles (%s) but the pod has none: label it %s with one of %s", id.Key, id.Roles, RoleKey, strings.Join(names, ", "))
	case !slices.Contains(names, role):
		return fmt.Sprintf("its role %q is not one of group %s's roles (%s)", role, id.Key, id.Roles)
	}
	return ""
}
