package plugin

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// podEventHint tells the scheduling queue whether a pod event can help a
// waiting pod. A group that can never fit (rejected) or whose pods disagree
// (invalid) is only changed by its own members leaving, or by nodes, so
// another pod coming or going must not send its pods round the scheduling
// cycle again: on a busy cluster every pod creation did, each time with a
// new FailedScheduling event. Every other waiting pod is queued as before.
func (p *Plugin) podEventHint(_ klog.Logger, waiting *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	other, _ := newObj.(*corev1.Pod)
	if other == nil {
		other, _ = oldObj.(*corev1.Pod)
	}
	if other == nil {
		return fwk.Queue, nil
	}
	if p.c.settledApartFrom(waiting, other) {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// settledApartFrom reports whether waiting's group is rejected or invalid
// and other is not one of its members.
func (c *cluster) settledApartFrom(waiting, other *corev1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	key, ok := c.podKey[waiting.UID]
	if !ok {
		return false
	}
	gr := c.groups[key]
	if gr == nil || (gr.state != rejected && gr.state != invalid) {
		return false
	}
	otherKey, known := c.podKey[other.UID]
	return !known || otherKey != key
}
