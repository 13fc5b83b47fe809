package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/sim"
)

// DefaultNamespace is where the Jobs are created.
const DefaultNamespace = "demo"

// Options configure one replay.
type Options struct {
	// Workload is the workload as replayed (Compress).
	Workload *sim.Workload
	// Factor is its compression; progress lines show the workload's own
	// time with it. 0 is 1.
	Factor float64
	// Stall ends the run when nothing was bound or finished for this long
	// while Jobs remain. It must exceed the longest hold, or a healthy run
	// waiting on one long job would look stalled.
	Stall time.Duration
	// Namespace for the Jobs; "" is DefaultNamespace.
	Namespace string
	// EtcdURL shares a running etcd (localcluster.Options.EtcdURL).
	EtcdURL string
	// Progress receives a line every ProgressEvery (default 5 s) and
	// one at the end; nil prints nothing.
	Progress      io.Writer
	ProgressEvery time.Duration
	// Inspect, when set, is called once the run has ended, before the
	// cluster stops: to read what the API server holds, say.
	Inspect func(ctx context.Context, c *localcluster.Cluster, o *Outcome) error
}

// Outcome is one scheduler's replay.
type Outcome struct {
	Scheduler Scheduler
	// Result is in the replayed workload's seconds; Scale converts it.
	Result  *sim.Result
	Stalled bool
	// BindSpread is, per group, Recorder.BindSpreads.
	BindSpread []time.Duration
	// Lags are the control plane's delays (Recorder.Lags).
	Lags Lags
	// Setup is the time to start the control plane and the scheduler;
	// Wall the time from the first submission to the end.
	Setup, Wall time.Duration
}

// Run replays the workload under s on a fresh local cluster, which it
// stops before returning.
func Run(ctx context.Context, s Scheduler, opts Options) (_ *Outcome, err error) {
	w := opts.Workload
	if w == nil || len(w.Groups) == 0 {
		return nil, errors.New("replay: no workload")
	}
	if opts.Factor == 0 {
		opts.Factor = 1
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 5 * time.Second
	}
	if err := CheckStall(w, opts.Stall); err != nil {
		return nil, err
	}
	nodes, err := NodeSpecs(w)
	if err != nil {
		return nil, err
	}

	began := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{
		EtcdURL:       opts.EtcdURL,
		FeatureGates:  s.FeatureGates(),
		JobController: true,
		NodeSim:       &localcluster.NodeSimOptions{Namespace: opts.Namespace},
		Nodes:         nodes,
		Namespace:     opts.Namespace,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: starting the control plane: %w", s.Name(), err)
	}
	defer c.Stop()
	if err := s.Start(ctx, c, opts.Namespace); err != nil {
		return nil, fmt.Errorf("%s: starting the scheduler: %w", s.Name(), err)
	}

	rec := NewRecorder(w)
	launcher := NewLauncher(ctx, endPod(c))
	defer launcher.Stop()
	factory := informers.NewSharedInformerFactoryWithOptions(c.Client, 0, informers.WithNamespace(opts.Namespace))
	podInformer := factory.Core().V1().Pods().Informer()
	observe := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			rec.Observe(pod, time.Now())
			launcher.Observe(pod)
		}
	}
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cancel() // before Shutdown waits for the informer
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced) {
		return nil, fmt.Errorf("%s: the pod informer did not sync", s.Name())
	}

	out := &Outcome{Scheduler: s, Setup: time.Since(began)}
	submitErr := make(chan error, 1)
	go func() { submitErr <- submit(ctx, c, s, w, opts.Namespace, rec) }()

	p := progress{w: opts.Progress, name: s.Name(), factor: opts.Factor}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastLine := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-c.Done():
			return nil, fmt.Errorf("%s: the API server stopped: %v", s.Name(), err)
		case err := <-submitErr:
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.Name(), err)
			}
			submitErr = nil // all submitted
		case now := <-tick.C:
			st := rec.Status(now)
			stalled := st.JobsSubmitted == st.JobsTotal && st.SinceChange > opts.Stall
			if !st.Done() && !stalled {
				if now.Sub(lastLine) >= opts.ProgressEvery {
					p.line(st)
					lastLine = now
				}
				continue
			}
			out.Stalled = stalled && !st.Done()
			out.Wall = st.Elapsed
			out.Result = rec.Result(s.Name(), s.Config(), out.Stalled, now)
			out.BindSpread = rec.BindSpreads()
			out.Lags = rec.Lags()
			p.end(st, out.Stalled, opts.Stall)
			if opts.Inspect != nil {
				if err := opts.Inspect(ctx, c, out); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
	}
}

// submit creates the Jobs at their arrival times, in arrival order.
func submit(ctx context.Context, c *localcluster.Cluster, s Scheduler, w *sim.Workload, ns string, rec *Recorder) error {
	names := JobNames(w)
	order := make([]int, len(w.Groups))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch ga, gb := w.Groups[a].Arrival, w.Groups[b].Arrival; {
		case ga < gb:
			return -1
		case ga > gb:
			return 1
		}
		return 0
	})
	start := time.Now()
	for _, i := range order {
		g := &w.Groups[i]
		if d := time.Until(start.Add(seconds(g.Arrival))); d > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
			}
		}
		job := JobFor(ns, names[i], i, g)
		if err := s.Prepare(ctx, c.Client, job); err != nil {
			return err
		}
		rec.Submitted(i, time.Now())
		if _, err := c.Client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Job %s/%s (group %s): %w", ns, job.Name, g.Name, err)
		}
	}
	return nil
}

// endPod ends a pod through the node simulator, as its kubelet would
// when its containers exit 0. The pod the launcher holds may be stale
// (the Job controller writes to its pods): on a conflict it is read again.
func endPod(c *localcluster.Cluster) func(context.Context, *corev1.Pod) error {
	return func(ctx context.Context, pod *corev1.Pod) error {
		return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			err := c.NodeSim.MarkSucceeded(ctx, pod)
			if apierrors.IsConflict(err) {
				fresh, gerr := c.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
				if gerr != nil {
					return gerr
				}
				if fresh.Status.Phase != corev1.PodRunning {
					return nil // ended meanwhile
				}
				pod = fresh
			}
			return err
		})
	}
}

// NodeSpecs are the workload's nodes as the local cluster's.
func NodeSpecs(w *sim.Workload) ([]localcluster.NodeSpec, error) {
	var out []localcluster.NodeSpec
	for _, n := range w.Cluster.Nodes {
		if n.CPU <= 0 || n.Memory <= 0 {
			return nil, fmt.Errorf("workload %s: node %s has no CPU or memory", w.Name, n.Name)
		}
		out = append(out, localcluster.NodeSpec{
			Name:   n.Name,
			CPU:    strconv.FormatInt(n.CPU, 10) + "m",
			Memory: strconv.FormatInt(n.Memory, 10),
			GPUs:   int(n.GPU),
			Labels: n.Labels,
		})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("workload %s has no nodes", w.Name)
	}
	return out, nil
}

// CheckStall refuses a stall window no longer than the longest hold of
// the workload as replayed: a healthy run waiting on that job alone
// would look stalled.
func CheckStall(w *sim.Workload, window time.Duration) error {
	var longest time.Duration
	for i := range w.Groups {
		longest = max(longest, seconds(w.Groups[i].Runtime))
	}
	if window <= longest {
		return fmt.Errorf("a stall window of %v is not longer than the longest job's hold (%v as replayed): a healthy run waiting on that job would look stalled; give a longer window or compress more", window, longest)
	}
	return nil
}
