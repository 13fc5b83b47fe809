package k8sadapter

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCheckpointOf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value *string
		want  time.Time
		ok    bool
	}{
		{name: "none"},
		{name: "utc", value: new("2026-11-29T10:00:40Z"), want: time.Date(2026, 11, 29, 10, 0, 40, 0, time.UTC), ok: true},
		{name: "offset", value: new("2026-11-29T11:00:40+01:00"), want: time.Date(2026, 11, 29, 10, 0, 40, 0, time.UTC), ok: true},
		{name: "fraction", value: new("2026-11-29T10:00:40.5Z"), want: time.Date(2026, 11, 29, 10, 0, 40, 5e8, time.UTC), ok: true},
		{name: "not rfc3339", value: new("40s ago")},
		{name: "date only", value: new("2026-11-29")},
		{name: "empty", value: new("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
			if tc.value != nil {
				pod.Annotations = map[string]string{CheckpointKey: *tc.value}
			}
			got, ok := CheckpointOf(pod)
			if ok != tc.ok || !got.Equal(tc.want) {
				t.Fatalf("CheckpointOf(%v) = %v, %v; want %v, %v", tc.value, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestCorePodMovable(t *testing.T) {
	for _, tc := range []struct {
		value *string
		want  bool
	}{
		{nil, false},
		{new("true"), true},
		{new("false"), false},
		{new("True"), false},
		{new(""), false},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: "n1"}}
		if tc.value != nil {
			pod.Annotations = map[string]string{MovableKey: *tc.value}
		}
		if got := (GraphOptions{}).CorePod(pod, true).Movable; got != tc.want {
			t.Errorf("movable=%v: Movable = %v, want %v", tc.value, got, tc.want)
		}
	}
}
