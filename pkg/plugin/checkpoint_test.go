package plugin

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

// The checkpointed-at annotation reaches the core in its own time: ticks
// since the plugin's epoch, negative before it; only on a bound pod,
// and not when malformed.
func TestCorePodCheckpoint(t *testing.T) {
	epoch := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	p := &Plugin{clock: clocktesting.NewFakePassiveClock(epoch.Add(time.Hour)), epoch: epoch}
	for _, tc := range []struct {
		name  string
		value string
		node  string
		want  int64
		ok    bool
	}{
		{"after the epoch", "2026-11-29T10:00:40Z", "n1", 40 * ticksPerSecond, true},
		{"before it", "2026-11-29T09:59:00Z", "n1", -60 * ticksPerSecond, true},
		{"another zone", "2026-11-29T11:00:40+01:00", "n1", 40 * ticksPerSecond, true},
		{"unbound", "2026-11-29T10:00:40Z", "", 0, false},
		{"malformed", "yesterday", "n1", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: map[string]string{k8sadapter.CheckpointKey: tc.value}},
				Spec: corev1.PodSpec{NodeName: tc.node}}
			cp := p.corePod(pod, true)
			if cp.HasCheckpoint != tc.ok || cp.Checkpointed != tc.want {
				t.Fatalf("Checkpointed, HasCheckpoint = %d, %v; want %d, %v", cp.Checkpointed, cp.HasCheckpoint, tc.want, tc.ok)
			}
		})
	}
}
