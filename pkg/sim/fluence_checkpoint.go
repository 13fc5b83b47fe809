package sim

import "github.com/fluence-sched/fluence/pkg/gang"

// Checkpoints and movable groups in the fluence model. A group that
// checkpoints (GroupSpec.CheckpointEvery) saves its work every so many
// seconds of its run; its workload then writes the time on its pods
// (the fluence.flux-framework.org/checkpointed-at annotation) and the
// informer shows the core the pods so changed: the core's preemption
// counts only the work since then as lost (pkg/gang/preempt_cost.go). A
// movable group's pods carry the movable annotation from their creation.
// FluenceConfig.HideCheckpoints leaves both annotations off. Pods made
// in place of evicted ones carry no checkpoint until their group's run
// makes one (the env resumes the run from the last; the core counts a
// checkpoint older than the run as none).

// annotate sets on a pod of g what its annotations tell the core: its
// group's last checkpoint, in engine time, and whether it is movable.
func (f *fluence) annotate(g *Group, p *gang.Pod) {
	if f.cfg.HideCheckpoints {
		return
	}
	p.Movable = g.Spec.Movable
	if t, ok := g.Checkpointed(f.env.Now()); ok {
		p.Checkpointed, p.HasCheckpoint = toMs(t), true
	}
}

// checkpoints shows the core the bound pods of every running group that
// checkpointed since the core last saw them, before it schedules: as
// the informer shows an annotation's update.
func (f *fluence) checkpoints() {
	now := f.env.Now()
	for _, g := range f.ckpt {
		t, ok := g.Checkpointed(now)
		if !ok || f.told[g.ID] == t {
			continue
		}
		f.told[g.ID] = t
		id := f.groupID(g)
		for i, n := range g.PodNode {
			if n < 0 || g.Evicting(i) {
				continue
			}
			// The bound pod as the informer shows it: its group's labels
			// and its allocation annotation, as bound, and the new time.
			p := f.pod(g, i)
			p.Labeled, p.Allocation = id, f.core.Record(p.UID)
			f.core.PodSeen(p, toMs(now))
		}
	}
}

// checkpointing lists the groups that checkpoint, for checkpoints; none
// when the core is not to see them.
func (f *fluence) checkpointing() []*Group {
	var out []*Group
	for _, g := range f.env.Groups() {
		if g.Spec.CheckpointEvery > 0 && !f.cfg.HideCheckpoints {
			out = append(out, g)
		}
	}
	return out
}
