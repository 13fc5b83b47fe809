package plugin

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// permitWaits remembers until when each pod may wait at Permit, so that
// Unreserve can tell a wait that ran out from the other ends of a wait.
// When a waiting pod's time is up, the framework rejects it and calls
// Unreserve, and tells the plugin of neither; a pod deleted while it
// waits, or a victim of another plugin's preemption, is rejected and
// unreserved just the same, but before its time is up. A pod the core
// lets through or turns away is forgotten first, so only a wait that ran
// its whole course is taken for a timeout.
type permitWaits struct {
	mu       sync.Mutex
	deadline map[types.UID]time.Time
}

// start records that the pod waits until deadline: the time its wait
// began plus the timeout Permit gave the framework. The framework's timer
// starts after Permit returns, so a wait it ended is past the deadline.
func (w *permitWaits) start(uid types.UID, deadline time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.deadline == nil {
		w.deadline = map[types.UID]time.Time{}
	}
	w.deadline[uid] = deadline
}

// forget drops the pod's wait: it was let through or turned away, or it
// is gone.
func (w *permitWaits) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.deadline, uid)
}

// end drops the pod's wait and reports whether it ran out: the pod waited
// and its deadline is past.
func (w *permitWaits) end(uid types.UID, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	deadline, ok := w.deadline[uid]
	delete(w.deadline, uid)
	return ok && !now.Before(deadline)
}
