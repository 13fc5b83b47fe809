package groups

import (
	"fmt"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// NativePodGroupV1beta1 is scheduling.k8s.io/v1beta1 podgroups (Kubernetes
// 1.37, served with --runtime-config=scheduling.k8s.io/v1beta1=true and the
// GenericWorkload feature gate, beta and off by default).
var NativePodGroupV1beta1 = schedulingv1beta1.SchemeGroupVersion.WithResource("podgroups")

func init() {
	registerNativeVersion(nativeVersion{
		gvr:       NativePodGroupV1beta1,
		policy:    policyV1beta1,
		condition: schedulingv1beta1.PodGroupInitiallyScheduled,
		sticky:    true,
	})
}

func policyV1beta1(u *unstructured.Unstructured) (nativePolicy, error) {
	var pg schedulingv1beta1.PodGroup
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pg); err != nil {
		return nativePolicy{}, fmt.Errorf("cannot be read as %s: %v", NativePodGroupV1beta1.GroupVersion(), err)
	}
	s := pg.Spec
	var topo []schedulingv1beta1.TopologyConstraint
	if c := s.SchedulingConstraints; c != nil {
		topo = c.Topology
	}
	shared, err := readSharedSpec(s.Priority, s.PreemptionPolicy, s.ParentCompositePodGroupName, topo,
		func(t schedulingv1beta1.TopologyConstraint) string { return t.Key })
	if err != nil {
		return nativePolicy{}, err
	}
	pol := nativePolicy{
		sharedSpec:        shared,
		PriorityClassName: s.PriorityClassName,
		DisruptionSingle:  s.DisruptionMode != nil && s.DisruptionMode.Single != nil,
	}
	sp := s.SchedulingPolicy
	switch {
	case sp.Gang != nil:
		pol.MinCount = int64(sp.Gang.MinCount)
		return pol, nil
	case sp.Basic != nil:
		pol.Basic = true
		return pol, nil
	}
	return nativePolicy{}, errNoPolicy
}
