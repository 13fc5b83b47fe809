package k8sadapter

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fluence-sched/fluence/pkg/gang"
)

func TestParseRoleSizes(t *testing.T) {
	tests := []struct {
		in   string
		want string // as gang.RoleSizes spells the roles
		err  string // a part of the error when one is expected
	}{
		{in: "launcher=1,workers=8", want: "launcher=1,workers=8"},
		{in: "workers=8,launcher=1", want: "launcher=1,workers=8"},
		{in: " prefill = 2 , decode=6 ", want: "decode=6,prefill=2"},
		{in: "solo=1", want: "solo=1"},
		{in: "", err: "names no role"},
		{in: "  ", err: "names no role"},
		{in: "launcher", err: `entry "launcher" is not name=count`},
		{in: "launcher=1,", err: `entry "" is not name=count`},
		{in: "=3", err: `entry "=3" is not name=count`},
		{in: "launcher=0", err: `role launcher: count "0" is not a positive integer`},
		{in: "launcher=-1", err: `count "-1" is not a positive integer`},
		{in: "launcher=one", err: `count "one" is not a positive integer`},
		{in: "launcher=1.5", err: `count "1.5" is not a positive integer`},
		{in: "launcher=1,launcher=2", err: `role "launcher" is named twice`},
		{in: "not a role=1", err: `role "not a role" is not a valid label value`},
		{in: "a=60000,b=50000", err: "add up to more than the maximum group size 100000"},
		{in: "a=100001", err: "exceeds the maximum group size"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			roles, err := ParseRoleSizes(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseRoleSizes(%q) = %v, %v; want an error containing %q", tt.in, roles, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRoleSizes(%q): %v", tt.in, err)
			}
			if got := gang.RoleSizes(roles); got != tt.want {
				t.Errorf("ParseRoleSizes(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseGroupRoles(t *testing.T) {
	tests := []struct {
		name string
		obj  metav1.Object
		want Group
		err  string
	}{
		{"size from the roles", makePod("l").label(PodGroupKey, "mpi").annotate(RoleSizesKey, "launcher=1,workers=8").obj(),
			Group{Name: "mpi", Size: 9, Source: SourcePodGroup, Roles: "launcher=1,workers=8"}, ""},
		{"size agrees", makePod("l").label(PodGroupKey, "mpi").label(GroupSizeKey, "9").annotate(RoleSizesKey, "workers=8,launcher=1").obj(),
			Group{Name: "mpi", Size: 9, Source: SourcePodGroup, Roles: "launcher=1,workers=8"}, ""},
		{"older group spelling", makePod("l").label(GroupKey, "mpi").annotate(RoleSizesKey, "a=2,b=2").obj(),
			Group{Name: "mpi", Size: 4, Source: SourceGroup, Roles: "a=2,b=2"}, ""},
		{"on a job", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j", Labels: map[string]string{PodGroupKey: "j"}, Annotations: map[string]string{RoleSizesKey: "head=1,workers=3"}}},
			Group{Name: "j", Size: 4, Source: SourcePodGroup, Roles: "head=1,workers=3"}, ""},
		{"other spellings ignore the roles", makePod("p").label(KueueGroupKey, "k").annotate(KueueCountKey, "4").annotate(RoleSizesKey, "a=1").obj(),
			Group{Name: "k", Size: 4, Source: SourceKueue}, ""},
		{"size disagrees", makePod("l-0").label(PodGroupKey, "mpi").label(GroupSizeKey, "10").annotate(RoleSizesKey, "launcher=1,workers=8").obj(), Group{},
			`pod default/l-0: label fluence.flux-framework.org/group-size is 10 but fluence.flux-framework.org/role-sizes "launcher=1,workers=8" adds up to 9 pods`},
		{"malformed", makePod("l-0").label(PodGroupKey, "mpi").annotate(RoleSizesKey, "launcher:1").obj(), Group{},
			`pod default/l-0: annotation fluence.flux-framework.org/role-sizes: "launcher:1" entry "launcher:1" is not name=count`},
		{"as a label", makePod("l-0").label(PodGroupKey, "mpi").label(RoleSizesKey, "workers").obj(), Group{},
			`pod default/l-0: label fluence.flux-framework.org/role-sizes: "workers"`},
		{"on a job, malformed", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j", Labels: map[string]string{PodGroupKey: "j"}, Annotations: map[string]string{RoleSizesKey: "a=0"}}}, Group{},
			`job ns/j: annotation fluence.flux-framework.org/role-sizes: "a=0" role a: count "0" is not a positive integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found, err := ParseGroup(tt.obj)
			if !found {
				t.Fatal("found = false")
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseGroup = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestRoleOf(t *testing.T) {
	child := "workers"
	tests := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"none", makePod("p").obj(), ""},
		{"role label", makePod("p").label(RoleKey, "launcher").obj(), "launcher"},
		{"jobset replicated job", makePod("p").label(JobSetReplicatedJobKey, "driver").obj(), "driver"},
		{"role label wins over the replicated job", makePod("p").label(RoleKey, "launcher").label(JobSetReplicatedJobKey, "driver").obj(), "launcher"},
		{"the child PodGroup wins", func() *corev1.Pod {
			p := makePod("p").label(RoleKey, "launcher").obj()
			p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &child}
			return p
		}(), "workers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RoleOf(tt.pod); got != tt.want {
				t.Errorf("RoleOf = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckRole(t *testing.T) {
	id := gang.NewGroupID("ns", "mpi", 9, gang.SourceLabel)
	id.Roles = "launcher=1,workers=8"
	if why := CheckRole(makePod("p").label(RoleKey, "workers").obj(), id); why != "" {
		t.Errorf("a worker: %s", why)
	}
	if why := CheckRole(makePod("p").obj(), id); !strings.Contains(why, "the pod has none: label it fluence.flux-framework.org/role with one of launcher, workers") {
		t.Errorf("no role: %q", why)
	}
	if why := CheckRole(makePod("p").label(RoleKey, "driver").obj(), id); !strings.Contains(why, `its role "driver" is not one of group ns/mpi's roles (launcher=1,workers=8)`) {
		t.Errorf("unknown role: %q", why)
	}
	if why := CheckRole(makePod("p").obj(), gang.NewGroupID("ns", "g", 2, gang.SourceLabel)); why != "" {
		t.Errorf("a group without roles: %s", why)
	}
}
