package plugin

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

func TestPodEventHint(t *testing.T) {
	f := newClusterFixture(t, Args{})
	f.nodes(8, 3)
	p := &Plugin{c: f.c}
	big := f.pods("big", 3, 1)
	if v := f.schedule(big[0], gid("big", 50)); !v.final {
		t.Fatalf("a group of 50 on 24 cores was not rejected: %+v", v)
	}
	f.schedule(big[1], gid("big", 50))
	waiting := f.pods("small", 1, 1)[0]
	if v := f.schedule(waiting, gid("small", 2)); v.final || v.node != "" {
		t.Fatalf("the first pod of a group of 2: %+v", v)
	}
	stranger := f.pod("stranger", 1)

	hint := func(waiting *corev1.Pod, oldObj, newObj *corev1.Pod) fwk.QueueingHint {
		t.Helper()
		var o, n any
		if oldObj != nil {
			o = oldObj
		}
		if newObj != nil {
			n = newObj
		}
		h, err := p.podEventHint(klog.Background(), waiting, o, n)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	for _, tc := range []struct {
		name           string
		waiting        *corev1.Pod
		oldObj, newObj *corev1.Pod
		want           fwk.QueueingHint
	}{
		{"a rejected group skips another pod's creation", big[0], nil, stranger, fwk.QueueSkip},
		{"a rejected group skips another pod's deletion", big[0], stranger, nil, fwk.QueueSkip},
		{"a rejected group hears its own members", big[0], big[1], nil, fwk.Queue},
		{"a waiting group hears every pod", waiting, nil, stranger, fwk.Queue},
		{"an unknown pod hears every pod", f.pod("unknown", 1), nil, stranger, fwk.Queue},
	} {
		if got := hint(tc.waiting, tc.oldObj, tc.newObj); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}

	// A member leaving clears the rejection: the group is judged again on
	// the next event.
	f.c.onPodGone(big[1], &effects{})
	if got := hint(big[0], nil, stranger); got != fwk.Queue {
		t.Errorf("after a member left, another pod's creation: %v, want Queue", got)
	}
}
