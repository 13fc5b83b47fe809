package plugin

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

// onNode records an added or changed node. Only changes the graph shows
// (capacity, labels, taints, up or down) cost a rebuild; heartbeats do not.
func (c *cluster) onNode(n *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.nodes[n.Name]
	c.nodes[n.Name] = n
	c.nodesSorted = nil
	if old == nil || graphChanged(old, n) {
		c.dirty = true
	}
}

func graphChanged(a, b *corev1.Node) bool {
	return k8sadapter.NodeDown(a) != k8sadapter.NodeDown(b) ||
		!maps.Equal(a.Labels, b.Labels) ||
		!equality.Semantic.DeepEqual(a.Status.Allocatable, b.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(a.Spec.Taints, b.Spec.Taints)
}

func (c *cluster) onNodeGone(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.nodes[name]; ok {
		delete(c.nodes, name)
		c.nodesSorted = nil
		c.dirty = true
	}
}

// onPod records an added or changed pod: bound pods consume resources,
// whoever bound them; finished pods release them.
func (c *cluster) onPod(p *corev1.Pod, fx *effects) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if podDone(p) {
		c.podGone(p, fx)
		return
	}
	if p.Spec.NodeName == "" {
		if _, known := c.podKey[p.UID]; !known && c.owns(p) && p.DeletionTimestamp == nil {
			// Count the pods of labelled groups as they are created, so
			// the first of them to be scheduled finds the group whole.
			if id, ok := LabeledGroup(p); ok {
				if gr := c.groups[id.Key]; gr == nil || gr.id.Size == id.Size {
					c.addMember(p, id)
				}
			}
			return
		}
		if key, ok := c.podKey[p.UID]; ok {
			if p.DeletionTimestamp != nil {
				c.podGone(p, fx)
				return
			}
			if gr := c.groups[key]; gr != nil {
				if _, member := gr.members[p.UID]; member {
					gr.members[p.UID] = p
				}
			}
		}
		return
	}
	if key, ok := c.podKey[p.UID]; ok {
		if gr := c.groups[key]; gr != nil {
			if _, s := gr.slotOf(p.UID); s != nil && s.node == p.Spec.NodeName {
				s.bound, s.reserved = true, true
				gr.members[p.UID] = p
				return
			}
			// A member bound without this scheduler's say: by hand, by
			// another scheduler, or by this scheduler's previous run (a
			// binding sent just before a restart lands late). It leaves
			// what it held here and counts where it is: adopted from its
			// record, or foreign.
			c.leaveAllocs(gr, p, fx)
			delete(gr.members, p.UID)
			delete(c.podKey, p.UID)
		}
	}
	if c.owns(p) && p.Annotations[AllocationKey] != "" {
		c.adopt(p)
		return
	}
	c.addForeign(p, fx)
}

func (c *cluster) addForeign(p *corev1.Pod, fx *effects) {
	node := p.Spec.NodeName
	req := c.opts.PodRequests(p)
	if old, ok := c.foreign[node][p.UID]; ok && old == req {
		return
	}
	if c.foreign[node] == nil {
		c.foreign[node] = map[types.UID]k8sadapter.Requests{}
	}
	c.foreign[node][p.UID] = req
	if !c.dirty {
		c.placeForeign(node)
		c.withdrawOverloaded(node, fx)
	}
}

// withdrawOverloaded withdraws the unbound allocations on a node another
// scheduler just filled: it bound a pod there before this scheduler's
// pods were bound (it cannot see them until then). Withdrawn groups are
// placed again elsewhere.
func (c *cluster) withdrawOverloaded(node string, fx *effects) {
	if !c.overloaded[node] {
		return
	}
	for _, gr := range c.sortedGroups() {
		for _, a := range slices.Clone(gr.allocs) {
			if !a.running || a.anyBound() {
				continue
			}
			if slices.ContainsFunc(a.slots, func(s *slot) bool { return s.node == node }) {
				c.withdraw(gr, a, "another scheduler bound a pod to "+node+" first", fx)
			}
		}
	}
	c.placeForeign(node) // now that the node's own allocations are gone
}

// leaveAllocs takes a pod bound elsewhere out of its group's allocations.
// A queued request counting it is dropped (the group asks again without
// it). Its slot is withdrawn with the whole allocation while nothing of it
// is bound; otherwise the slot stays held, marked done, until the
// allocation ends, since its node's share was planned with it.
func (c *cluster) leaveAllocs(gr *group, p *corev1.Pod, fx *effects) {
	c.detach(gr, p.UID, func(a *alloc, s *slot) {
		s.pod = ""
		if a.anyBound() {
			s.done = true
			return
		}
		c.withdraw(gr, a, fmt.Sprintf("pod %s was bound to %s, not to %s where the group was placed", describePod(p), p.Spec.NodeName, s.node), fx)
	})
}

// adopt takes back a pod this scheduler bound before a restart: bound pods
// with the same allocation annotation form one allocation, replayed at
// their nodes by the next rebuild.
func (c *cluster) adopt(p *corev1.Pod) {
	rec := p.Annotations[AllocationKey]
	key := rec
	if i := strings.LastIndexByte(rec, '@'); i > 0 {
		key = rec[:i]
	}
	gr := c.groups[key]
	if gr == nil {
		ns, name, _ := strings.Cut(key, "/")
		gr = newGroup(GroupID{Namespace: ns, Name: name, Key: key})
		c.groups[key] = gr
	}
	c.setSortKey(key, p.UID, p.CreationTimestamp.Time)
	var a *alloc
	for _, x := range gr.allocs {
		if x.recorded == rec {
			a = x
		}
	}
	if a == nil {
		dur, err := k8sadapter.DurationOf(p)
		if err != nil || dur == 0 {
			dur = c.cfg.DefaultDuration
		}
		a = &alloc{id: c.newID(), running: true, recorded: rec, start: c.now(), dur: dur}
		gr.allocs = append(gr.allocs, a)
		c.byAlloc[a.id] = gr
	}
	a.slots = append(a.slots, &slot{
		shape: k8sadapter.PodShape(c.opts.PodRequests(p)),
		node:  p.Spec.NodeName, pod: p.UID, reserved: true, bound: true,
	})
	gr.members[p.UID] = p
	c.podKey[p.UID] = key
	c.dirty = true
}

// onPodGone handles a deleted pod.
func (c *cluster) onPodGone(p *corev1.Pod, fx *effects) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.podGone(p, fx)
}

// podGone releases what a finished or deleted pod held. A group's
// allocation is released when every pod holding it ended, never at the
// first; a pod that goes away before its group was bound withdraws the
// whole allocation.
func (c *cluster) podGone(p *corev1.Pod, fx *effects) {
	if node := p.Spec.NodeName; node != "" {
		if _, ok := c.foreign[node][p.UID]; ok {
			delete(c.foreign[node], p.UID)
			if !c.dirty {
				c.placeForeign(node)
				c.q.Freed()
			}
			return
		}
	}
	key, ok := c.podKey[p.UID]
	if !ok {
		return
	}
	delete(c.podKey, p.UID)
	c.dropSortPod(p.UID)
	gr := c.groups[key]
	if gr == nil {
		return
	}
	delete(gr.members, p.UID)
	if gr.state == invalid || gr.state == rejected {
		gr.state, gr.reason, gr.lastEvent = gathering, "", ""
	}
	c.detach(gr, p.UID, func(a *alloc, s *slot) {
		switch {
		case s.bound:
			s.done = true
		case !a.anyBound():
			s.pod = "" // gone: nothing to turn away at Permit
			c.withdraw(gr, a, fmt.Sprintf("pod %s went away before its group was bound", describePod(p)), fx)
		default:
			s.pod = "" // vacant: a replacement pod of the same shape takes it
		}
	})
	if len(gr.members) == 0 && len(gr.allocs) == 0 {
		delete(c.groups, key)
		c.dropSortKey(key)
	}
}

// withdraw cancels an allocation none of whose pods is bound yet: the
// group is placed whole or not at all. Pods waiting at Permit are turned
// away; every pod of the group tries again from the start.
func (c *cluster) withdraw(gr *group, a *alloc, why string, fx *effects) {
	if c.q != nil {
		_ = c.q.Remove(a.id)
	}
	for _, s := range a.slots {
		if s.pod == "" {
			continue
		}
		if s.reserved {
			fx.reject = append(fx.reject, s.pod)
		}
		if p := gr.members[s.pod]; p != nil {
			fx.activatePod(p)
		}
	}
	fx.rejectMsg = "fluence: allocation of pod group " + gr.id.Key + " withdrawn: " + why
	c.dropAlloc(gr, a)
	c.explain(gr, corev1.EventTypeWarning, "FluenceGroupWithdrawn", fmt.Sprintf("pod group %s: allocation withdrawn, the group is placed again: %s", gr.id.Key, why), fx)
}

// detach takes a pod out of its group's allocations. A queued request
// counting it is dropped (the group asks again without it); settle decides
// what becomes of each placed slot the pod held; an allocation left with
// nothing live is dropped.
func (c *cluster) detach(gr *group, uid types.UID, settle func(a *alloc, s *slot)) {
	for _, a := range slices.Clone(gr.allocs) {
		if !a.running {
			if slices.Contains(a.pods, uid) {
				_ = c.q.Remove(a.id)
				c.dropAlloc(gr, a)
			}
			continue
		}
		for _, s := range a.slots {
			if s.pod == uid {
				settle(a, s)
			}
		}
		if c.byAlloc[a.id] != nil && a.finished() {
			if c.q != nil {
				_ = c.q.Remove(a.id)
			}
			c.dropAlloc(gr, a)
		}
	}
}
