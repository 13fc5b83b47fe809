package k8sadapter

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseGroup(t *testing.T) {
	tests := []struct {
		name  string
		obj   metav1.Object
		want  Group
		found bool
	}{
		{"none", makePod("p").obj(), Group{}, false},
		{"pod-group + group-size labels", makePod("p").label(PodGroupKey, "lmp").label(GroupSizeKey, "4").obj(),
			Group{Name: "lmp", Size: 4, Source: SourcePodGroup}, true},
		{"pod-group + group-size annotations", makePod("p").annotate(PodGroupKey, "lmp").annotate(GroupSizeKey, "4").obj(),
			Group{Name: "lmp", Size: 4, Source: SourcePodGroup}, true},
		{"label name, annotation size", makePod("p").label(PodGroupKey, "lmp").annotate(GroupSizeKey, "3").obj(),
			Group{Name: "lmp", Size: 3, Source: SourcePodGroup}, true},
		{"label wins over annotation", makePod("p").label(PodGroupKey, "a").annotate(PodGroupKey, "b").label(GroupSizeKey, "2").obj(),
			Group{Name: "a", Size: 2, Source: SourcePodGroup}, true},
		{"pod-group without size", makePod("p").label(PodGroupKey, "lmp").obj(),
			Group{Name: "lmp", Source: SourcePodGroup}, true},
		{"older group spelling", makePod("p").label(GroupKey, "old").label(GroupSizeKey, "8").obj(),
			Group{Name: "old", Size: 8, Source: SourceGroup}, true},
		{"pod-group wins over group", makePod("p").label(GroupKey, "old").label(PodGroupKey, "new").label(GroupSizeKey, "8").obj(),
			Group{Name: "new", Size: 8, Source: SourcePodGroup}, true},
		{"scheduling pod-group + fluence.group-size", makePod("p").label(SchedulingGroupKey, "mpi").label(LegacySizeKey, "5").obj(),
			Group{Name: "mpi", Size: 5, Source: SourceSchedulingSize}, true},
		{"fluence spelling wins over scheduling", makePod("p").label(SchedulingGroupKey, "mpi").label(GroupKey, "g").obj(),
			Group{Name: "g", Source: SourceGroup}, true},
		{"scheduling pod-group alone: PodGroup minMember", makePod("p").label(SchedulingGroupKey, "mpi").obj(),
			Group{Name: "mpi", Source: SourcePodGroupObject}, true},
		{"group-size alone names no group", makePod("p").label(GroupSizeKey, "3").obj(), Group{}, false},
		{"kueue plain-pod group", makePod("p").label(KueueGroupKey, "solver-7").annotate(KueueCountKey, "4").label("kueue.x-k8s.io/queue-name", "user-queue").obj(),
			Group{Name: "solver-7", Size: 4, Source: SourceKueue}, true},
		{"fluence spelling wins over kueue", makePod("p").label(KueueGroupKey, "k").annotate(KueueCountKey, "4").label(PodGroupKey, "f").label(GroupSizeKey, "2").obj(),
			Group{Name: "f", Size: 2, Source: SourcePodGroup}, true},
		{"kueue count alone names no group", makePod("p").annotate(KueueCountKey, "4").obj(), Group{}, false},
		{"on a job", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Labels: map[string]string{PodGroupKey: "j", GroupSizeKey: "100000"}}},
			Group{Name: "j", Size: 100000, Source: SourcePodGroup}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found, err := ParseGroup(tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || found != tt.found {
				t.Errorf("got %+v, %v; want %+v, %v", got, found, tt.want, tt.found)
			}
		})
	}
}

func TestParseGroupErrors(t *testing.T) {
	tests := []struct {
		name string
		obj  metav1.Object
		want string
	}{
		{"abc", makePod("lmp-0").label(PodGroupKey, "lmp").label(GroupSizeKey, "abc").obj(),
			`pod default/lmp-0: label fluence.flux-framework.org/group-size: "abc" is not a positive integer`},
		{"zero", makePod("lmp-0").label(PodGroupKey, "lmp").label(GroupSizeKey, "0").obj(),
			`pod default/lmp-0: label fluence.flux-framework.org/group-size: "0" is not a positive integer`},
		{"negative", makePod("lmp-0").label(PodGroupKey, "lmp").annotate(GroupSizeKey, "-1").obj(),
			`pod default/lmp-0: annotation fluence.flux-framework.org/group-size: "-1" is not a positive integer`},
		{"fraction", makePod("lmp-0").label(GroupKey, "lmp").label(GroupSizeKey, "1.5").obj(),
			`pod default/lmp-0: label fluence.flux-framework.org/group-size: "1.5" is not a positive integer`},
		{"empty", makePod("lmp-0").label(PodGroupKey, "lmp").label(GroupSizeKey, "").obj(),
			`pod default/lmp-0: label fluence.flux-framework.org/group-size: "" is not a positive integer`},
		{"plus sign", makePod("lmp-0").label(PodGroupKey, "lmp").label(GroupSizeKey, "+3").obj(),
			`"+3" is not a positive integer`},
		{"too large", makePod("lmp-0").label(PodGroupKey, "lmp").label(GroupSizeKey, "100001").obj(),
			`pod default/lmp-0: label fluence.flux-framework.org/group-size: "100001" exceeds the maximum group size 100000`},
		{"huge", makePod("lmp-0").label(PodGroupKey, "lmp").label(GroupSizeKey, "99999999999999999999999").obj(),
			`exceeds the maximum group size`},
		{"legacy size malformed", makePod("mpi-0").label(SchedulingGroupKey, "mpi").annotate(LegacySizeKey, "x").obj(),
			`pod default/mpi-0: annotation fluence.group-size: "x" is not a positive integer`},
		{"bad group name", makePod("p").annotate(PodGroupKey, "not a label!").obj(),
			`pod default/p: annotation fluence.flux-framework.org/pod-group: "not a label!" is not a valid group name`},
		{"empty group name", makePod("p").label(PodGroupKey, "").obj(),
			`pod default/p: label fluence.flux-framework.org/pod-group: "" is not a valid group name: must not be empty`},
		{"kueue without its count", makePod("s-0").label(KueueGroupKey, "solver").obj(),
			`pod default/s-0: label kueue.x-k8s.io/pod-group-name names a Kueue pod group without the annotation kueue.x-k8s.io/pod-group-total-count`},
		{"kueue count malformed", makePod("s-0").label(KueueGroupKey, "solver").annotate(KueueCountKey, "four").obj(),
			`pod default/s-0: annotation kueue.x-k8s.io/pod-group-total-count: "four" is not a positive integer`},
		{"statefulset", &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", Labels: map[string]string{PodGroupKey: "s", GroupSizeKey: "0"}}},
			`statefulset ns/s: label fluence.flux-framework.org/group-size: "0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, found, err := ParseGroup(tt.obj)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			if !found {
				t.Error("found = false for a malformed group")
			}
		})
	}
}

func TestOwnerGroupSize(t *testing.T) {
	i32 := func(n int32) *int32 { return &n }
	jobs := []struct {
		p    *int32
		want int32
	}{{nil, 1}, {i32(0), 1}, {i32(1), 1}, {i32(12), 12}}
	for _, tt := range jobs {
		j := &batchv1.Job{Spec: batchv1.JobSpec{Parallelism: tt.p}}
		if got := JobGroupSize(j); got != tt.want {
			t.Errorf("JobGroupSize(parallelism %v) = %d, want %d", tt.p, got, tt.want)
		}
		s := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: tt.p, PodManagementPolicy: appsv1.ParallelPodManagement}}
		if got := StatefulSetGroupSize(s); got != tt.want {
			t.Errorf("StatefulSetGroupSize(replicas %v, Parallel) = %d, want %d", tt.p, got, tt.want)
		}
		// OrderedReady (the default, also when empty) creates one pod at
		// a time: a gang would never form, so each pod is alone.
		for _, policy := range []appsv1.PodManagementPolicyType{appsv1.OrderedReadyPodManagement, ""} {
			s.Spec.PodManagementPolicy = policy
			if got := StatefulSetGroupSize(s); got != 1 {
				t.Errorf("StatefulSetGroupSize(replicas %v, policy %q) = %d, want 1", tt.p, policy, got)
			}
		}
	}
	// Completions: equal to parallelism (an Indexed Job, a MiniCluster) is
	// a gang of that size; fewer caps it (the controller never runs more);
	// more means independent tasks in waves, each pod alone.
	for _, tt := range []struct {
		p, c *int32
		want int32
	}{
		{i32(4), i32(4), 4},
		{i32(4), nil, 4},
		{i32(4), i32(2), 2},
		{i32(4), i32(10), 1},
		{i32(4), i32(0), 4},
		{nil, i32(3), 1},
	} {
		j := &batchv1.Job{Spec: batchv1.JobSpec{Parallelism: tt.p, Completions: tt.c}}
		if got := JobGroupSize(j); got != tt.want {
			t.Errorf("JobGroupSize(parallelism %v, completions %v) = %d, want %d", ptrStr(tt.p), ptrStr(tt.c), got, tt.want)
		}
	}
}

func TestDurationOf(t *testing.T) {
	tests := []struct {
		name    string
		pod     *podB
		want    int64
		wantErr string
	}{
		{"none", makePod("p"), 0, ""},
		{"deadline", makePod("p").deadline(90), 90, ""},
		{"go duration", makePod("p").annotate(DurationKey, "10m"), 600, ""},
		{"go duration rounds up", makePod("p").annotate(DurationKey, "1500ms"), 2, ""},
		{"integer seconds", makePod("p").annotate(DurationKey, "45"), 45, ""},
		{"annotation wins over deadline", makePod("p").annotate(DurationKey, "1h").deadline(5), 3600, ""},
		{"zero is unlimited", makePod("p").annotate(DurationKey, "0"), 0, ""},
		{"malformed", makePod("p").annotate(DurationKey, "ten minutes"), 0,
			`pod default/p: annotation fluence.flux-framework.org/duration: "ten minutes" is neither a duration`},
		{"negative seconds", makePod("p").annotate(DurationKey, "-5"), 0, `"-5" is negative`},
		{"negative duration", makePod("p").annotate(DurationKey, "-5m"), 0, `"-5m" is negative`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DurationOf(tt.pod.obj())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func ptrStr(p *int32) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}
