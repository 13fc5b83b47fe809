package groups

import (
	"context"
	"errors"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

func withRoles(id gang.GroupID, roles string) gang.GroupID {
	id.Roles = roles
	return id
}

// gangJobSet is a JobSet annotated to be one gang; replicated jobs are
// name, replicas, parallelism triples.
func gangJobSet(name, gangValue string, rjs ...any) *unstructured.Unstructured {
	var list []any
	for i := 0; i+2 < len(rjs); i += 3 {
		list = append(list, map[string]any{"name": rjs[i], "replicas": int64(rjs[i+1].(int)),
			"template": map[string]any{"spec": map[string]any{"parallelism": int64(rjs[i+2].(int))}}})
	}
	js := unstructuredObj("jobset.x-k8s.io/v1alpha2", "JobSet", name, map[string]any{"replicatedJobs": list})
	js.SetAnnotations(map[string]string{GangKey: gangValue})
	return js
}

// Multi-role groups resolve with their roles, from fluence's labels and
// from a JobSet asked to be one gang; a pod outside the roles, or a value
// that does not read, is an error naming the object.
func TestResolveRoles(t *testing.T) {
	var (
		mpi    = podLabels(k8sadapter.PodGroupKey, "mpi")
		sizes  = func(v string) podOpt { return podAnnotations(k8sadapter.RoleSizesKey, v) }
		role   = func(r string) podOpt { return podLabels(k8sadapter.RoleKey, r) }
		inJob  = func(n string) podOpt { return podOwner("batch/v1", "Job", n) }
		rj     = func(r string) podOpt { return podLabels(JobSetReplicatedJobLabel, r) }
		jobsOf = func(js string, names ...string) []*batchv1.Job {
			var out []*batchv1.Job
			for _, n := range names {
				out = append(out, testJob(n, 1, jobOwner("jobset.x-k8s.io/v1alpha2", "JobSet", js)))
			}
			return out
		}
	)
	tests := []struct {
		name   string
		pod    *corev1.Pod
		fx     fixture
		want   gang.GroupID
		errHas []string
	}{
		{
			name: "labels: a worker",
			pod:  testPod("w-0", mpi, sizes("launcher=1,workers=8"), role("workers")),
			want: withRoles(want("mpi", 9, gang.SourceLabel), "launcher=1,workers=8"),
		},
		{
			name: "labels: the launcher, size given and agreeing",
			pod:  testPod("l-0", mpi, podLabels(k8sadapter.GroupSizeKey, "9"), sizes("workers=8,launcher=1"), role("launcher")),
			want: withRoles(want("mpi", 9, gang.SourceLabel), "launcher=1,workers=8"),
		},
		{
			name:   "labels: a pod without a role",
			pod:    testPod("x", mpi, sizes("launcher=1,workers=8")),
			errHas: []string{"ns1/x", "group ns1/mpi has roles", k8sadapter.RoleKey},
		},
		{
			name:   "labels: a role not counted",
			pod:    testPod("x", mpi, sizes("launcher=1,workers=8"), role("driver")),
			errHas: []string{"ns1/x", `its role "driver" is not one of group ns1/mpi's roles`},
		},
		{
			name:   "labels: size and roles disagree",
			pod:    testPod("x", mpi, podLabels(k8sadapter.GroupSizeKey, "4"), sizes("launcher=1,workers=8"), role("workers")),
			errHas: []string{"pod ns1/x", "group-size is 4", "adds up to 9 pods"},
		},
		{
			name:   "labels: malformed roles",
			pod:    testPod("x", mpi, sizes("launcher=1;workers=8"), role("workers")),
			errHas: []string{"ns1/x", k8sadapter.RoleSizesKey, `"launcher=1;workers=8"`},
		},
		{
			name: "jobset as one gang: a worker",
			pod:  testPod("js-workers-0-0", inJob("js-workers-0"), rj("workers")),
			fx: fixture{
				jobs: jobsOf("js", "js-workers-0"),
				crs:  []runtime.Object{gangJobSet("js", GangJobSet, "launcher", 1, 1, "workers", 2, 4)},
			},
			want: withRoles(want("js", 9, gang.SourceJobSet), "launcher=1,workers=8"),
		},
		{
			name: "jobset as one gang: the launcher, in the same group",
			pod:  testPod("js-launcher-0-0", inJob("js-launcher-0"), rj("launcher")),
			fx: fixture{
				jobs: jobsOf("js", "js-launcher-0"),
				crs:  []runtime.Object{gangJobSet("js", GangJobSet, "launcher", 1, 1, "workers", 2, 4)},
			},
			want: withRoles(want("js", 9, gang.SourceJobSet), "launcher=1,workers=8"),
		},
		{
			name: "jobset without the annotation: a group per replicated job",
			pod:  testPod("js-workers-0-0", inJob("js-workers-0"), rj("workers")),
			fx: fixture{
				jobs: jobsOf("js", "js-workers-0"),
				crs:  []runtime.Object{testJobSet("js", "launcher", 1, "workers", 2)},
			},
			want: want("js-workers", 2, gang.SourceJobSet),
		},
		{
			name: "jobset annotated with another value",
			pod:  testPod("js-workers-0-0", inJob("js-workers-0"), rj("workers")),
			fx: fixture{
				jobs: jobsOf("js", "js-workers-0"),
				crs:  []runtime.Object{gangJobSet("js", "all", "workers", 2, 4)},
			},
			errHas: []string{"JobSet ns1/js", GangKey, `"all" is not "jobset"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := tc.fx.resolver(t)
			got, err := r.Resolve(context.Background(), tc.pod)
			if tc.errHas == nil {
				if err != nil || got != tc.want {
					t.Fatalf("Resolve = %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			var re *ResolveError
			if !errors.As(err, &re) || re.Retryable {
				t.Fatalf("Resolve = %+v, %v; want a lasting *ResolveError", got, err)
			}
			for _, s := range tc.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err.Error(), s)
				}
			}
		})
	}
}
