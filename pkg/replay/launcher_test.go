package replay

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// endLog records End calls.
type endLog struct {
	mu    sync.Mutex
	ended []string
	at    []time.Time
}

func (e *endLog) end(_ context.Context, pod *corev1.Pod) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ended = append(e.ended, pod.Name)
	e.at = append(e.at, time.Now())
	return nil
}

func (e *endLog) names() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.ended...)
}

// A Job's pods end together once all have run for the hold; a Job with
// only some pods running never ends.
func TestLauncherEndsWholeJobsOnly(t *testing.T) {
	var log endLog
	l := NewLauncher(context.Background(), log.end)
	defer l.Stop()

	l.Observe(jobPod(1, 0, "node0", corev1.PodRunning)) // job g1: one of two
	l.Observe(jobPod(0, 1, "node1", corev1.PodPending)) // bound, not running yet
	l.Observe(jobPod(0, 0, "node0", corev1.PodRunning))
	time.Sleep(50 * time.Millisecond)
	if got := log.names(); len(got) != 0 {
		t.Fatalf("pods ended before their Job ran whole: %v", got)
	}
	allRunning := time.Now()
	l.Observe(jobPod(0, 1, "node1", corev1.PodRunning))
	l.Observe(jobPod(0, 1, "node1", corev1.PodRunning)) // seen again: launched once
	deadline := time.Now().Add(10 * time.Second)
	for len(log.names()) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // a second launch would show now
	got := log.names()
	if len(got) != 2 || got[0] != "g0-0" || got[1] != "g0-1" {
		t.Fatalf("ended %v, want g0-0 and g0-1 once each", got)
	}
	if held := log.at[0].Sub(allRunning); held < time.Second {
		t.Errorf("pods ended %v after all ran, before their 1 s hold", held)
	}
}

// Stop cancels holds under way: nothing ends after it.
func TestLauncherStop(t *testing.T) {
	var log endLog
	l := NewLauncher(context.Background(), log.end)
	l.Observe(jobPod(0, 0, "node0", corev1.PodRunning))
	l.Observe(jobPod(0, 1, "node1", corev1.PodRunning))
	l.Stop()
	time.Sleep(1200 * time.Millisecond)
	if got := log.names(); len(got) != 0 {
		t.Errorf("ended %v after Stop", got)
	}
}
