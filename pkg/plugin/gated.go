package plugin

import (
	"cmp"
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/fluence-sched/fluence/pkg/inspect"
)

// Groups whose pods all wait for their scheduling gates.
//
// kube-scheduler hands no pod with scheduling gates to its plugins, so a
// group whose pods are all gated (a Kueue workload not admitted yet) never
// reaches the core's groups: the core knows only the pods it was told
// about. The inspection API would then say it knows no such group, while
// the user sees the pods. It answers instead from the informer of this
// profile's pods, whose index of gated pods (gatedIndex) makes the answer
// cost the gated pods, not every pod: the groups those pods resolve to
// that the core does not know are listed in state gated, and explained as
// waiting for their gates. The core is not involved: what it decides
// still depends only on what it was told.

// gatedIndex indexes this profile's pods that wait for their scheduling
// gates by namespace.
const gatedIndex = "fluence.gated"

func gatedIndexFunc(o any) ([]string, error) {
	if pod, ok := o.(*corev1.Pod); ok && waitsForGates(pod) {
		return []string{pod.Namespace}, nil
	}
	return nil, nil
}

// waitsForGates reports whether the pod waits for its scheduling gates to
// be scheduled, as the core counts it (gang.Core.PodSeen): it has gates,
// no node, has not ended and is not being deleted.
func waitsForGates(p *corev1.Pod) bool {
	return len(p.Spec.SchedulingGates) > 0 && !unscheduledGone(p)
}

// unscheduledGone reports whether the pod has a node, ended or is being
// deleted: nothing a scheduler will place.
func unscheduledGone(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// gatedPods returns this profile's pods of the namespace ("" for all) that
// wait for their scheduling gates; none without the informer of this
// profile's pods.
func (p *Plugin) gatedPods(namespace string) []*corev1.Pod {
	if p.gated == nil {
		return nil
	}
	namespaces := []string{namespace}
	if namespace == "" {
		namespaces = p.gated.ListIndexFuncValues(gatedIndex)
	}
	var out []*corev1.Pod
	for _, ns := range namespaces {
		objs, err := p.gated.ByIndex(gatedIndex, ns)
		if err != nil {
			return nil
		}
		for _, o := range objs {
			if pod, ok := o.(*corev1.Pod); ok && p.owns(pod) && waitsForGates(pod) {
				out = append(out, pod)
			}
		}
	}
	return out
}

// gatedGroups returns the groups of the namespace ("" for all) that have
// pods waiting for their scheduling gates and that the core does not know
// (known reports the groups it does), in key order. A pod whose group
// cannot be resolved is left out: its PreFilter would say why once its
// gates are lifted.
func (p *Plugin) gatedGroups(ctx context.Context, known func(key string) bool, namespace string) []inspect.GatedGroup {
	if p.res == nil {
		return nil
	}
	byKey := map[string]*inspect.GatedGroup{}
	for _, pod := range p.gatedPods(namespace) {
		id, err := p.res.Resolve(ctx, pod)
		if err != nil {
			continue
		}
		if known(id.Key) {
			continue
		}
		prio, created := corev1helpers.PodPriority(pod), pod.CreationTimestamp.Time
		g := byKey[id.Key]
		if g == nil {
			g = &inspect.GatedGroup{ID: id, Priority: prio, Created: created}
			byKey[id.Key] = g
		}
		g.Priority = max(g.Priority, prio)
		if created.Before(g.Created) {
			g.Created = created
		}
		var gates []string
		for _, gate := range pod.Spec.SchedulingGates {
			gates = append(gates, gate.Name)
		}
		g.Pods = append(g.Pods, inspect.GatedPod{Name: pod.Name, Gates: gates})
	}
	out := make([]inspect.GatedGroup, 0, len(byKey))
	for _, g := range byKey {
		slices.SortFunc(g.Pods, func(a, b inspect.GatedPod) int { return cmp.Compare(a.Name, b.Name) })
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b inspect.GatedGroup) int { return cmp.Compare(a.ID.Key, b.ID.Key) })
	return out
}

// countUngated counts this profile's pods of the group without gates that
// nothing scheduled yet: for a group the core does not know, the pods it
// has not counted either.
func (p *Plugin) countUngated(ctx context.Context, g *inspect.GatedGroup) {
	lister := p.ownPods
	if lister == nil {
		lister = p.pods
	}
	if lister == nil || p.res == nil {
		return
	}
	pods, err := lister.Pods(g.ID.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pod := range pods {
		if !p.owns(pod) || len(pod.Spec.SchedulingGates) > 0 || unscheduledGone(pod) {
			continue
		}
		if id, err := p.res.Resolve(ctx, pod); err == nil && id.Key == g.ID.Key {
			g.Ungated++
		}
	}
}
