package k8sadapter

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// CheckpointKey is the annotation a workload sets on its pods when it
// last saved its state (RFC 3339): a preemption choosing among victims
// counts the work each would lose since then, not since it started.
const CheckpointKey = "fluence.flux-framework.org/checkpointed-at"

// MovableKey is the annotation by which a pod's workload says it may be
// moved ("true"): restartable, so that its group may be evicted to let
// a group bound to one domain in when it fits elsewhere now, and placed
// again first.
const MovableKey = "fluence.flux-framework.org/movable"

// MovedAtKey is the annotation fluence writes at binding on the pods of
// a group it moved to make room (RFC 3339): when it moved it, so that a
// restarted scheduler does not move the group again sooner than
// preemption.moveEvery allows.
const MovedAtKey = "fluence.flux-framework.org/moved-at"

// CheckpointOf returns when the pod's workload last saved its state, and
// whether it says. A value that is not RFC 3339 counts as no checkpoint:
// the pod is then judged to lose all it ran, which errs toward sparing
// it, rather than keeping its group out of the scheduler's view.
func CheckpointOf(pod *corev1.Pod) (time.Time, bool) {
	return timeAnnotation(pod, CheckpointKey)
}

// MovedAtOf returns when fluence last moved the pod's group, as written
// at binding. A malformed value (written by hand) counts as none: the
// group may then be moved again.
func MovedAtOf(pod *corev1.Pod) (time.Time, bool) {
	return timeAnnotation(pod, MovedAtKey)
}

func timeAnnotation(pod *corev1.Pod, key string) (time.Time, bool) {
	v, ok := pod.Annotations[key]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}
