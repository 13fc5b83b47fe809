package plugin

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

// The checkpointed-at annotation, and the moved-at one fluence writes at
// binding, reach the core in its own time: ticks since the plugin's
// epoch, negative before it; only on a bound pod, and not when malformed.
// Bind writes moved-at back from the core's time unchanged.
func TestCorePodTimes(t *testing.T) {
	epoch := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	p := &Plugin{clock: clocktesting.NewFakePassiveClock(epoch.Add(time.Hour)), epoch: epoch}
	read := map[string]func(gang.Pod) (int64, bool){
		k8sadapter.CheckpointKey: func(cp gang.Pod) (int64, bool) { return cp.Checkpointed, cp.HasCheckpoint },
		k8sadapter.MovedAtKey:    func(cp gang.Pod) (int64, bool) { return cp.MovedAt, cp.HasMovedAt },
	}
	for _, tc := range []struct {
		name  string
		key   string
		value string
		node  string
		want  int64
		ok    bool
	}{
		{"after the epoch", k8sadapter.CheckpointKey, "2026-11-29T10:00:40Z", "n1", 40 * ticksPerSecond, true},
		{"before it", k8sadapter.CheckpointKey, "2026-11-29T09:59:00Z", "n1", -60 * ticksPerSecond, true},
		{"another zone", k8sadapter.CheckpointKey, "2026-11-29T11:00:40+01:00", "n1", 40 * ticksPerSecond, true},
		{"unbound", k8sadapter.CheckpointKey, "2026-11-29T10:00:40Z", "", 0, false},
		{"malformed", k8sadapter.CheckpointKey, "yesterday", "n1", 0, false},
		{"moved before this run", k8sadapter.MovedAtKey, "2026-11-29T09:40:00.5Z", "n1", -1199500 * ticksPerSecond / 1000, true},
		{"moved, unbound", k8sadapter.MovedAtKey, "2026-11-29T09:40:00Z", "", 0, false},
		{"moved, malformed", k8sadapter.MovedAtKey, "an hour ago", "n1", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: map[string]string{tc.key: tc.value}},
				Spec: corev1.PodSpec{NodeName: tc.node}}
			got, ok := read[tc.key](p.corePod(pod, true))
			if ok != tc.ok || got != tc.want {
				t.Fatalf("%s: %d, %v; want %d, %v", tc.key, got, ok, tc.want, tc.ok)
			}
			if tc.key == k8sadapter.MovedAtKey && ok {
				if back := p.timeOf(got).Format(time.RFC3339Nano); back != tc.value {
					t.Errorf("written back as %s; want %s", back, tc.value)
				}
			}
		})
	}
}
