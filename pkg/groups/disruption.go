package groups

import (
	"context"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// A group that fluence preempts (its pods evicted to make room for a
// group of higher priority) is marked as Kubernetes marks a preempted
// PodGroup: the DisruptionTarget condition, True, reason
// PreemptionByScheduler, with the core's message (who preempts it, and
// why). It is a condition of its own, beside the scheduling and whole
// conditions, and stays True as the record of the last preemption: a
// group placed again later keeps it, with the time it was preempted.
const (
	// DisruptionConditionType is the condition's type in a Kubernetes
	// PodGroup's status.conditions (and in the annotation).
	DisruptionConditionType = schedulingv1beta1.DisruptionTarget
	// DisruptionReason is its reason.
	DisruptionReason = schedulingv1beta1.PodGroupReasonPreemptionByScheduler
	// DisruptionConditionKey is the scheduler-plugins PodGroup annotation
	// that holds it (that PodGroup has no status.conditions).
	DisruptionConditionKey = "fluence.flux-framework.org/disruption"
)

// writeDisrupted records a group's preemption on its PodGroup.
func (w *ConditionWriter) writeDisrupted(ctx context.Context, c gang.Condition) error {
	if c.Group.Source != gang.SourceNativePodGroup {
		_, err := w.annotate(ctx, c.Group, DisruptionConditionKey, condition{Type: DisruptionConditionType, Status: string(metav1.ConditionTrue), Reason: DisruptionReason, Message: c.Message})
		return err
	}
	res, pg, conds, err := w.readNative(ctx, c.Group)
	if err != nil || pg == nil {
		return err
	}
	_, err = w.setNative(ctx, res, pg, conds, metav1.Condition{Type: DisruptionConditionType, Status: metav1.ConditionTrue, Reason: DisruptionReason, Message: "fluence: " + c.Message})
	return err
}
