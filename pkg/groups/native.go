package groups

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	baseversion "k8s.io/component-base/version"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

// nativePolicy is what fluence reads from a Kubernetes PodGroup
// (scheduling.k8s.io) of any version.
type nativePolicy struct {
	sharedSpec
	// Basic: every pod of the group is scheduled on its own (a lone pod).
	Basic bool
	// MinCount: the gang's size when not Basic.
	MinCount int64
	// PriorityClassName is spec.priorityClassName (Priority is filled
	// from it by the admission plugin).
	PriorityClassName string
	// DisruptionSingle: spec.disruptionMode is single (its pods may be
	// disrupted one by one). Unset or all, fluence disrupts the group
	// whole (Kubernetes' own default is single: see
	// gang.GroupID.DisruptionSingle).
	DisruptionSingle bool
}

// nativeVersion adapts one served version of scheduling.k8s.io PodGroups:
// its resource and how its object reads as a nativePolicy. A new version
// (v1beta1) is one more file adding itself to nativeVersions.
type nativeVersion struct {
	gvr schema.GroupVersionResource
	// policy reads the object's spec; an error says what is wrong with
	// it (it follows "PodGroup ns/name: ").
	policy func(*unstructured.Unstructured) (nativePolicy, error)
	// condition is the status condition type the scheduler writes;
	// sticky: once True it is never set back to False.
	condition string
	sticky    bool
}

// nativeVersions are the versions fluence reads, preferred first: a pod's
// PodGroup is read from the first one the API server serves.
var nativeVersions []nativeVersion

func registerNativeVersion(v nativeVersion) {
	nativeVersions = append(nativeVersions, v)
	watched = append(watched, v.gvr)
}

// nativeVersionOf returns the adapter of a PodGroup resource, else the
// preferred one.
func nativeVersionOf(gvr schema.GroupVersionResource) nativeVersion {
	for _, v := range nativeVersions {
		if v.gvr == gvr {
			return v
		}
	}
	return nativeVersions[0]
}

// legacyNativeVersions are PodGroup versions of earlier Kubernetes
// releases that this build no longer reads: a pod naming a PodGroup on a
// cluster that serves only these is told so instead of waiting.
var legacyNativeVersions = []schema.GroupVersionResource{
	{Group: "scheduling.k8s.io", Version: "v1alpha2", Resource: "podgroups"}, // Kubernetes 1.35, 1.36
}

// NativePodGroupResources are the scheduling.k8s.io PodGroup resources
// fluence reads, preferred first.
func NativePodGroupResources() []schema.GroupVersionResource {
	out := make([]schema.GroupVersionResource, len(nativeVersions))
	for i, v := range nativeVersions {
		out[i] = v.gvr
	}
	return out
}

// nativeGroupName returns the PodGroup a pod names in spec.schedulingGroup.
func nativeGroupName(pod *corev1.Pod) (string, bool) {
	sg := pod.Spec.SchedulingGroup
	if sg == nil || sg.PodGroupName == nil || *sg.PodGroupName == "" {
		return "", false
	}
	return *sg.PodGroupName, true
}

// nativeVersionFor returns the version to read: the first one being
// watched, else the preferred one (whose lookup then says why it is not
// there).
func (c *CustomResources) nativeVersionFor() nativeVersion {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.watchedNative(); ok {
		return v
	}
	return nativeVersions[0]
}

// watchedNative returns the first version fluence reads that is being
// watched (the API server serves it); c.mu is held.
func (c *CustomResources) watchedNative() (nativeVersion, bool) {
	for _, v := range nativeVersions {
		if _, ok := c.running[v.gvr]; ok {
			return v, true
		}
	}
	return nativeVersion{}, false
}

// NativePodGroupResource returns the scheduling.k8s.io PodGroup resource
// to read and write: the first version being watched, else the preferred.
func (c *CustomResources) NativePodGroupResource() schema.GroupVersionResource {
	return c.nativeVersionFor().gvr
}

// nativePodGroup returns the group of the Kubernetes PodGroup name in the
// pod's namespace: a gang of spec.schedulingPolicy.gang.minCount, or, for
// a basic policy, the pod alone.
func (s *resolution) nativePodGroup(name string) (gang.GroupID, error) {
	key := s.ns + "/" + name
	if s.r.custom == nil {
		return gang.GroupID{}, s.fail(false, "spec.schedulingGroup names PodGroup %s but the scheduler has no client to read PodGroups", key)
	}
	v := s.r.custom.nativeVersionFor()
	pg, why := s.r.custom.get(v.gvr, s.ns, name)
	if pg == nil {
		if legacy := s.r.custom.legacyServed(); len(legacy) > 0 {
			return gang.GroupID{}, s.fail(false, "spec.schedulingGroup names PodGroup %s, but the API server serves PodGroups only as %s, which this build of fluence (Kubernetes %s) does not read: it reads %s. Run a fluence built for the cluster's Kubernetes release, or keep pods from naming PodGroups (the GenericWorkload and WorkloadWithJob gates off) and group them with fluence's labels or their workloads",
				key, strings.Join(legacy, ", "), buildRelease, v.gvr.GroupVersion())
		}
		return gang.GroupID{}, s.fail(true, "PodGroup %s (%s) %s", key, v.gvr.Group, why)
	}
	pol, err := v.policy(pg)
	if err != nil {
		return gang.GroupID{}, s.fail(false, "PodGroup %s (%s): %v", key, v.gvr.Group, err)
	}
	var unsupported string
	if pol.Parent != "" {
		id, handled, note, err := s.compositeGroup(name, pol, v)
		if err != nil || handled {
			return id, err
		}
		unsupported = note // placed on its own: the composite's basic, or not served
	}
	if pol.Basic {
		if byDefault, err := s.jobDefault(pg); err != nil || byDefault {
			return gang.GroupID{}, cmp.Or(err, errJobDefault)
		}
		return s.lone(), nil
	}
	switch {
	case pol.MinCount < 1:
		return gang.GroupID{}, s.fail(false, "PodGroup %s (%s): spec.schedulingPolicy.gang.minCount %d is not a positive integer", key, v.gvr.Group, pol.MinCount)
	case pol.MinCount > k8sadapter.MaxGroupSize:
		return gang.GroupID{}, s.fail(false, "PodGroup %s (%s): spec.schedulingPolicy.gang.minCount %d exceeds the maximum group size %d", key, v.gvr.Group, pol.MinCount, k8sadapter.MaxGroupSize)
	}
	id := s.id(name, int32(pol.MinCount), gang.SourceNativePodGroup)
	if pol.Priority != nil {
		id.Priority, id.HasPriority = *pol.Priority, true
	}
	id.PreemptionPolicy, id.DisruptionSingle, id.TopologyKey = pol.PreemptionPolicy, pol.DisruptionSingle, pol.TopologyKey
	// Its resourceClaims are not unsupported: the claims they make are
	// placed through the pods whose own claims resolve to them, as claims
	// the pods share (k8sadapter.SharedClaims).
	id.Unsupported = unsupported
	return id, nil
}

// errJobDefault says a PodGroup is the Job controller's default for a Job
// that asked for no policy: the pod is grouped by fluence's own rules.
var errJobDefault = errors.New("the Job controller's default PodGroup")

// jobDefault reports whether a basic PodGroup is one the Job controller
// made (WorkloadWithJob, Kubernetes 1.37) for a Job whose spec.scheduling
// sets no policy: the controller defaults such a Job to basic, which would
// make every pod of a parallel Job a lone pod. A Job that asks for basic
// in spec.scheduling.schedulingPolicy gets it.
func (s *resolution) jobDefault(pg *unstructured.Unstructured) (bool, error) {
	ref := metav1.GetControllerOf(pg)
	if ref == nil || ref.Kind != "Job" || !strings.HasPrefix(ref.APIVersion, "batch/") || s.r.jobs == nil {
		return false, nil
	}
	job, err := cachedOwner(s, "job", ref, s.r.jobs.Jobs(s.ns).Get)
	if err != nil {
		return false, err
	}
	return job.Spec.Scheduling == nil || job.Spec.Scheduling.SchedulingPolicy == nil, nil
}

// errNoPolicy is the error of a PodGroup with neither policy.
var errNoPolicy = fmt.Errorf("spec.schedulingPolicy is neither basic nor gang")

// buildRelease is the Kubernetes minor release whose API this build reads.
const buildRelease = baseversion.DefaultKubeBinaryVersion

// legacyServed returns the PodGroup versions served that this build does
// not read, as of the last discovery check.
func (c *CustomResources) legacyServed() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.legacy
}
