package gang

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A multi-role group is one gang whose pods play different parts (a
// launcher and its workers; prefill and decode servers), each role with a
// least count of its own. The group's size is the sum of those counts, and
// it is placed whole or not at all: a request is built only once every role
// has its count of pods, from exactly that many pods of each role, so ten
// workers never stand in for a missing launcher. Each pod keeps its own
// requests and node filter in the request (groupRequest builds one slot
// per pod), so a launcher asks for less than a worker. A role's pods
// beyond its count join once the group is underway, as any elastic pods
// do, and a pod replacing a lost member takes only a vacant slot of its
// own role.

// Role is one role of a multi-role group: its name (the pod's role, as
// Pod.Role) and the least number of its pods that start with the rest.
type Role struct {
	Name string
	Min  int32
}

// RoleSizes spells roles as GroupID.Roles: name=count joined by commas,
// sorted by name, so that two reads of one definition compare equal
// whatever order they were declared in. Callers have checked the names
// (no comma or equals sign) and the counts (positive).
func RoleSizes(roles []Role) string {
	sorted := slices.SortedFunc(slices.Values(roles), func(a, b Role) int { return cmp.Compare(a.Name, b.Name) })
	parts := make([]string, len(sorted))
	for i, r := range sorted {
		parts[i] = r.Name + "=" + strconv.FormatInt(int64(r.Min), 10)
	}
	return strings.Join(parts, ",")
}

// RoleList reads GroupID.Roles back; nil for a group of one role.
func (id GroupID) RoleList() []Role {
	if id.Roles == "" {
		return nil
	}
	var out []Role
	for part := range strings.SplitSeq(id.Roles, ",") {
		name, count, _ := strings.Cut(part, "=")
		// RoleSizes wrote it: a count that does not read is a GroupID
		// built by hand, and counts as no pod, which the sum check in
		// rolesAgree reports.
		n, err := strconv.ParseInt(count, 10, 32)
		if err != nil {
			n = 0
		}
		out = append(out, Role{Name: name, Min: int32(n)})
	}
	return out
}

// rolesAgree says what is wrong with a group's roles, or "": their counts
// must be positive and add up to the group's size.
func (id GroupID) rolesAgree() string {
	roles := id.RoleList()
	if roles == nil {
		return ""
	}
	var sum int64
	for _, r := range roles {
		if r.Min < 1 {
			return fmt.Sprintf("group %s: role %q has no positive count in %q", id.Key, r.Name, id.Roles)
		}
		sum += int64(r.Min)
	}
	if sum != int64(id.Size) {
		return fmt.Sprintf("group %s: its roles %s add up to %d pods, its size is %d", id.Key, id.Roles, sum, id.Size)
	}
	return ""
}

// pickRoles chooses the pods a group that has not started asks with: the
// first need of them, or, for a multi-role group, the oldest of each role
// up to what the role still needs (its count, less its slots kept vacant
// on their nodes or asked for). missing counts the pods still to come
// (per role, summed); the pods picked keep their order.
func pickRoles(g *group, free []*Pod, need int) (picked []*Pod, missing int) {
	roles := g.id.RoleList()
	if roles == nil {
		n := min(need, len(free))
		return free[:n], need - n
	}
	left := map[string]int32{}
	for _, r := range roles {
		left[r.Name] = r.Min
	}
	for _, a := range g.allocs {
		for _, s := range a.slots {
			if !a.running || !s.done {
				left[s.role]--
			}
		}
	}
	for _, p := range free {
		if left[p.Role] > 0 {
			left[p.Role]--
			picked = append(picked, p)
		}
	}
	for _, r := range roles {
		missing += int(max(left[r.Name], 0))
	}
	return picked, missing
}

// roleCounts says, for a multi-role group, how many of each role's pods
// exist (counted by count) against its count: "launcher 1 of 1, workers 6
// of 8". "" for a group of one role.
func roleCounts(id GroupID, count func(role string) int) string {
	roles := id.RoleList()
	if roles == nil {
		return ""
	}
	parts := make([]string, len(roles))
	for i, r := range roles {
		parts[i] = fmt.Sprintf("%s %d of %d", r.Name, count(r.Name), r.Min)
	}
	return strings.Join(parts, ", ")
}

// roleShort reports whether some role of a multi-role group has fewer
// pods than its count.
func roleShort(id GroupID, count func(role string) int) bool {
	for _, r := range id.RoleList() {
		if count(r.Name) < int(r.Min) {
			return true
		}
	}
	return false
}

// podsByRole counts pods by role.
func podsByRole(pods []*Pod) func(role string) int {
	n := map[string]int{}
	for _, p := range pods {
		n[p.Role]++
	}
	return func(role string) int { return n[role] }
}

// roleStatus counts a multi-role group's pods and slots by role; nil for
// a group of one role.
func roleStatus(g *group) []RoleStatus {
	roles := g.id.RoleList()
	if roles == nil {
		return nil
	}
	out := make([]RoleStatus, len(roles))
	at := map[string]int{}
	for i, r := range roles {
		out[i] = RoleStatus{Name: r.Name, Min: r.Min}
		at[r.Name] = i
	}
	for _, p := range g.members {
		if i, ok := at[p.Role]; ok {
			out[i].Pods++
		}
	}
	for s := range g.heldSlots() {
		if i, ok := at[s.role]; ok && s.pod != "" {
			out[i].Placed++
		}
	}
	return out
}

// rolesDetail says, for explain, what a multi-role group's roles ask and
// have ("launcher 1 (1 exists, 0 placed); workers 8 (6 exist, 0
// placed)"); "" for a group of one role.
func rolesDetail(roles []RoleStatus) string {
	if len(roles) == 0 {
		return ""
	}
	parts := make([]string, len(roles))
	for i, r := range roles {
		exist := "exist"
		if r.Pods == 1 {
			exist = "exists"
		}
		parts[i] = fmt.Sprintf("%s %d (%d %s, %d placed)", r.Name, r.Min, r.Pods, exist, r.Placed)
	}
	return "It is one gang of several roles, each with the least count of its pods that start together: " + strings.Join(parts, "; ") + ". No role stands in for another."
}

// rolesMissing reports whether some role has fewer pods than its count.
func rolesMissing(roles []RoleStatus) bool {
	return slices.ContainsFunc(roles, func(r RoleStatus) bool { return r.Pods < int(r.Min) })
}

// hasRole reports whether the group has a role of that name: a
// CompositePodGroup's children are its roles, and a child that changes
// changes the group.
func (g *group) hasRole(name string) bool {
	return slices.ContainsFunc(g.id.RoleList(), func(r Role) bool { return r.Name == name })
}
