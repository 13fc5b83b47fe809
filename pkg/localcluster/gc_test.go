package localcluster

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// Deleting a Job deletes its running pods, and deleting a namespace
// deletes what is in it, as kubectl delete does on a real cluster.
func TestDeleteCascades(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	ctx := context.Background()
	c, err := Start(ctx, Options{
		JobController: true, GarbageCollector: true,
		NodeSim:   &NodeSimOptions{},
		Namespace: "work",
		Nodes:     []NodeSpec{{Name: "node-0", CPU: "4", Memory: "4Gi"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if _, err := c.StartScheduler(ctx, SchedulerOptions{Name: "stock", ConfigYAML: stockConfig}); err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "long", Namespace: "work"},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "main", Image: "busybox", Command: []string{"sleep", "3600"},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
				}},
			}},
		},
	}
	if _, err := c.Client.BatchV1().Jobs("work").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := func(ns string) (int, error) {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		n := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
		return n, nil
	}
	poll := func(what string, done func(context.Context) (bool, error)) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, done); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	poll("the Job's two pods did not run", func(context.Context) (bool, error) {
		n, err := running("work")
		return n == 2, err
	})
	// kubectl delete job: background propagation, the garbage collector
	// deletes the pods.
	if err := c.Client.BatchV1().Jobs("work").Delete(ctx, "long", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	poll("the deleted Job's pods are still there", func(context.Context) (bool, error) {
		pods, err := c.Client.CoreV1().Pods("work").List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, err
	})

	// kubectl delete namespace: the namespace controller empties it and
	// removes its finalizer.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scratch"}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "scratch"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"sleep", "3600"}}}},
	}
	if _, err := c.Client.CoreV1().Pods("scratch").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("the scratch pod did not run", func(context.Context) (bool, error) {
		n, err := running("scratch")
		return n == 1, err
	})
	if err := c.Client.CoreV1().Namespaces().Delete(ctx, "scratch", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("the deleted namespace is still there", func(context.Context) (bool, error) {
		_, err := c.Client.CoreV1().Namespaces().Get(ctx, "scratch", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}
