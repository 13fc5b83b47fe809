package plugin

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
)

// ConditionKey is the PodGroup annotation holding fluence's Schedulable
// condition. The scheduler-plugins PodGroup (v1alpha1) has no
// status.conditions, and its CRD prunes unknown status fields, so the
// condition is kept where any PodGroup can carry it.
const ConditionKey = "fluence.flux-framework.org/condition"

// condition is the annotation's JSON, shaped as a metav1.Condition.
type condition struct {
	Type               string      `json:"type"`
	Status             string      `json:"status"`
	Reason             string      `json:"reason"`
	Message            string      `json:"message"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`
}

// writePodGroupConditions records each condition on its PodGroup and, for
// a rejection, a Warning event on the PodGroup itself. Failures are logged:
// the pods' own events carry the same reason.
func writePodGroupConditions(ctx context.Context, dyn dynamic.Interface, rec events.EventRecorderLogger, conds []podGroupCondition) {
	if dyn == nil {
		return
	}
	for _, pc := range conds {
		status := "False"
		if pc.schedulable {
			status = "True"
		}
		c := condition{Type: "Schedulable", Status: status, Reason: pc.reason, Message: pc.message,
			LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second))}
		value, err := json.Marshal(c)
		if err != nil {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{ConditionKey: string(value)}}})
		if err != nil {
			continue
		}
		pg, err := dyn.Resource(podGroupGVR).Namespace(pc.namespace).Patch(ctx, pc.name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			klog.FromContext(ctx).Info("fluence: cannot record the PodGroup condition", "podGroup", pc.namespace+"/"+pc.name, "err", err)
			continue
		}
		if !pc.schedulable && rec != nil {
			rec.Eventf(pg, nil, corev1.EventTypeWarning, "FluenceGroupRejected", "Scheduling", "%s", pc.message)
		}
	}
}
