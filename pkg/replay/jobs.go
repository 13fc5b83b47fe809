package replay

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/k8sadapter"
	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/sim"
)

// HoldAnnotation, on a pod, is how long its Job computes once all of the
// Job's pods run (a Go duration). The Launcher ends the pods after it.
const HoldAnnotation = "replay.fluence.flux-framework.org/hold"

// SizeAnnotation, on a pod, is how many pods its Job runs at once: the
// Launcher waits for that many to run.
const SizeAnnotation = "replay.fluence.flux-framework.org/size"

// GroupLabel, on a Job and its pods, is the group's index in the workload.
const GroupLabel = "replay.fluence.flux-framework.org/group"

// podImage is what the pods would run; nothing pulls it, the node
// simulator only reads the pod.
const podImage = "registry.k8s.io/pause:3.10"

// JobNames gives each group a Job name: its own name made a valid one
// (lower case, at most 63 characters), or job-<index> when that is empty
// or taken.
func JobNames(w *sim.Workload) []string {
	names := make([]string, len(w.Groups))
	taken := map[string]bool{}
	for i := range w.Groups {
		n := dnsLabel(w.Groups[i].Name)
		if n == "" || taken[n] {
			n = "job-" + strconv.Itoa(i)
		}
		taken[n] = true
		names[i] = n
	}
	return names
}

// dnsLabel maps s onto [a-z0-9-], trimmed of '-' at both ends and cut to
// 63 characters; "" if nothing is left or the result is still invalid.
func dnsLabel(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	out := b.String()
	if len(out) > validation.DNS1123LabelMaxLength {
		out = out[:validation.DNS1123LabelMaxLength]
	}
	out = strings.Trim(out, "-")
	if len(validation.IsDNS1123Label(out)) > 0 {
		return ""
	}
	return out
}

// JobFor builds the Indexed Job replaying group i of a compressed
// workload (Compress): completions = parallelism = the group's size, pods
// requesting what the group's pods request (limits equal, as in the
// experiments), the group's hold in HoldAnnotation and, when the group
// declares a duration, fluence's duration annotation. The Job runs under
// the default scheduler; a Scheduler's Prepare changes that.
func JobFor(namespace, name string, i int, g *sim.GroupSpec) *batchv1.Job {
	size := int32(g.Size())
	p := g.Pods[0]
	requests := corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(p.CPU, resource.DecimalSI)}
	if p.Memory > 0 {
		requests[corev1.ResourceMemory] = *resource.NewQuantity(p.Memory, resource.BinarySI)
	}
	if p.GPU > 0 {
		requests[localcluster.GPUResource] = *resource.NewQuantity(p.GPU, resource.DecimalSI)
	}
	labels := map[string]string{GroupLabel: strconv.Itoa(i)}
	annotations := map[string]string{HoldAnnotation: seconds(g.Runtime).String(), SizeAnnotation: strconv.Itoa(int(size))}
	if g.Duration > 0 {
		annotations[k8sadapter.DurationKey] = seconds(g.Duration).String()
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			Parallelism:    ptr.To(size),
			Completions:    ptr.To(size),
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			BackoffLimit:   ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{
						Name:  "rank",
						Image: podImage,
						Resources: corev1.ResourceRequirements{
							Requests: requests,
							Limits:   requests.DeepCopy(),
						},
					}},
				},
			},
		},
	}
}

// seconds is a duration in seconds, rounded to the millisecond.
func seconds(s float64) time.Duration {
	return time.Duration(s*1000+0.5) * time.Millisecond
}

// PodHold reads HoldAnnotation and SizeAnnotation; ok is false when the
// pod has no hold. A malformed value is an error naming the pod.
func PodHold(pod *corev1.Pod) (hold time.Duration, size int, ok bool, err error) {
	v, found := pod.Annotations[HoldAnnotation]
	if !found {
		return 0, 0, false, nil
	}
	hold, err = time.ParseDuration(v)
	if err != nil || hold < 0 {
		return 0, 0, false, fmt.Errorf("pod %s/%s: annotation %s=%q is not a duration such as 2.5s", pod.Namespace, pod.Name, HoldAnnotation, v)
	}
	sv := pod.Annotations[SizeAnnotation]
	size, err = strconv.Atoi(sv)
	if err != nil || size < 1 {
		return 0, 0, false, fmt.Errorf("pod %s/%s: annotation %s=%q is not a pod count", pod.Namespace, pod.Name, SizeAnnotation, sv)
	}
	return hold, size, true, nil
}
