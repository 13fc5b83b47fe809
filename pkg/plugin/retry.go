package plugin

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// retrySet holds pods whose group could not be resolved yet for a reason
// that passes by itself: the owner Job or the PodGroup is not in a cache
// yet, or a read failed. The framework parks such pods until a registered
// event comes, and nothing the plugin registers fires when a PodGroup or a
// Job appears; so the loop wakes them itself, about once a second, until
// their group resolves or they go away.
type retrySet struct {
	mu   sync.Mutex
	pods map[types.UID]*corev1.Pod
}

func (r *retrySet) add(p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pods == nil {
		r.pods = map[types.UID]*corev1.Pod{}
	}
	r.pods[p.UID] = p
}

func (r *retrySet) remove(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pods, uid)
}

// take empties the set: a pod that fails again is added again by
// PreFilter.
func (r *retrySet) take() []gang.Ref {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []gang.Ref
	for uid, p := range r.pods {
		out = append(out, gang.Ref{UID: string(uid), Namespace: p.Namespace, Name: p.Name})
		delete(r.pods, uid)
	}
	return out
}
