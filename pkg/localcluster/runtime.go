package localcluster

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// RuntimeAnnotation gives a pod's run time on a simulated node, as a Go
// duration ("90s", "1500ms"). Without it, a container whose command is
// `sleep N` (directly or through `sh -c`) runs N seconds; a pod with neither
// runs until it is deleted.
const RuntimeAnnotation = "sim.fluence.flux-framework.org/runtime"

// DrainAnnotation ("true") makes a simulated pod take its whole grace
// period to stop once deleted, as a workload that saves its state on
// SIGTERM does; without it, a pod stops as soon as it is deleted (as the
// pause container does).
const DrainAnnotation = "sim.fluence.flux-framework.org/drain"

// PodRuntime returns how long pod runs on a simulated node; ok is false
// when it runs until deleted. A malformed annotation is an error naming
// the pod.
func PodRuntime(pod *corev1.Pod) (d time.Duration, ok bool, err error) {
	if v, found := pod.Annotations[RuntimeAnnotation]; found {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 {
			return 0, false, fmt.Errorf("pod %s/%s: annotation %s=%q is not a duration such as 90s", pod.Namespace, pod.Name, RuntimeAnnotation, v)
		}
		return d, true, nil
	}
	// Containers run side by side: the pod ends with its longest sleep.
	var longest time.Duration
	found := false
	for _, c := range pod.Spec.Containers {
		if s, ok := sleepSeconds(append(append([]string{}, c.Command...), c.Args...)); ok {
			found = true
			longest = max(longest, s)
		}
	}
	return longest, found, nil
}

// sleepSeconds recognises `sleep N` and `sh -c "sleep N"` (N in seconds,
// fractions allowed, or with a unit suffix s, m, h as GNU sleep takes).
func sleepSeconds(argv []string) (time.Duration, bool) {
	if len(argv) == 3 && (base(argv[0]) == "sh" || base(argv[0]) == "bash") && argv[1] == "-c" {
		argv = strings.Fields(argv[2])
	}
	if len(argv) != 2 || base(argv[0]) != "sleep" {
		return 0, false
	}
	arg := argv[1]
	unit := time.Second
	switch {
	case strings.HasSuffix(arg, "s"):
		arg = strings.TrimSuffix(arg, "s")
	case strings.HasSuffix(arg, "m"):
		arg, unit = strings.TrimSuffix(arg, "m"), time.Minute
	case strings.HasSuffix(arg, "h"):
		arg, unit = strings.TrimSuffix(arg, "h"), time.Hour
	}
	n, err := strconv.ParseFloat(arg, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return time.Duration(n * float64(unit)), true
}

func base(path string) string { return path[strings.LastIndex(path, "/")+1:] }
