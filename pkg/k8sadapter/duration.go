package k8sadapter

import (
	"fmt"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DurationKey is the annotation giving a pod's expected run time.
const DurationKey = "fluence.flux-framework.org/duration"

// DurationOf returns the pod's declared duration in whole seconds (rounded
// up): the DurationKey annotation (a Go duration such as "10m" or "1h30m",
// or an integer number of seconds), else spec.activeDeadlineSeconds, else 0
// (unlimited). A malformed or negative annotation is an error naming the
// pod and the value.
func DurationOf(pod *corev1.Pod) (int64, error) {
	if v, ok := pod.Annotations[DurationKey]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			if n < 0 {
				return 0, fmt.Errorf("%s: annotation %s: %q is negative", describe(pod), DurationKey, v)
			}
			return n, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("%s: annotation %s: %q is neither a duration (like 10m) nor a number of seconds", describe(pod), DurationKey, v)
		}
		if d < 0 {
			return 0, fmt.Errorf("%s: annotation %s: %q is negative", describe(pod), DurationKey, v)
		}
		return int64(math.Ceil(d.Seconds())), nil
	}
	if s := pod.Spec.ActiveDeadlineSeconds; s != nil && *s > 0 {
		return *s, nil
	}
	return 0, nil
}
