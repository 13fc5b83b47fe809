package groups

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

// JobSetReplicatedJobLabel is the label JobSet puts on its Jobs and pods
// naming the replicated job they belong to.
const JobSetReplicatedJobLabel = k8sadapter.JobSetReplicatedJobKey

// Owner kinds recognised by the resolver (API group, kind).
var (
	gkJob         = schema.GroupKind{Group: "batch", Kind: "Job"}
	gkStatefulSet = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	gkJobSet      = schema.GroupKind{Group: "jobset.x-k8s.io", Kind: "JobSet"}
	gkMPIJob      = schema.GroupKind{Group: "kubeflow.org", Kind: "MPIJob"}
	gkMiniCluster = schema.GroupKind{Group: "flux-framework.org", Kind: "MiniCluster"}
)

// ResolveError is why a pod's group could not be resolved. Retryable is
// true when the answer may change by itself (an owner or a PodGroup not
// yet in an informer cache or not created yet, a resource the API server
// does not serve yet); it is false for a malformed label or inconsistent
// input, and Reason then names the object and what is wrong with it.
type ResolveError struct {
	Pod       string // namespace/name
	Reason    string
	Retryable bool
}

func (e *ResolveError) Error() string {
	return "pod " + e.Pod + ": " + e.Reason
}

// Sources are what a Resolver reads, all from informer caches. Any of them
// may be nil: with no Jobs (StatefulSets) lister a pod owned by a Job
// (StatefulSet) is a lone pod; with no Custom resources the PodGroup,
// JobSet and MPIJob lookups are skipped.
type Sources struct {
	Jobs         batchlisters.JobLister
	StatefulSets appslisters.StatefulSetLister
	Custom       *CustomResources
	// ExtraGPUResources are the resource names counted as GPUs besides
	// nvidia.com/gpu, as the scheduler counts them on nodes and pods: a
	// PodGroup's spec.minResources counts them as GPUs too.
	ExtraGPUResources []string
}

// Resolver finds the group of a pod. It is safe for concurrent use.
type Resolver struct {
	jobs         batchlisters.JobLister
	statefulSets appslisters.StatefulSetLister
	custom       *CustomResources
	// gpus names the resources counted as GPUs.
	gpus k8sadapter.GraphOptions
}

// NewResolver returns a Resolver reading from s.
func NewResolver(s Sources) *Resolver {
	return &Resolver{jobs: s.Jobs, statefulSets: s.StatefulSets, custom: s.Custom,
		gpus: k8sadapter.GraphOptions{ExtraGPUResources: slices.Clone(s.ExtraGPUResources)}}
}

// Resolve returns the group of pod. The rules, in order:
//
//  0. The Kubernetes PodGroup the pod names in spec.schedulingGroup: a
//     gang of its spec.schedulingPolicy.gang.minCount, or a lone pod for a
//     basic policy.
//  1. Group labels or annotations on the pod (k8sadapter.ParseGroup). A
//     declared size is used as is; scheduling.x-k8s.io/pod-group alone
//     takes the size from the PodGroup's spec.minMember; a Fluence group
//     name without a size takes the size of the owning workload (rule 2).
//  2. The pod's controller: a Job (its group labels, else the JobSet
//     replicated job, MPIJob or MiniCluster owning it, else the Job's
//     parallelism), a StatefulSet (its group labels, else its replicas) or
//     an MPIJob (workers + launcher).
//  3. Anything else is a lone pod of size 1.
//
// Errors are *ResolveError.
func (r *Resolver) Resolve(_ context.Context, pod *corev1.Pod) (gang.GroupID, error) {
	if pod == nil {
		return gang.GroupID{}, &ResolveError{Pod: "<nil>", Reason: "no pod"}
	}
	res := &resolution{r: r, pod: pod, ns: pod.Namespace, podKey: pod.Namespace + "/" + pod.Name}
	id, err := res.resolve()
	// One bound for every source: a workload's size (a Job's parallelism,
	// a StatefulSet's replicas) is not bounded by the API server, and the
	// core sets aside memory for each pod a group expects.
	if err == nil && id.Size > k8sadapter.MaxGroupSize {
		return gang.GroupID{}, res.fail(false, "group %s: its size %d (%s) exceeds the maximum group size %d", id.Key, id.Size, id.Source, k8sadapter.MaxGroupSize)
	}
	if err == nil && id.TopologyKey == "" {
		err = res.topology(&id)
	}
	if why := k8sadapter.CheckRole(pod, id); err == nil && why != "" {
		// Counted under no role, the pod would wait for nothing, and its
		// group for a role it never fills.
		err = res.fail(false, "%s", why)
	}
	return id, err
}

// topology reads what the pod, else its workload, asks of the group's
// placement (k8sadapter.TopologyOf). A Kubernetes PodGroup's own topology
// constraint comes first: the caller reads these only without one.
func (s *resolution) topology(id *gang.GroupID) error {
	t, err := k8sadapter.TopologyOf(s.pod)
	if err != nil {
		return s.fail(false, "%v", err)
	}
	if t.Empty() && s.workload != nil {
		if t, err = k8sadapter.TopologyOf(s.workload); err != nil {
			return s.fail(false, "owner %s/%s: %v", s.ns, s.workload.GetName(), err)
		}
	}
	id.TopologyKey, id.TopologyPreferred = t.Required, t.Preferred
	return nil
}

// resolve applies the rules in order.
func (res *resolution) resolve() (gang.GroupID, error) {
	r, pod := res.r, res.pod

	if name, ok := nativeGroupName(pod); ok {
		if id, err := res.nativePodGroup(name); err != errJobDefault {
			return id, err
		}
		// The Job controller's default PodGroup (basic): the pod is
		// grouped as if it named none.
	}
	g, found, err := k8sadapter.ParseGroup(pod)
	if err != nil {
		return gang.GroupID{}, res.fail(false, "%s", strings.TrimPrefix(err.Error(), "pod "+res.podKey+": "))
	}
	if !found {
		if name, ok := volcanoGroupName(pod); ok && r.custom != nil {
			return res.volcanoPodGroup(name)
		}
		return res.owner()
	}
	if g.Size > 0 {
		id := res.id(g.Name, g.Size, gang.SourceLabel)
		id.Roles = g.Roles
		return id, nil
	}
	if g.Source == k8sadapter.SourcePodGroupObject && r.custom != nil {
		return res.podGroup(g.Name)
	}
	// A name without a size (or a PodGroup the resolver cannot read): the
	// size comes from the owning workload.
	w, err := res.owner()
	if err != nil {
		return gang.GroupID{}, err
	}
	if w.Source == gang.SourcePod {
		key := k8sadapter.PodGroupKey
		switch g.Source {
		case k8sadapter.SourceGroup:
			key = k8sadapter.GroupKey
		case k8sadapter.SourcePodGroupObject:
			key = k8sadapter.SchedulingGroupKey
		}
		where := "label"
		if _, ok := pod.Labels[key]; !ok {
			where = "annotation"
		}
		why := "gives no size"
		if g.Source == k8sadapter.SourcePodGroupObject {
			why = "the scheduler has no client to read PodGroups"
		}
		return gang.GroupID{}, res.fail(false, "%s %s names group %q but %s and the pod has no owning workload%s",
			where, key, g.Name, why, res.ownerNote())
	}
	return res.id(g.Name, w.Size, gang.SourceLabel), nil
}

// resolution is the state of one Resolve call.
type resolution struct {
	r      *Resolver
	pod    *corev1.Pod
	ns     string
	podKey string
	// workload is the pod's controller, once read: its annotations may
	// ask for a topology.
	workload metav1.Object
}

func (s *resolution) id(name string, size int32, source string) gang.GroupID {
	return gang.NewGroupID(s.ns, name, size, source)
}

func (s *resolution) fail(retryable bool, format string, args ...any) *ResolveError {
	return &ResolveError{Pod: s.podKey, Reason: fmt.Sprintf(format, args...), Retryable: retryable}
}

func (s *resolution) lone() gang.GroupID {
	return s.id(s.pod.Name, 1, gang.SourcePod)
}

// ownerNote explains, for an error message, why the pod's owner (if any)
// does not count as a workload.
func (s *resolution) ownerNote() string {
	ref := metav1.GetControllerOf(s.pod)
	if ref == nil {
		return ""
	}
	return fmt.Sprintf(" (its owner %s %s/%s does not imply a group size)", ref.Kind, s.ns, ref.Name)
}

// owner applies rule 2: the group implied by the pod's controller.
func (s *resolution) owner() (gang.GroupID, error) {
	ref := metav1.GetControllerOf(s.pod)
	if ref == nil {
		return s.lone(), nil
	}
	switch groupKind(ref) {
	case gkJob:
		if s.r.jobs == nil {
			return s.lone(), nil
		}
		return s.job(ref)
	case gkStatefulSet:
		if s.r.statefulSets == nil {
			return s.lone(), nil
		}
		return s.statefulSet(ref)
	case gkMPIJob:
		if s.r.custom == nil {
			return s.lone(), nil
		}
		return s.mpiJob(ref)
	}
	return s.lone(), nil
}

func groupKind(ref *metav1.OwnerReference) schema.GroupKind {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return schema.GroupKind{Kind: ref.Kind}
	}
	return schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
}

// uidMismatch reports whether obj is not the object ref points at (the
// owner was deleted and recreated under the same name).
func uidMismatch(ref *metav1.OwnerReference, obj metav1.Object) bool {
	return ref.UID != "" && obj.GetUID() != "" && ref.UID != obj.GetUID()
}

// workloadLabels applies group labels found on a workload object. found is
// false when the object carries none. structural computes the size the
// workload implies without labels; it is only called for a group name
// without a size.
func (s *resolution) workloadLabels(obj metav1.Object, kind string, structural func() (gang.GroupID, error)) (gang.GroupID, bool, error) {
	g, found, err := k8sadapter.ParseGroup(obj)
	if err != nil {
		msg := err.Error()
		if rest, ok := strings.CutPrefix(msg, "object "); ok {
			msg = strings.ToLower(kind) + " " + rest
		}
		return gang.GroupID{}, true, s.fail(false, "owner %s", msg)
	}
	if !found {
		return gang.GroupID{}, false, nil
	}
	if g.Size > 0 {
		id := s.id(g.Name, g.Size, gang.SourceWorkloadLabel)
		id.Roles = g.Roles
		return id, true, nil
	}
	if g.Source == k8sadapter.SourcePodGroupObject && s.r.custom != nil {
		id, err := s.podGroup(g.Name)
		return id, true, err
	}
	w, err := structural()
	if err != nil {
		return gang.GroupID{}, true, err
	}
	return s.id(g.Name, w.Size, gang.SourceWorkloadLabel), true, nil
}

func (s *resolution) job(ref *metav1.OwnerReference) (gang.GroupID, error) {
	job, err := cachedOwner(s, "job", ref, s.r.jobs.Jobs(s.ns).Get)
	if err != nil {
		return gang.GroupID{}, err
	}
	structural := func() (gang.GroupID, error) { return s.jobStructural(job) }
	if id, found, err := s.workloadLabels(job, "Job", structural); found || err != nil {
		return id, err
	}
	return structural()
}

// jobStructural is the group a Job implies through its own controller
// (JobSet, MPIJob, MiniCluster) or, failing that, by itself.
func (s *resolution) jobStructural(job *batchv1.Job) (gang.GroupID, error) {
	if ref := metav1.GetControllerOf(job); ref != nil {
		switch groupKind(ref) {
		case gkJobSet:
			if s.r.custom != nil {
				return s.jobSet(job, ref)
			}
		case gkMPIJob:
			if s.r.custom != nil {
				return s.mpiJob(ref) // the launcher
			}
		case gkMiniCluster:
			return s.id(ref.Name, k8sadapter.JobGroupSize(job), gang.SourceMiniCluster), nil
		}
	}
	return s.implied(job.Name, k8sadapter.JobGroupSize(job), gang.SourceJob), nil
}

// implied is the group a workload implies by itself. A workload whose
// pods run independently (a Job in waves, an OrderedReady StatefulSet)
// implies size 1, and then each pod is a group of its own: under one key
// of size 1 they would make an elastic group (its first pod starts it,
// the others join it one by one as they fit, pkg/gang/members.go), whose
// condition, events and topology domain would speak of a gang that is
// none.
func (s *resolution) implied(name string, size int32, source string) gang.GroupID {
	if size <= 1 {
		return s.lone()
	}
	return s.id(name, size, source)
}

func (s *resolution) jobSet(job *batchv1.Job, ref *metav1.OwnerReference) (gang.GroupID, error) {
	js, err := s.getCR(JobSetResource, "JobSet", ref)
	if err != nil {
		return gang.GroupID{}, err
	}
	rjName := s.pod.Labels[JobSetReplicatedJobLabel]
	if rjName == "" {
		rjName = job.Labels[JobSetReplicatedJobLabel]
	}
	if rjName == "" {
		return gang.GroupID{}, s.fail(false, "owner job %s/%s belongs to JobSet %s/%s but neither the pod nor the job has label %s",
			s.ns, job.Name, s.ns, ref.Name, JobSetReplicatedJobLabel)
	}
	structural := func() (gang.GroupID, error) {
		switch whole, err := s.wholeJobSet(js); {
		case err != nil:
			return gang.GroupID{}, err
		case whole:
			return s.jobSetGang(js)
		}
		replicas, err := s.replicatedJobReplicas(js, rjName)
		if err != nil {
			return gang.GroupID{}, err
		}
		size := replicas * int64(k8sadapter.JobGroupSize(job))
		if size > k8sadapter.MaxGroupSize {
			return gang.GroupID{}, s.fail(false, "JobSet %s/%s replicated job %q: %d replicas x parallelism %d exceeds the maximum group size %d",
				s.ns, ref.Name, rjName, replicas, k8sadapter.JobGroupSize(job), k8sadapter.MaxGroupSize)
		}
		return s.id(ref.Name+"-"+rjName, int32(size), gang.SourceJobSet), nil
	}
	if id, found, err := s.workloadLabels(js, "JobSet", structural); found || err != nil {
		return id, err
	}
	return structural()
}

// replicatedJobReplicas reads spec.replicatedJobs[name=rjName].replicas
// (default 1; values below 1 count as 1).
func (s *resolution) replicatedJobReplicas(js *unstructured.Unstructured, rjName string) (int64, error) {
	what := fmt.Sprintf("JobSet %s/%s", s.ns, js.GetName())
	raw, _, _ := unstructured.NestedFieldNoCopy(js.Object, "spec", "replicatedJobs")
	list, ok := raw.([]any)
	if raw != nil && !ok {
		return 0, s.fail(false, "%s: spec.replicatedJobs is not a list", what)
	}
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		if name, _ := m["name"].(string); name != rjName {
			continue
		}
		n, found, err := nestedInt(m, "replicas")
		if err != nil {
			return 0, s.fail(false, "%s: spec.replicatedJobs[%d].replicas %v", what, i, err)
		}
		if !found || n < 1 {
			n = 1
		}
		return n, nil
	}
	return 0, s.fail(false, "%s has no replicated job %q (named by label %s)", what, rjName, JobSetReplicatedJobLabel)
}

func (s *resolution) mpiJob(ref *metav1.OwnerReference) (gang.GroupID, error) {
	mj, err := s.getCR(MPIJobResource, "MPIJob", ref)
	if err != nil {
		return gang.GroupID{}, err
	}
	structural := func() (gang.GroupID, error) {
		what := fmt.Sprintf("MPIJob %s/%s", s.ns, ref.Name)
		var size int64
		for _, role := range []string{"Worker", "Launcher"} {
			spec, found, _ := unstructured.NestedFieldNoCopy(mj.Object, "spec", "mpiReplicaSpecs", role)
			if !found || spec == nil {
				continue // no such role: no pods of it
			}
			m, ok := spec.(map[string]any)
			if !ok {
				return gang.GroupID{}, s.fail(false, "%s: spec.mpiReplicaSpecs.%s is not an object", what, role)
			}
			n, found, err := nestedInt(m, "replicas")
			if err != nil {
				return gang.GroupID{}, s.fail(false, "%s: spec.mpiReplicaSpecs.%s.replicas %v", what, role, err)
			}
			if !found {
				n = 1
			}
			if n < 0 || n > k8sadapter.MaxGroupSize {
				return gang.GroupID{}, s.fail(false, "%s: spec.mpiReplicaSpecs.%s.replicas %d is out of range", what, role, n)
			}
			size += n
		}
		if size > k8sadapter.MaxGroupSize {
			return gang.GroupID{}, s.fail(false, "%s: %d pods exceed the maximum group size %d", what, size, k8sadapter.MaxGroupSize)
		}
		return s.id(ref.Name, int32(size), gang.SourceMPIJob), nil
	}
	if id, found, err := s.workloadLabels(mj, "MPIJob", structural); found || err != nil {
		return id, err
	}
	return structural()
}

// cachedOwner reads the owner ref names from an informer cache. An owner
// not there yet, a failed read, or a cached object of another uid (the
// owner was deleted and recreated under the same name) may pass by
// itself: the errors are retryable.
func cachedOwner[T metav1.Object](s *resolution, kind string, ref *metav1.OwnerReference, get func(name string) (T, error)) (T, error) {
	obj, err := get(ref.Name)
	var zero T
	if apierrors.IsNotFound(err) {
		return zero, s.fail(true, "owner %s %s/%s is not in the informer cache yet", kind, s.ns, ref.Name)
	}
	if err != nil {
		return zero, s.fail(true, "reading owner %s %s/%s: %v", kind, s.ns, ref.Name, err)
	}
	if uidMismatch(ref, obj) {
		return zero, s.fail(true, "owner %s %s/%s in the cache has uid %s, the pod's owner reference names uid %s", kind, s.ns, ref.Name, obj.GetUID(), ref.UID)
	}
	if s.workload == nil {
		s.workload = obj // the pod's own controller is read first
	}
	return obj, nil
}

// getCR reads the custom resource ref names in the pod's namespace.
func (s *resolution) getCR(gvr schema.GroupVersionResource, kind string, ref *metav1.OwnerReference) (*unstructured.Unstructured, error) {
	obj, why := s.r.custom.get(gvr, s.ns, ref.Name)
	if obj == nil {
		return nil, s.fail(true, "%s %s/%s %s", kind, s.ns, ref.Name, why)
	}
	if uidMismatch(ref, obj) {
		return nil, s.fail(true, "%s %s/%s has uid %s, the owner reference names uid %s", kind, s.ns, ref.Name, obj.GetUID(), ref.UID)
	}
	return obj, nil
}

func (s *resolution) statefulSet(ref *metav1.OwnerReference) (gang.GroupID, error) {
	sts, err := cachedOwner(s, "statefulset", ref, s.r.statefulSets.StatefulSets(s.ns).Get)
	if err != nil {
		return gang.GroupID{}, err
	}
	structural := func() (gang.GroupID, error) { return s.statefulSetStructural(sts), nil }
	if id, found, err := s.workloadLabels(sts, "StatefulSet", structural); found || err != nil {
		return id, err
	}
	return structural()
}

func (s *resolution) statefulSetStructural(sts *appsv1.StatefulSet) gang.GroupID {
	return s.implied(sts.Name, k8sadapter.StatefulSetGroupSize(sts), gang.SourceStatefulSet)
}

// podGroup returns the group of the scheduler-plugins PodGroup name in the
// pod's namespace, its size being spec.minMember, with what else of its
// spec fluence acts on (coscheduling.go).
func (s *resolution) podGroup(name string) (gang.GroupID, error) {
	key := s.ns + "/" + name
	pg, why := s.r.custom.get(PodGroupResource, s.ns, name)
	if pg == nil {
		return gang.GroupID{}, s.fail(true, "PodGroup %s %s", key, why)
	}
	n, found, err := nestedInt(pg.Object, "spec", "minMember")
	switch {
	case err != nil:
		return gang.GroupID{}, s.fail(false, "PodGroup %s: spec.minMember %v", key, err)
	case !found:
		return gang.GroupID{}, s.fail(false, "PodGroup %s has no spec.minMember", key)
	case n < 1:
		return gang.GroupID{}, s.fail(false, "PodGroup %s: spec.minMember %d is not a positive integer", key, n)
	case n > k8sadapter.MaxGroupSize:
		return gang.GroupID{}, s.fail(false, "PodGroup %s: spec.minMember %d exceeds the maximum group size %d", key, n, k8sadapter.MaxGroupSize)
	}
	id := s.id(name, int32(n), gang.SourcePodGroup)
	if err := s.podGroupSpec(pg, key, &id); err != nil {
		return gang.GroupID{}, err
	}
	return id, nil
}

// nestedInt reads an integer field of an unstructured object. found is
// false when the field is absent or null; a value that is not an integer is
// an error.
func nestedInt(obj map[string]any, fields ...string) (int64, bool, error) {
	v, found, err := unstructured.NestedFieldNoCopy(obj, fields...)
	if err != nil {
		return 0, false, err
	}
	if !found || v == nil {
		return 0, false, nil
	}
	switch n := v.(type) {
	case int64:
		return n, true, nil
	case int32:
		return int64(n), true, nil
	case int:
		return int64(n), true, nil
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			return int64(n), true, nil
		}
	}
	return 0, true, fmt.Errorf("%v is not an integer", v)
}
