package localcluster

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

const stockConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
`

// A Job of `sleep` pods runs to completion on a cluster with the Job
// controller, simulated nodes and the stock scheduler; a kubeconfig written
// for it works; after Stop the API server's port is closed and the work
// directory is gone.
func TestClusterRunsAJobAndCleansUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	ctx := context.Background()
	c, err := Start(ctx, Options{
		JobController: true,
		NodeSim:       &NodeSimOptions{},
		Namespace:     "work",
		Nodes: []NodeSpec{
			{Name: "node-0", CPU: "2", Memory: "4Gi"},
			{Name: "node-1", CPU: "2", Memory: "4Gi", GPUs: 1, Labels: map[string]string{"rack": "r1"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			c.Stop()
		}
	}()
	if _, err := c.StartScheduler(ctx, SchedulerOptions{Name: "stock", ConfigYAML: stockConfig}); err != nil {
		t.Fatal(err)
	}

	// Through a kubeconfig, as kubectl would.
	path, err := c.WriteKubeconfig("", c.Kubeconfig("work"))
	if err != nil {
		t.Fatal(err)
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(restCfg)
	node, err := client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Status.Allocatable[GPUResource]; got.Value() != 1 || node.Labels["rack"] != "r1" {
		t.Fatalf("node-1: allocatable %v labels %v", node.Status.Allocatable, node.Labels)
	}

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "sleepers", Namespace: "work"},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](3),
			Completions: ptr.To[int32](3),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "main", Image: "busybox", Command: []string{"sleep", "1"},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
				}},
			}},
		},
	}
	if _, err := client.BatchV1().Jobs("work").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		j, err := client.BatchV1().Jobs("work").Get(ctx, "sleepers", metav1.GetOptions{})
		return err == nil && j.Status.Succeeded == 3, nil
	})
	if err != nil {
		t.Fatalf("the Job did not complete: %v", err)
	}
	recs := c.NodeSim.Records()
	if len(recs) != 3 {
		t.Fatalf("node simulator saw %d pods, want 3", len(recs))
	}
	for key, r := range recs {
		if r.Node == "" || r.Started.IsZero() || r.Finished.Sub(r.Started) < time.Second {
			t.Errorf("pod %s: %+v: not run for its 1 s sleep on a node", key, r)
		}
	}

	host := c.Config.Host[len("https://"):]
	dir := c.Dir
	c.Stop()
	stopped = true
	if conn, err := net.DialTimeout("tcp", host, time.Second); err == nil {
		conn.Close()
		t.Errorf("%s still accepts connections after Stop", host)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("work directory %s still there after Stop (%v)", dir, err)
	}
}

func TestStartRefusesUnknownGate(t *testing.T) {
	_, err := Start(context.Background(), Options{FeatureGates: map[string]bool{"NoSuchGate": true}})
	if err == nil || !strings.Contains(err.Error(), `"NoSuchGate"`) {
		t.Fatalf("err = %v, want one naming the gate", err)
	}
}

func TestNodeObjectRefusesBadQuantities(t *testing.T) {
	for _, spec := range []NodeSpec{
		{Name: "a", CPU: "four", Memory: "1Gi"},
		{Name: "b", CPU: "4", Memory: "-1Gi"},
		{CPU: "4", Memory: "1Gi"},
	} {
		if _, err := NodeObject(spec); err == nil {
			t.Errorf("NodeObject(%+v) accepted", spec)
		}
	}
}
