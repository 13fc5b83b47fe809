package sim

import (
	"fmt"
	"math"
	"slices"
)

// The GPU report of a run: GPUs left stranded while gangs waited, gangs
// bound in part, and gangs kept within their required domain. Like the
// topology report it is computed from what the run did (every pod's
// stays on nodes, Result.Bindings, and each group's arrival and
// completion), never from what a scheduler said, so fluence and the
// models are measured alike.
//
// Definitions (docs/sim-workload.md, "The GPU table"):
//
//   - A GPU is idle at time t when no pod holds it, or when a pod holds it
//     whose gang has not all of its pods bound and has not completed: a
//     member bound ahead of the others waits for them, and its GPUs do no
//     work.
//   - A gang is waiting at t when it has arrived, has not completed, was
//     not rejected, and has fewer pods bound than it has pods.
//   - The idle GPUs are stranded at t when some waiting gang asks in all
//     (every pod's gpu) for at least one GPU and no more than are idle:
//     by count the cluster could run it, and it waits. Stranded
//     GPU-seconds are the integral of the stranded GPUs over the run,
//     from the first arrival to the end of the run (the last event, or
//     where a stalled run stopped).
//   - A gang was bound in part when, between two events, some but not all
//     of its pods were bound while it had not completed. Pending after a
//     sibling bound is the integral of its unbound pods over those times.

// GPUSummary is one run's GPU figures.
type GPUSummary struct {
	// GPUs is the cluster's GPUs (devices or a count), the joining
	// nodes' included once they join (the most at any time).
	GPUs int64
	// From and To are the times measured: the first arrival and the end
	// of the run.
	From, To float64
	// Stranded is GPU-seconds stranded; StrandedShare is it over the
	// GPU-seconds of the makespan (GPUs x (end - From), where end is the
	// last completion when every group completed or was rejected, else
	// To); NaN when there are no GPUs.
	Stranded, StrandedShare float64
	// Required counts the started groups that require a domain, Within
	// those whose pods all shared one value of its key.
	Required, Within int
	// Partial counts groups bound in part at some time;
	// PendingAfterSibling is the pod-seconds their unbound pods waited
	// while some sibling was bound.
	Partial             int
	PendingAfterSibling float64
}

// SummarizeGPUs measures a run of w: stranded GPUs, gangs bound in part,
// and required gangs kept within one domain. The result must be a
// simulator run of w (with its Bindings).
func SummarizeGPUs(w *Workload, r *Result) (GPUSummary, error) {
	if len(r.Jobs) != len(w.Groups) {
		return GPUSummary{}, fmt.Errorf("sim: the result has %d jobs, workload %s %d groups", len(r.Jobs), w.Name, len(w.Groups))
	}
	s := GPUSummary{From: math.Inf(1), To: r.SimulatedUntil, StrandedShare: math.NaN()}
	byName := nodeIndex(w)
	// Events in time order; at one time, all are applied before the
	// state is measured.
	type ev struct {
		t     float64
		group int     // -1 for a node joining
		bound int     // +1 bound, -1 freed, 0 otherwise
		gpu   int64   // GPUs bound (+) or freed (-), or a node's
		kind  evState // what changes
	}
	var evs []ev
	ask := make([]int64, len(w.Groups))
	for i := range w.Groups {
		g, j := &w.Groups[i], &r.Jobs[i]
		if g.Name != j.Name {
			return GPUSummary{}, fmt.Errorf("sim: job %d of the result is %s, group %d of workload %s is %s", i, j.Name, i, w.Name, g.Name)
		}
		for _, p := range g.Pods {
			ask[i] += p.GPU
		}
		if j.Submit >= 0 {
			s.From = math.Min(s.From, j.Submit)
			evs = append(evs, ev{t: j.Submit, group: i, kind: stArrive})
		}
		if j.Completed {
			evs = append(evs, ev{t: j.End, group: i, kind: stEnd})
		}
		if g.TopologyRequired != "" && j.Start >= 0 {
			on, err := jobNodes(w, byName, j)
			if err != nil {
				return GPUSummary{}, err
			}
			s.Required++
			if sharedValue(g.TopologyRequired, on) {
				s.Within++
			}
		}
	}
	if math.IsInf(s.From, 1) {
		s.From = 0
	}
	for _, n := range w.Cluster.Nodes {
		s.GPUs += n.GPU
	}
	for _, a := range w.NodeArrivals {
		evs = append(evs, ev{t: a.At, group: -1, gpu: a.Node.GPU, kind: stNode})
	}
	for _, b := range r.Bindings {
		if b.Group < 0 || b.Group >= len(w.Groups) {
			return GPUSummary{}, fmt.Errorf("sim: a binding names group %d, workload %s has %d", b.Group, w.Name, len(w.Groups))
		}
		evs = append(evs, ev{t: b.Bound, group: b.Group, bound: 1, gpu: b.GPU, kind: stBind})
		if b.Freed >= 0 {
			evs = append(evs, ev{t: b.Freed, group: b.Group, bound: -1, gpu: -b.GPU, kind: stBind})
		}
	}
	slices.SortStableFunc(evs, func(a, b ev) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		}
		return 0
	})

	total := s.GPUs
	var held int64 // GPUs held by bound pods
	bound := make([]int, len(w.Groups))
	boundGPU := make([]int64, len(w.Groups))
	done := make([]bool, len(w.Groups))
	partial := make([]bool, len(w.Groups))
	var live []int // arrived groups, not done nor rejected, in arrival order
	for k := 0; k < len(evs); {
		t := evs[k].t
		for ; k < len(evs) && evs[k].t == t; k++ {
			e := evs[k]
			switch e.kind {
			case stNode:
				total += e.gpu
				s.GPUs = max(s.GPUs, total)
			case stArrive:
				if !r.Jobs[e.group].Rejected {
					live = append(live, e.group)
				}
			case stEnd:
				done[e.group] = true
			case stBind:
				bound[e.group] += e.bound
				boundGPU[e.group] += e.gpu
				held += e.gpu
			}
		}
		live = slices.DeleteFunc(live, func(g int) bool { return done[g] })
		end := s.To
		if k < len(evs) {
			end = math.Min(evs[k].t, s.To)
		}
		dt := end - t
		if dt <= 0 {
			continue
		}
		idle := total - held
		for _, g := range live {
			if n := len(w.Groups[g].Pods); bound[g] > 0 && bound[g] < n {
				idle += boundGPU[g]
			}
		}
		stranded := false
		for _, g := range live {
			n := len(w.Groups[g].Pods)
			if bound[g] >= n {
				continue
			}
			if ask[g] > 0 && ask[g] <= idle {
				stranded = true
			}
			if bound[g] > 0 {
				partial[g] = true
				s.PendingAfterSibling += float64(n-bound[g]) * dt
			}
		}
		if stranded {
			s.Stranded += float64(idle) * dt
		}
	}
	for _, p := range partial {
		if p {
			s.Partial++
		}
	}
	if s.GPUs > 0 {
		end := s.To
		if r.JobsCompleted > 0 && r.JobsCompleted+r.JobsRejected == r.JobsTotal && !r.Stalled {
			end = s.From + r.Makespan
		}
		if span := end - s.From; span > 0 {
			s.StrandedShare = s.Stranded / (float64(s.GPUs) * span)
		}
	}
	return s, nil
}

// evState is what a GPU-report event changes.
type evState uint8

const (
	stArrive evState = iota
	stEnd
	stBind
	stNode
)
