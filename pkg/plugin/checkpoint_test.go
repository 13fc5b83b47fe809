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

// The moved-at annotation fluence writes at binding reaches a restarted
// core in its own time, as the checkpoint does; Bind writes it back from
// the core's time unchanged.
func TestCorePodMovedAt(t *testing.T) {
	epoch := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	p := &Plugin{clock: clocktesting.NewFakePassiveClock(epoch.Add(time.Hour)), epoch: epoch}
	for _, tc := range []struct {
		name  string
		value string
		node  string
		want  int64
		ok    bool
	}{
		{"before this run", "2026-11-29T09:40:00.5Z", "n1", -1199500 * ticksPerSecond / 1000, true},
		{"unbound", "2026-11-29T09:40:00Z", "", 0, false},
		{"malformed", "an hour ago", "n1", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: map[string]string{k8sadapter.MovedAtKey: tc.value}},
				Spec: corev1.PodSpec{NodeName: tc.node}}
			cp := p.corePod(pod, true)
			if cp.HasMovedAt != tc.ok || cp.MovedAt != tc.want {
				t.Fatalf("MovedAt, HasMovedAt = %d, %v; want %d, %v", cp.MovedAt, cp.HasMovedAt, tc.want, tc.ok)
			}
			if tc.ok {
				if got := p.timeOf(cp.MovedAt).Format(time.RFC3339Nano); got != tc.value {
					t.Errorf("written back as %s; want %s", got, tc.value)
				}
			}
		})
	}
}
