package sim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// Preemption in the fluence model. With FluenceConfig.Preemption set the
// core may evict running groups of lower priority, whole, for a waiting
// group (pkg/gang/preempt.go); its Effects.Evictions are carried out as
// the plugin does: each pod is deleted with its grace period
// (FluenceConfig.EvictionGrace, DefaultEvictionGrace by default), so it
// holds its node until it is gone; the core sees it go (PodRemoved), as
// the informer shows a deleted pod. Once every evicted pod of the group
// is gone, its controller has made new pods in their place: the group
// comes back as new pods (new UIDs, created now, with the same group
// labels), which wait, whole, like any group, and must run again what
// their group's last checkpoint did not save (Env.Evict counts the work
// lost; fluence_checkpoint.go).

// PreemptionRecord is one preemption the fluence model carried out: at At,
// group By (a core group key, "sim/<name>") had the pods of Victims (the
// workload's group names) evicted; Moved are those of them the core
// moved (pkg/gang/preempt_move.go): they fitted elsewhere.
type PreemptionRecord struct {
	At      float64
	By      string
	Victims []string
	Moved   []string
	Pods    int
	// Lost is the pod-seconds of work its evictions cut short, since the
	// victims' last checkpoints (Env.Evict).
	Lost float64
}

// Moves counts the groups moved in preemptions.
func Moves(recs []PreemptionRecord) int {
	n := 0
	for _, r := range recs {
		n += len(r.Moved)
	}
	return n
}

// Preemptions returns the preemptions a fluence scheduler carried out in
// its last run (nil for other schedulers).
func Preemptions(s Scheduler) []PreemptionRecord {
	for {
		switch v := s.(type) {
		case *fluence:
			return v.preempts
		case interface{ Unwrap() Scheduler }:
			s = v.Unwrap()
		default:
			return nil
		}
	}
}

// uid is the pod's UID: "<group index>/<pod index>" for the pods the
// group arrived with, "/<generation>" added for those made in place of
// evicted ones.
func (f *fluence) uid(g *Group, i int) string {
	s := strconv.Itoa(g.ID) + "/" + strconv.Itoa(i)
	if n := f.gen[g.ID]; n > 0 {
		s += "/" + strconv.Itoa(n)
	}
	return s
}

// podName is the pod's name; a replacement's says which generation.
func (f *fluence) podName(g *Group, i int) string {
	s := g.Spec.Name + "-" + strconv.Itoa(i)
	if n := f.gen[g.ID]; n > 0 {
		s += "-r" + strconv.Itoa(n)
	}
	return s
}

// podGen parses a pod's UID: its group, pod index and generation.
func (f *fluence) podGen(uid string) (*Group, int, int, bool) {
	parts := strings.Split(uid, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return nil, 0, 0, false
	}
	nums := make([]int, 3)
	for k, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return nil, 0, 0, false
		}
		nums[k] = v
	}
	if nums[0] >= len(f.env.Groups()) || nums[1] >= len(f.env.Groups()[nums[0]].PodNode) {
		return nil, 0, 0, false
	}
	return f.env.Groups()[nums[0]], nums[1], nums[2], true
}

// grace is the eviction grace period of this run, in seconds.
func (f *fluence) grace() float64 {
	switch g := f.cfg.EvictionGrace; {
	case g < 0:
		return 0
	case g == 0:
		return DefaultEvictionGrace
	default:
		return g
	}
}

// preemptionNote describes the preemption settings for Config.
func (f *fluence) preemptionNote() string {
	p := f.cfg.Preemption
	if p == nil {
		return ""
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 120
	}
	return fmt.Sprintf(", preemption after %ds (min runtime %ds, timeout %ds; evicted pods gone in %ss)",
		p.After, p.MinRuntime, timeout, trimFloat(f.grace()))
}

// evict carries out the core's evictions, a group's pods together. An
// eviction the env refuses (a pod not bound, or evicted already) fails
// the run at the end of the event: it is the core's mistake.
func (f *fluence) evict(evs []gang.Eviction) {
	if len(evs) == 0 {
		return
	}
	var order []*Group
	pods := map[*Group][]int{}
	by := map[*Group]string{}
	moved := map[*Group]bool{}
	for _, ev := range evs {
		g, i, gen, ok := f.podGen(ev.Pod.UID)
		if !ok || gen != f.gen[g.ID] {
			f.evictErr = errors.Join(f.evictErr, fmt.Errorf("the core evicts %s (%s), which is no pod of this run", ev.Pod, ev.Pod.UID))
			continue
		}
		if _, seen := pods[g]; !seen {
			order = append(order, g)
			by[g] = ev.By
		}
		pods[g] = append(pods[g], i)
		moved[g] = moved[g] || ev.Moved
	}
	now := f.env.Now()
	for _, g := range order {
		lost := g.WorkLost
		if err := f.env.Evict(g, pods[g], f.grace()); err != nil {
			f.evictErr = errors.Join(f.evictErr, fmt.Errorf("the core evicts %s for %s: %w", g.Spec.Name, by[g], err))
			continue
		}
		n := len(f.preempts)
		if n == 0 || f.preempts[n-1].At != now || f.preempts[n-1].By != by[g] {
			f.preempts = append(f.preempts, PreemptionRecord{At: now, By: by[g]})
			n++
		}
		f.preempts[n-1].Victims = append(f.preempts[n-1].Victims, g.Spec.Name)
		if moved[g] {
			f.preempts[n-1].Moved = append(f.preempts[n-1].Moved, g.Spec.Name)
		}
		f.preempts[n-1].Pods += len(pods[g])
		f.preempts[n-1].Lost += g.WorkLost - lost
	}
}

// PodEvicted: an evicted pod is gone; the core sees it deleted. Once the
// group's last evicted pod is gone, its pods come back as new ones.
func (f *fluence) PodEvicted(g *Group, pod, _ int) error {
	now := f.env.Now()
	f.core.PodRemoved(f.uid(g, pod), toMs(now))
	for i := range g.PodNode {
		if g.Evicting(i) {
			return f.check()
		}
	}
	f.gen[g.ID]++
	f.created[g.ID] = now
	id := f.groupID(g)
	for i := range g.PodNode {
		if g.PodNode[i] >= 0 {
			continue
		}
		p := f.pod(g, i)
		p.Labeled = id
		f.fw.Add(p, id, toMs(now))
	}
	return f.check()
}
