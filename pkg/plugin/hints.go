package plugin

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

func typesUID(s string) types.UID { return types.UID(s) }

// hintSet holds the pending pods whose group the core knows: the core
// wakes them itself when their group is placed, withdrawn, or may be
// placed again (its own pods arrive or leave, resources are freed, nodes
// change). It has its own lock, never held while calling out, because the
// framework asks the hints under its queue's lock.
type hintSet struct {
	mu   sync.RWMutex
	pods map[types.UID]bool
}

func (h *hintSet) add(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pods == nil {
		h.pods = map[types.UID]bool{}
	}
	h.pods[uid] = true
}

func (h *hintSet) remove(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.pods, uid)
}

func (h *hintSet) has(uid types.UID) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.pods[uid]
}

// podEventHint tells the scheduling queue whether another pod's event can
// help a waiting pod. A pod whose group the core knows skips it: the core
// sees the same event and wakes exactly the pods it unblocks, so a busy
// cluster does not send every waiting pod round the cycle on every pod
// event. A pod the core does not know yet is queued.
func (p *Plugin) podEventHint(_ klog.Logger, waiting *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	if other, ok := newObj.(*corev1.Pod); ok && other.UID == waiting.UID {
		return fwk.Queue, nil // its own labels changed: its group may have
	}
	if p.hints.has(waiting.UID) {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}
