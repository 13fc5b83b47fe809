package replay

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Launcher plays the part of an MPI launcher: a Job's pods compute only
// once all of them run. When every pod of a Job carrying HoldAnnotation
// has been seen Running, the Launcher waits for the hold and then ends
// them all with End (the node simulator's MarkSucceeded, as each pod's
// kubelet would report its exit). Until then the pods run without end, as
// the ranks of an MPI job wait for their peers.
type Launcher struct {
	// End ends one pod; it is called for each pod of a Job, one after
	// another, in name order.
	End func(ctx context.Context, pod *corev1.Pod) error

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	jobs map[string]*gang // namespace/job name
}

type gang struct {
	running  map[types.UID]*corev1.Pod
	launched bool
}

// NewLauncher returns a launcher whose timers and End calls stop with ctx
// or Stop.
func NewLauncher(ctx context.Context, end func(context.Context, *corev1.Pod) error) *Launcher {
	l := &Launcher{End: end, jobs: map[string]*gang{}}
	l.ctx, l.cancel = context.WithCancel(ctx)
	return l
}

// Observe takes every version of every pod.
func (l *Launcher) Observe(pod *corev1.Pod) {
	job := pod.Labels[batchv1.JobNameLabel]
	if job == "" || pod.Status.Phase != corev1.PodRunning {
		return
	}
	hold, size, ok, err := PodHold(pod)
	if err != nil {
		klog.FromContext(l.ctx).Error(err, "launcher: the pod runs until deleted")
		return
	}
	if !ok {
		return
	}
	key := pod.Namespace + "/" + job
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.jobs[key]
	if g == nil {
		g = &gang{running: map[types.UID]*corev1.Pod{}}
		l.jobs[key] = g
	}
	g.running[pod.UID] = pod
	if g.launched || len(g.running) < size {
		return
	}
	g.launched = true
	pods := make([]*corev1.Pod, 0, len(g.running))
	for _, p := range g.running {
		pods = append(pods, p)
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	l.wg.Go(func() { l.launch(key, hold, pods) })
}

// launch waits out the hold, then ends the pods.
func (l *Launcher) launch(job string, hold time.Duration, pods []*corev1.Pod) {
	t := time.NewTimer(hold)
	defer t.Stop()
	select {
	case <-l.ctx.Done():
		return
	case <-t.C:
	}
	for _, p := range pods {
		if err := l.End(l.ctx, p); err != nil && l.ctx.Err() == nil {
			klog.FromContext(l.ctx).Error(err, "launcher: could not end a pod", "job", job, "pod", klog.KObj(p))
		}
	}
}

// Stop cancels the pending holds and waits for the End calls under way.
func (l *Launcher) Stop() {
	l.cancel()
	l.wg.Wait()
}
