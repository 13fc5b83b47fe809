package groups

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

// GangKey, an annotation on a JobSet, asks for its pods to be placed as
// one gang: with the value GangJobSet, every replicated job is a role of
// one group (each with its replicas x its Jobs' pods), instead of a group
// per replicated job. A JobSet has no gang policy of its own that fluence
// could read instead (JobSet v0.x: its startupPolicy orders replicated
// jobs, it does not gang them).
const (
	GangKey    = "fluence.flux-framework.org/gang"
	GangJobSet = "jobset"
)

// wholeJobSet reports whether the JobSet asks to be one gang; a value
// other than GangJobSet is an error naming the JobSet.
func (s *resolution) wholeJobSet(js *unstructured.Unstructured) (bool, error) {
	v, ok := js.GetAnnotations()[GangKey]
	switch {
	case !ok:
		return false, nil
	case v == GangJobSet:
		return true, nil
	}
	return false, s.fail(false, "JobSet %s/%s: annotation %s: %q is not %q (the one value it takes: the whole JobSet is one gang)",
		s.ns, js.GetName(), GangKey, v, GangJobSet)
}

// jobSetGang is the group of a JobSet placed whole: one role per
// replicated job, its count the replicas times the pods its Job template
// implies (k8sadapter.JobGroupSize of the template's parallelism and
// completions), the group's size their sum.
func (s *resolution) jobSetGang(js *unstructured.Unstructured) (gang.GroupID, error) {
	what := fmt.Sprintf("JobSet %s/%s", s.ns, js.GetName())
	raw, _, _ := unstructured.NestedFieldNoCopy(js.Object, "spec", "replicatedJobs")
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		return gang.GroupID{}, s.fail(false, "%s (annotation %s: %s) has no spec.replicatedJobs", what, GangKey, GangJobSet)
	}
	var roles []gang.Role
	var size int64
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return gang.GroupID{}, s.fail(false, "%s: spec.replicatedJobs[%d] is not an object", what, i)
		}
		name, _ := m["name"].(string)
		if name == "" {
			return gang.GroupID{}, s.fail(false, "%s: spec.replicatedJobs[%d] has no name", what, i)
		}
		replicas, found, err := nestedInt(m, "replicas")
		if err != nil {
			return gang.GroupID{}, s.fail(false, "%s: spec.replicatedJobs[%d].replicas %v", what, i, err)
		}
		if !found || replicas < 1 {
			replicas = 1
		}
		perJob, err := s.templatePods(m, what, i)
		if err != nil {
			return gang.GroupID{}, err
		}
		n := replicas * int64(perJob)
		if size += n; n > k8sadapter.MaxGroupSize || size > k8sadapter.MaxGroupSize {
			return gang.GroupID{}, s.fail(false, "%s: its replicated jobs have more pods than the maximum group size %d", what, k8sadapter.MaxGroupSize)
		}
		roles = append(roles, gang.Role{Name: name, Min: int32(n)})
	}
	id := s.id(js.GetName(), int32(size), gang.SourceJobSet)
	id.Roles = gang.RoleSizes(roles)
	return id, nil
}

// templatePods is the group size a replicated job's Job template implies.
func (s *resolution) templatePods(rj map[string]any, what string, i int) (int32, error) {
	var job batchv1.Job
	for _, f := range []struct {
		name string
		into **int32
	}{{"parallelism", &job.Spec.Parallelism}, {"completions", &job.Spec.Completions}} {
		n, found, err := nestedInt(rj, "template", "spec", f.name)
		if err != nil {
			return 0, s.fail(false, "%s: spec.replicatedJobs[%d].template.spec.%s %v", what, i, f.name, err)
		}
		if found {
			v := int32(min(max(n, 0), k8sadapter.MaxGroupSize+1))
			*f.into = &v
		}
	}
	return k8sadapter.JobGroupSize(&job), nil
}
