package k8sadapter

import (
	"fmt"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fluence-sched/fluence/pkg/match"
)

// DurationKey is the annotation giving a pod's expected run time.
const DurationKey = "fluence.flux-framework.org/duration"

// TicksPerSecond is the unit of the scheduler's core: it counts time in
// milliseconds, as the simulator does.
const TicksPerSecond = 1000

// MaxDuration is the longest run time, in seconds, a pod may declare: the
// core plans it in ticks, and no plan reaches past match.Horizon ticks. A
// limit in seconds must be checked before the conversion: checked after,
// in ticks, a plan of 35 years was refused as too long and a declared
// duration past math.MaxInt64/1000 seconds wrapped round into one of a
// moment.
const MaxDuration = match.Horizon / TicksPerSecond

// DurationOf returns the pod's declared duration in whole seconds (rounded
// up): the DurationKey annotation (a Go duration such as "10m" or "1h30m",
// or an integer number of seconds), else spec.activeDeadlineSeconds, else 0
// (none). A malformed or negative annotation, or one longer than
// MaxDuration, is an error naming the pod and the value. A deadline
// longer than MaxDuration plans nothing it could hold: it counts as none.
func DurationOf(pod *corev1.Pod) (int64, error) {
	if v, ok := pod.Annotations[DurationKey]; ok {
		n, err := annotatedDuration(pod, v)
		if err == nil && n > MaxDuration {
			return 0, fmt.Errorf("%s: annotation %s: %q is longer than %d s, the longest the scheduler plans", describe(pod), DurationKey, v, MaxDuration)
		}
		return n, err
	}
	if s := pod.Spec.ActiveDeadlineSeconds; s != nil && *s > 0 && *s <= MaxDuration {
		return *s, nil
	}
	return 0, nil
}

// annotatedDuration reads the DurationKey annotation's value v, in whole
// seconds rounded up.
func annotatedDuration(pod *corev1.Pod, v string) (int64, error) {
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
