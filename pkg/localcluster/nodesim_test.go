package localcluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// A deleted pod is stopped as a kubelet stops it: set Failed (exit code
// 143) before it is removed, so an owner's finalizer sees it end; a pod
// that drains stays Running through its grace period, and a delete with
// no grace ends it at once.
func TestNodeSimStopsDeletedPods(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	ctx := context.Background()
	c, err := Start(ctx, Options{
		NodeSim:   &NodeSimOptions{},
		Namespace: "work",
		Nodes:     []NodeSpec{{Name: "node-0", CPU: "4", Memory: "4Gi"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	pods := c.Client.CoreV1().Pods("work")
	pod := func(name string, drain bool) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "work", Finalizers: []string{"example.com/count-me"}},
			Spec: corev1.PodSpec{
				NodeName:                      "node-0",
				RestartPolicy:                 corev1.RestartPolicyNever,
				TerminationGracePeriodSeconds: ptr.To[int64](600),
				Containers: []corev1.Container{{Name: "main", Image: "busybox",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			},
		}
		if drain {
			p.Annotations = map[string]string{DrainAnnotation: "true"}
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	phase := func(name string) (corev1.PodPhase, *corev1.Pod) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Status.Phase, p
	}
	waitPhase := func(name string, want corev1.PodPhase) *corev1.Pod {
		t.Helper()
		var got *corev1.Pod
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			var ph corev1.PodPhase
			ph, got = phase(name)
			return ph == want, nil
		})
		if err != nil {
			t.Fatalf("pod %s is %s; want %s", name, got.Status.Phase, want)
		}
		return got
	}
	release := func(name string) {
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := pods.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	pod("plain", false)
	pod("drains", true)
	waitPhase("plain", corev1.PodRunning)
	waitPhase("drains", corev1.PodRunning)
	for _, name := range []string{"plain", "drains"} {
		if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// plain stops at once; its finalizer keeps it, ended.
	p := waitPhase("plain", corev1.PodFailed)
	if cs := p.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 143 {
		t.Errorf("plain's containers: %+v; want one terminated with exit code 143", cs)
	}
	// drains still runs, within its 600 s grace period, after plain ended.
	if ph, _ := phase("drains"); ph != corev1.PodRunning {
		t.Errorf("drains is %s while plain has ended; want Running through its grace period", ph)
	}
	// Deleted again with no grace, it ends at once.
	if err := pods.Delete(ctx, "drains", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitPhase("drains", corev1.PodFailed)

	// Their owner lets go: they are removed.
	for _, name := range []string{"plain", "drains"} {
		release(name)
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			_, err := pods.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("pod %s is still there after its finalizer went", name)
		}
	}
}
