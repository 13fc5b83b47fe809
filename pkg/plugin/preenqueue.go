package plugin

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

var _ fwk.PreEnqueuePlugin = &Plugin{}

// PreEnqueue keeps a pod of a labelled group out of the scheduling queue
// while its group has fewer pods than its labels say (gang.Core.Hold):
// a cycle could only tell it to wait, and a failed cycle costs the
// scheduler a status write and an event. The core activates the held
// pods once the group has them all, or is judged, or the pod leaves it.
//
// The framework calls it under its queue's lock, so it never waits for
// the core's: when the core is busy the pod goes on to a cycle, which
// answers as it always did.
func (p *Plugin) PreEnqueue(_ context.Context, pod *corev1.Pod) *fwk.Status {
	if !p.ready() {
		return nil // not acting yet: PreFilter waits for the informers
	}
	cp := k8sadapter.HoldPod(pod)
	if cp.Labeled.Key == "" {
		return nil // no labelled group, or a malformed one its cycle reports
	}
	if staleGatedCondition(pod) {
		// Its gates were lifted, but its status still says the API
		// server's "blocked due to non-empty scheduling gates", which
		// only a failed cycle replaces: one cycle, so the status says
		// what it waits for. Held from its next activation on.
		return nil
	}
	if !p.mu.TryLock() {
		return nil
	}
	held, why := p.core.Hold(cp, p.now())
	p.mu.Unlock()
	if !held {
		return nil
	}
	// The core wakes it; other pods' events need not (podEventHint).
	p.hints.add(pod.UID)
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "fluence: "+why)
}

// staleGatedCondition reports whether the pod's PodScheduled condition is
// still the SchedulingGated one the API server set at creation.
func staleGatedCondition(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Reason == corev1.PodReasonSchedulingGated
		}
	}
	return false
}
