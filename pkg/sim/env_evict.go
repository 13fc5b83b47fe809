package sim

import (
	"fmt"
	"math"
)

// Evictions: a scheduler that preempts takes bound pods off their nodes.
//
// An evicted pod is deleted with a grace period: it stops working at
// once, but holds its node until it is gone, grace seconds later. Then
// its controller makes a new pod in its place (a Job's pod replacement
// policy Failed: the replacement comes once the old pod is gone), which is
// Pending; the env hands it back to the scheduler (Evictee.PodEvicted).
//
// A group is a gang: its work needs every pod. A group running when it
// loses a pod loses its run since its last checkpoint: the work done
// since then (pods x seconds) is lost, and once every pod is bound
// again it runs on from that checkpoint. A group that does not
// checkpoint (GroupSpec.CheckpointEvery 0) loses its whole run and needs
// its whole runtime again. Its other pods keep their nodes unless they are
// evicted too: fluence evicts a group whole; the stock model's pod-by-pod
// preemption does not, and leaves the rest of a gang holding nodes with
// nothing to do until its lost members are back. A group that had
// completed (its pods releasing their nodes) loses no work: eviction
// only hastens the release.

// DefaultEvictionGrace is the modelled time, in seconds, from an
// eviction until the pod is gone and its node free: a pod that stops on
// SIGTERM at once, well inside Kubernetes' default grace period of 30 s.
const DefaultEvictionGrace = 5.0

// Evictee is a Scheduler that evicts pods (Env.Evict).
type Evictee interface {
	// PodEvicted: pod of g, evicted, is gone from node, and a new pod
	// made in its place is Pending (g.PodNode[pod] is -1 again).
	PodEvicted(g *Group, pod, node int) error
}

// Evict evicts bound pods of one group at once (one preemption's
// victims in that group): each is gone, and its node free, grace
// seconds from now. The group counts one eviction. Evicting a pod that
// is not bound, or is being evicted already, is an error: a scheduler
// that asks it has lost track of its pods.
func (e *Env) Evict(g *Group, pods []int, grace float64) error {
	if _, ok := e.sched.(Evictee); !ok {
		return fmt.Errorf("sim: %s evicts pods but does not take them back (Evictee)", e.sched.Name())
	}
	if len(pods) == 0 {
		return nil
	}
	grace = max(grace, 0)
	seen := map[int]bool{}
	for _, pod := range pods {
		switch {
		case pod < 0 || pod >= len(g.PodNode):
			return fmt.Errorf("sim: evict %s pod %d: out of range", g.Spec.Name, pod)
		case seen[pod]:
			return fmt.Errorf("sim: evict %s pod %d: listed twice", g.Spec.Name, pod)
		case g.PodNode[pod] < 0:
			return fmt.Errorf("sim: evict %s pod %d: not bound", g.Spec.Name, pod)
		case g.evicting[pod]:
			return fmt.Errorf("sim: evict %s pod %d: already being evicted (since an earlier preemption)", g.Spec.Name, pod)
		case g.released[pod]:
			return fmt.Errorf("sim: evict %s pod %d: already released", g.Spec.Name, pod)
		}
		seen[pod] = true
	}
	g.Evictions++
	g.EvictedPods += len(pods)
	e.evictions++
	e.evictedPods += len(pods)
	if g.End >= 0 {
		// It completed: its pods are only releasing their nodes. They go
		// at the end of the grace period, if that is sooner.
		for _, pod := range pods {
			e.pushPod(e.now+grace, evRelease, g, pod)
		}
		return nil
	}
	if g.Started() {
		ran := e.now - g.Start
		kept := 0.0
		if t, ok := g.Checkpointed(e.now); ok {
			kept = t - g.Start
		}
		g.saved += kept
		g.WorkLost += float64(len(g.PodNode)) * (ran - kept)
		g.Start = -1
		g.run++
		e.runningJobs--
	}
	for _, pod := range pods {
		g.evicting[pod] = true
		e.pushPod(e.now+grace, evGone, g, pod)
	}
	e.setBound(g, g.Bound-len(pods))
	if g.Bound > 0 {
		e.evictedInPart++
	}
	return nil
}

// gone: an evicted pod left its node; a new pod takes its place, Pending.
func (e *Env) gone(g *Group, pod int) error {
	node := g.PodNode[pod]
	p := g.Spec.Pods[pod]
	e.free[node].CPU += p.CPU
	e.free[node].Memory += p.Memory
	e.free[node].GPU += p.GPU
	e.closeBinding(g, pod)
	e.usedCPU -= p.CPU
	e.running--
	e.pending++
	g.PodNode[pod] = -1
	g.evicting[pod] = false
	if err := e.sched.(Evictee).PodEvicted(g, pod, node); err != nil {
		return fmt.Errorf("sim: %s: %s pod %d evicted from %s: %w", e.sched.Name(), g.Spec.Name, pod, e.cluster.Nodes[node].Name, err)
	}
	return nil
}

// Checkpointed returns the time of the running group's last checkpoint
// at now: one every Spec.CheckpointEvery seconds of its current run
// (none at its start, which resumes from the last one, if any); false
// when it is not running or has not checkpointed in this run.
func (g *Group) Checkpointed(now float64) (float64, bool) {
	every := g.Spec.CheckpointEvery
	if every <= 0 || !g.Started() || g.End >= 0 {
		return 0, false
	}
	k := math.Floor((now - g.Start) / every)
	if k < 1 {
		return 0, false
	}
	return g.Start + k*every, true
}

// Evicting reports whether a pod of g is being evicted (gone at the end
// of its grace period).
func (g *Group) Evicting(pod int) bool { return g.evicting[pod] }

// setBound sets the group's count of bound pods (those being evicted do
// not count), keeping the count of groups bound in part and the
// pod-seconds they held.
func (e *Env) setBound(g *Group, n int) {
	part := func(b int) int {
		if b > 0 && b < len(g.PodNode) {
			return b
		}
		return 0
	}
	old := g.Bound
	if d := part(n) - part(old); d != 0 {
		e.partialArea += float64(e.partialPods) * (e.now - e.partialSince)
		e.partialSince = e.now
		e.partialPods += d
	}
	switch {
	case part(n) > 0 && part(old) == 0:
		e.partial++
	case part(n) == 0 && part(old) > 0:
		e.partial--
	}
	g.Bound = n
}

// sampleEvict records, after the events of one time, how many groups are
// bound in part: within one time a group binding pod after pod is not
// counted.
func (e *Env) sampleEvict() {
	e.partialMax = max(e.partialMax, e.partial)
}

// partialPodSeconds is the pod-seconds partly bound groups held so far.
func (e *Env) partialPodSeconds() float64 {
	return e.partialArea + float64(e.partialPods)*(e.now-e.partialSince)
}
