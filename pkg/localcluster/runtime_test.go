package localcluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodRuntime(t *testing.T) {
	pod := func(ann string, cmds ...[]string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
		if ann != "" {
			p.Annotations = map[string]string{RuntimeAnnotation: ann}
		}
		for _, c := range cmds {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c", Command: c})
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		want    time.Duration
		ok, err bool
	}{
		{"annotation", pod("1500ms"), 1500 * time.Millisecond, true, false},
		{"annotation wins over sleep", pod("2s", []string{"sleep", "30"}), 2 * time.Second, true, false},
		{"bad annotation", pod("soon"), 0, false, true},
		{"negative annotation", pod("-1s"), 0, false, true},
		{"sleep", pod("", []string{"sleep", "30"}), 30 * time.Second, true, false},
		{"sleep fraction", pod("", []string{"/bin/sleep", "0.5"}), 500 * time.Millisecond, true, false},
		{"sleep minutes", pod("", []string{"sleep", "2m"}), 2 * time.Minute, true, false},
		{"sh -c", pod("", []string{"sh", "-c", "sleep 7"}), 7 * time.Second, true, false},
		{"longest container", pod("", []string{"sleep", "3"}, []string{"sleep", "9"}), 9 * time.Second, true, false},
		{"no sleep runs forever", pod("", []string{"lmp", "-in", "in.reaxc"}), 0, false, false},
		{"sh -c with more", pod("", []string{"sh", "-c", "sleep 3; echo done"}), 0, false, false},
		{"nothing", pod(""), 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok, err := PodRuntime(tc.pod)
			if (err != nil) != tc.err || ok != tc.ok || d != tc.want {
				t.Errorf("PodRuntime = %v, %v, %v; want %v, %v, error %v", d, ok, err, tc.want, tc.ok, tc.err)
			}
		})
	}
}
