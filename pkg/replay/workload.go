package replay

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/fluence-sched/fluence/pkg/sim"
)

// Compress returns the workload as it is replayed, in wall-clock seconds:
// arrivals, declared durations and holds divided by factor. The hold
// (runtime plus release delay) becomes the runtime and the release delay
// zero, because a pod's end is what frees its node in Kubernetes. w is not
// changed. Workloads the replay cannot express are refused, naming the
// group and the reason.
func Compress(w *sim.Workload, factor float64) (*sim.Workload, error) {
	if !(factor > 0) || math.IsInf(factor, 0) {
		return nil, fmt.Errorf("compression %v: give a positive factor (10 replays 100 s in 10 s)", factor)
	}
	if len(w.NodeArrivals) > 0 {
		return nil, fmt.Errorf("workload %s: %d nodes join during the run; the live replay has a fixed set of nodes", w.Name, len(w.NodeArrivals))
	}
	if len(w.Groups) == 0 {
		return nil, fmt.Errorf("workload %s has no groups", w.Name)
	}
	out := &sim.Workload{Name: w.Name, Cluster: w.Cluster, Params: w.Params}
	for i := range w.Groups {
		g := w.Groups[i]
		if err := replayable(&g); err != nil {
			return nil, fmt.Errorf("workload %s: %w", w.Name, err)
		}
		g.Pods = slices.Clone(g.Pods)
		g.Arrival /= factor
		g.Duration /= factor
		g.Runtime = (g.Runtime + g.ReleaseDelay) / factor
		g.ReleaseDelay = 0
		out.Groups = append(out.Groups, g)
	}
	return out, nil
}

// replayable checks that a group maps onto one Job: identical pods (one
// pod template) and no priority (the replay creates no PriorityClasses).
func replayable(g *sim.GroupSpec) error {
	if len(g.Pods) == 0 {
		return fmt.Errorf("group %s has no pods", g.Name)
	}
	for i, p := range g.Pods {
		if p != g.Pods[0] {
			return fmt.Errorf("group %s: pod %d requests %+v, pod 0 %+v; a Job's pods share one template", g.Name, i, p, g.Pods[0])
		}
	}
	if g.Priority != 0 {
		return fmt.Errorf("group %s: priority %d; the live replay runs every Job at the default priority", g.Name, g.Priority)
	}
	if g.Runtime < 0 || g.ReleaseDelay < 0 || g.Arrival < 0 {
		return fmt.Errorf("group %s: negative time", g.Name)
	}
	return nil
}

// First returns a copy of w with only its first n groups (all of them
// when n is 0 or at least their number). Measured outcomes describe the
// whole workload, so a shortened copy carries none.
func First(w *sim.Workload, n int) (*sim.Workload, error) {
	if n < 0 {
		return nil, errors.New("the number of jobs must not be negative")
	}
	out := *w
	if n == 0 || n >= len(w.Groups) {
		return &out, nil
	}
	out.Groups = slices.Clone(w.Groups[:n])
	out.Measured = nil
	return &out, nil
}

// Scale converts a result of the compressed workload back into the
// workload's own seconds: every time, duration and timeline sample is
// multiplied by factor. The result is changed in place and returned.
func Scale(r *sim.Result, factor float64) *sim.Result {
	at := func(t float64) float64 {
		if t < 0 { // "never"
			return t
		}
		return t * factor
	}
	for i := range r.Jobs {
		j := &r.Jobs[i]
		j.Submit, j.Start, j.End = at(j.Submit), at(j.Start), at(j.End)
		j.Wait *= factor
		j.Turnaround *= factor
	}
	for i := range r.Timeline {
		r.Timeline[i].T *= factor
	}
	r.StalledAt *= factor
	r.Makespan *= factor
	r.LowerBound *= factor
	r.Bounds.Runtime *= factor
	r.Bounds.Hold *= factor
	r.Bounds.Packing *= factor
	r.MeanTurnaround *= factor
	r.MeanWait *= factor
	r.MaxWait *= factor
	r.SimulatedUntil *= factor
	return r
}
