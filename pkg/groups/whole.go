package groups

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// A group placed once reports whether it is whole now: each member
// running or finished (Whole), the same with pods beyond its size
// (Elastic), or members missing (MembersMissing, with what went and what
// waits). Kubernetes has no such condition yet, so it is fluence's own
// type, beside the scheduling condition and never in its place.
const (
	// WholeConditionType is the condition's type in a Kubernetes
	// PodGroup's status.conditions.
	WholeConditionType = "FluenceGroupWhole"
	// WholeConditionKey is the scheduler-plugins PodGroup annotation that
	// holds it (that PodGroup has no status.conditions).
	WholeConditionKey = "fluence.flux-framework.org/whole"
)

var wholeReasons = map[gang.ConditionStatus]string{gang.Whole: "Whole", gang.Elastic: "Elastic", gang.Broken: "MembersMissing"}

// queueKey keys the writer's queue: a group's conditions (scheduling,
// whole, disruption) are written apart, so that none supersedes another.
func queueKey(c gang.Condition) string {
	switch {
	case c.Status.Wholeness():
		return c.Group.Key + "#whole"
	case c.Status == gang.Disrupted:
		return c.Group.Key + "#disrupted"
	}
	return c.Group.Key
}

// writeWhole records a group's whole condition on its PodGroup.
func (w *ConditionWriter) writeWhole(ctx context.Context, c gang.Condition) error {
	status := metav1.ConditionTrue
	if c.Status == gang.Broken {
		status = metav1.ConditionFalse
	}
	if c.Group.Source != gang.SourceNativePodGroup {
		_, err := w.annotate(ctx, c.Group, WholeConditionKey, condition{Type: WholeConditionType, Status: string(status), Reason: wholeReasons[c.Status], Message: c.Message})
		return err
	}
	res, pg, conds, err := w.readNative(ctx, c.Group)
	if err != nil || pg == nil {
		return err
	}
	_, err = w.setNative(ctx, res, pg, conds, metav1.Condition{Type: WholeConditionType, Status: status, Reason: wholeReasons[c.Status], Message: "fluence: " + c.Message})
	return err
}
