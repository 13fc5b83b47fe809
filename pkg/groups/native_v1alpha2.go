package groups

import (
	"fmt"

	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// NativePodGroupV1alpha2 is scheduling.k8s.io/v1alpha2 podgroups (Kubernetes
// 1.36, served with --runtime-config=scheduling.k8s.io/v1alpha2=true and the
// GenericWorkload feature gate).
var NativePodGroupV1alpha2 = schedulingv1alpha2.SchemeGroupVersion.WithResource("podgroups")

func init() {
	registerNativeVersion(nativeVersion{gvr: NativePodGroupV1alpha2, policy: policyV1alpha2})
}

func policyV1alpha2(u *unstructured.Unstructured) (nativePolicy, error) {
	var pg schedulingv1alpha2.PodGroup
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pg); err != nil {
		return nativePolicy{}, fmt.Errorf("cannot be read as %s: %v", NativePodGroupV1alpha2.GroupVersion(), err)
	}
	sp := pg.Spec.SchedulingPolicy
	switch {
	case sp.Gang != nil:
		return nativePolicy{MinCount: int64(sp.Gang.MinCount), Priority: pg.Spec.Priority}, nil
	case sp.Basic != nil:
		return nativePolicy{Basic: true}, nil
	}
	return nativePolicy{}, errNoPolicy
}
