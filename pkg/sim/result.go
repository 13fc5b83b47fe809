package sim

import "math"

// JobResult is one group's outcome.
type JobResult struct {
	Name      string
	Size      int
	CPU       int64 // millicores, all pods
	Submit    float64
	Start     float64 // -1 if it never started
	End       float64 // -1 if it never completed
	Completed bool
	Rejected  bool
	// Nodes names each pod's node, in pod order ("" for a pod never bound).
	Nodes []string
	// Wait is Start - Submit; Turnaround is End - Submit (NaN if unknown).
	// Start is that of the run that completed: a group evicted waits again.
	Wait       float64
	Turnaround float64
	// Priority is the group's; Evictions the times it lost pods to a
	// preemption, EvictedPods how many, WorkLost the pod-seconds of its
	// runs cut short (env_evict.go).
	Priority    int64
	Evictions   int
	EvictedPods int
	WorkLost    float64
}

// Result is one scheduler's run of one workload.
type Result struct {
	Workload  string
	Scheduler string
	Model     bool
	Config    string

	Jobs     []JobResult
	Timeline []Sample

	JobsTotal     int
	JobsCompleted int
	JobsRejected  int

	Stalled bool
	// StalledAt is the last moment anything started or completed before
	// the stall; the pod counts are the frozen state.
	StalledAt          float64
	PendingAtStall     int
	RunningAtStall     int
	JobsHoldingAtStall int // distinct groups with bound pods, not complete

	// Makespan is first arrival to last completion (of completed jobs).
	Makespan float64
	// LowerBound is the runtime bound (Bounds.Runtime), kept for the
	// outputs that report it by that name.
	LowerBound float64
	// Bounds are every lower bound on the workload's makespan.
	Bounds         Bounds
	MeanTurnaround float64
	MeanWait       float64
	// MaxWait is the longest any started group waited (NaN if none did).
	MaxWait        float64
	TotalCPU       int64
	SimulatedUntil float64
	Steps          int

	// Preemption (env_evict.go): group evictions and pods evicted; the
	// pod-seconds of runs cut short, and of all the work (pods x runtime
	// of every group); the most groups bound in part after the events of
	// one time, and the pod-seconds such groups held. EvictedInPart
	// counts the evictions that left the rest of the group bound.
	Evictions         int
	EvictedPods       int
	EvictedInPart     int
	WorkLost          float64
	Work              float64
	PartialMax        int
	PartialPodSeconds float64

	// Bindings are every pod's stays on nodes, in the order bound: what
	// the GPU report (SummarizeGPUs) measures.
	Bindings []Binding
}

// BoundRatio is Makespan / LowerBound, NaN when the run did not complete
// every job or no bound is known.
func (r *Result) BoundRatio() float64 {
	if r.LowerBound <= 0 || r.JobsCompleted+r.JobsRejected != r.JobsTotal || r.JobsCompleted == 0 {
		return math.NaN()
	}
	return r.Makespan / r.LowerBound
}

// BestRatio is Makespan over the best of Bounds, NaN when the run did not
// complete every job or no bound is known.
func (r *Result) BestRatio() float64 {
	best, _ := r.Bounds.Best()
	if best <= 0 || r.JobsCompleted+r.JobsRejected != r.JobsTotal || r.JobsCompleted == 0 {
		return math.NaN()
	}
	return r.Makespan / best
}

// Summarize derives the run's totals from its jobs: how many completed
// and were rejected, the makespan (first submit to last completion), the
// mean turnaround of completed jobs, the mean and longest wait of started
// ones (each wait and turnaround is set here too). The simulator and the
// live replay both build Jobs and call it, so their tables agree.
func (r *Result) Summarize() {
	first, last := math.Inf(1), math.Inf(-1)
	var turn, wait float64
	var started int
	r.JobsCompleted, r.JobsRejected = 0, 0
	r.Makespan, r.MeanTurnaround, r.MeanWait, r.MaxWait = 0, math.NaN(), math.NaN(), math.NaN()
	for i := range r.Jobs {
		j := &r.Jobs[i]
		j.Wait, j.Turnaround = math.NaN(), math.NaN()
		if j.Submit >= 0 {
			first = math.Min(first, j.Submit)
		}
		if j.Start >= 0 {
			j.Wait = j.Start - j.Submit
			wait += j.Wait
			if started == 0 || j.Wait > r.MaxWait {
				r.MaxWait = j.Wait
			}
			started++
		}
		if j.Completed {
			j.Turnaround = j.End - j.Submit
			turn += j.Turnaround
			r.JobsCompleted++
			last = math.Max(last, j.End)
		}
		if j.Rejected {
			r.JobsRejected++
		}
	}
	if r.JobsCompleted > 0 {
		r.Makespan = last - first
		r.MeanTurnaround = turn / float64(r.JobsCompleted)
	}
	if started > 0 {
		r.MeanWait = wait / float64(started)
	}
}

func (e *Env) result(w *Workload, stalled bool) *Result {
	r := &Result{
		Workload: w.Name, Scheduler: e.sched.Name(), Model: e.sched.Model(), Config: e.sched.Config(),
		Timeline: e.timeline, JobsTotal: len(e.groups), TotalCPU: e.totalCPU,
		SimulatedUntil: e.now, Steps: e.nevents,
		Evictions: e.evictions, EvictedPods: e.evictedPods, EvictedInPart: e.evictedInPart, PartialMax: e.partialMax, PartialPodSeconds: e.partialPodSeconds(),
		Bindings: e.bindings,
	}
	for _, g := range e.groups {
		j := JobResult{Name: g.Spec.Name, Size: g.Spec.Size(), Submit: g.Submit, Start: g.Start, End: g.End,
			Completed: g.End >= 0, Rejected: g.Rejected, Wait: math.NaN(), Turnaround: math.NaN(),
			Priority: g.Spec.Priority, Evictions: g.Evictions, EvictedPods: g.EvictedPods, WorkLost: g.WorkLost}
		r.WorkLost += g.WorkLost
		r.Work += float64(len(g.PodNode)) * g.Spec.Runtime
		for _, p := range g.Spec.Pods {
			j.CPU += p.CPU
		}
		for _, n := range g.PodNode {
			name := ""
			if n >= 0 {
				name = e.cluster.Nodes[n].Name
			}
			j.Nodes = append(j.Nodes, name)
		}
		if g.Started() && !j.Completed {
			r.JobsHoldingAtStall++
		} else if !g.Started() && g.Bound > 0 {
			r.JobsHoldingAtStall++
		}
		r.Jobs = append(r.Jobs, j)
	}
	r.Summarize()
	if stalled {
		r.Stalled = true
		r.StalledAt = e.lastProgress
		r.PendingAtStall = e.pending
		r.RunningAtStall = e.running
	} else {
		r.JobsHoldingAtStall = 0
	}
	return r
}
