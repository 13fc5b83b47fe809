package integration

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// gpuResource is the extended resource the tests use for GPUs.
const gpuResource = localcluster.GPUResource

// runtimeAnnotation gives a test pod's run time on a simulated node.
const runtimeAnnotation = localcluster.RuntimeAnnotation

// testNamespace is created in every cluster.
const testNamespace = "fluence-test"

// itDisabledAdmission: as Kubernetes' own integration tests, and Priority
// too, since the tests set pods' priority directly.
var itDisabledAdmission = []string{"ServiceAccount", "TaintNodesByCondition", "Priority", "StorageObjectInUseProtection"}

// cluster is one kube-apiserver of the local control plane
// (pkg/localcluster, with its own prefix in the test binary's etcd) plus
// whatever a test starts against it.
type cluster struct {
	t      testing.TB
	Ctx    context.Context // canceled when the test's cleanup starts
	Client kubernetes.Interface
	Config *rest.Config // admin credentials, no client-side rate limit
	NS     string
	lc     *localcluster.Cluster

	schedulers atomic.Int32 // numbers the schedulers for user agents and loggers
}

// newCluster starts a fresh kube-apiserver for t. Everything is torn down by
// t.Cleanup: first the cluster context is canceled (stopping schedulers, the
// node simulator and the invariant checker), then the control plane is
// stopped. It skips the test with -short.
func newCluster(t testing.TB) *cluster {
	t.Helper()
	return startCluster(t, localcluster.Options{})
}

// newFullCluster is newCluster with further kube-apiserver flags. (Every
// cluster is the complete kube-apiserver, CRDs included.)
func newFullCluster(t testing.TB, flags ...string) *cluster {
	t.Helper()
	return startCluster(t, localcluster.Options{APIServerFlags: flags})
}

// startCluster starts a local cluster on the shared etcd with opts, the
// test namespace and the admission plugins the tests expect.
func startCluster(t testing.TB, opts localcluster.Options) *cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctx = klog.NewContext(ctx, klog.Background().WithName(t.Name()))
	opts.EtcdURL = sharedEtcdURL
	opts.Namespace = testNamespace
	if opts.DisabledAdmission == nil {
		opts.DisabledAdmission = itDisabledAdmission
	}
	lc, err := localcluster.Start(ctx, opts)
	if err != nil {
		cancel()
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		lc.Stop()
	})
	return &cluster{t: t, Ctx: ctx, Client: lc.Client, Config: lc.Config, NS: testNamespace, lc: lc}
}

// newClient returns a client with its own user agent, sharing c.Config's
// credentials and (absent) rate limit.
func (c *cluster) newClient(userAgent string) kubernetes.Interface {
	cfg := rest.CopyConfig(c.Config)
	rest.AddUserAgent(cfg, userAgent)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		c.t.Fatalf("creating client %s: %v", userAgent, err)
	}
	return client
}

// addNode creates a Ready node with capacity = allocatable = {cpu, memory,
// 110 pods, gpus × nvidia.com/gpu when gpus > 0}.
func (c *cluster) addNode(name string, cpu string, memory string, gpus int, labels map[string]string) *corev1.Node {
	c.t.Helper()
	node, err := c.lc.AddNode(c.Ctx, localcluster.NodeSpec{Name: name, CPU: cpu, Memory: memory, GPUs: gpus, Labels: labels})
	if err != nil {
		c.t.Fatal(err)
	}
	return node
}

// addNodes creates n GPU-less nodes named prefix-0 … prefix-(n-1).
func (c *cluster) addNodes(prefix string, n int, cpu, memory string) []*corev1.Node {
	c.t.Helper()
	nodes := make([]*corev1.Node, 0, n)
	for i := range n {
		nodes = append(nodes, c.addNode(fmt.Sprintf("%s-%d", prefix, i), cpu, memory, 0, nil))
	}
	return nodes
}

// decodeSchedulerConfig decodes and validates a v1
// KubeSchedulerConfiguration as kube-scheduler's --config does.
func decodeSchedulerConfig(configYAML string) (*schedconfig.KubeSchedulerConfiguration, error) {
	return localcluster.DecodeSchedulerConfig(configYAML)
}

// startNodeSim starts the node simulator on c; it stops with c.Ctx. It
// returns once its pod informer has synced.
func startNodeSim(c *cluster, opts localcluster.NodeSimOptions) *localcluster.NodeSim {
	c.t.Helper()
	sim, err := localcluster.StartNodeSim(c.Ctx, c.newClient("fluence-it-nodesim"), opts)
	if err != nil {
		c.t.Fatal(err)
	}
	return sim
}

// simOptions tune the node simulator.
type simOptions = localcluster.NodeSimOptions

// podRecord is what the node simulator saw of one pod.
type podRecord = localcluster.PodRecord

// startScheduler runs an in-process scheduler configured by configYAML (a
// v1 KubeSchedulerConfiguration) with the out-of-tree plugins in registry
// (nil for none), as localcluster.StartScheduler builds it.
//
// stop stops the scheduler and returns once it has stopped, so a test can
// "kill" a scheduler and start another on the same cluster. stop is
// idempotent and is also called by t.Cleanup. Several schedulers may run
// at the same time (they share only the process-global scheduler metrics).
func (c *cluster) startScheduler(configYAML string, registry frameworkruntime.Registry) (stop func()) {
	c.t.Helper()
	return c.startSchedulerWith(configYAML, registry, schedulerOptions{})
}

// schedulerOptions change how startSchedulerWith builds a scheduler.
type schedulerOptions struct {
	// WrapTransport, when set, wraps the HTTP transport of every client the
	// scheduler uses: a fault injector or a request counter (faults_test.go).
	WrapTransport transport.WrapperFunc
}

// startSchedulerWith is startScheduler with options.
func (c *cluster) startSchedulerWith(configYAML string, registry frameworkruntime.Registry, opts schedulerOptions) (stop func()) {
	c.t.Helper()
	name := fmt.Sprintf("fluence-it-scheduler-%d", c.schedulers.Add(1))
	s, err := c.lc.StartScheduler(c.Ctx, localcluster.SchedulerOptions{
		Name: name, ConfigYAML: configYAML, Registry: registry, WrapTransport: opts.WrapTransport,
	})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(s.Stop)
	return s.Stop
}

// kubeconfigFile writes a self-contained kubeconfig for c.Config (server,
// CA, bearer token or client certificate) to a temporary directory and
// returns its path, for a scheduler started as a separate process.
func (c *cluster) kubeconfigFile() string {
	c.t.Helper()
	cfg := c.Config
	token := cfg.BearerToken
	if token == "" && cfg.BearerTokenFile != "" {
		token = string(c.readOr(nil, cfg.BearerTokenFile))
	}
	return c.writeKubeconfig(&clientcmdapi.AuthInfo{
		Token:                 token,
		ClientCertificateData: c.readOr(cfg.CertData, cfg.CertFile),
		ClientKeyData:         c.readOr(cfg.KeyData, cfg.KeyFile),
		Username:              cfg.Username,
		Password:              cfg.Password,
	})
}

// kubeconfigWithToken writes a kubeconfig for the cluster that presents
// only the bearer token (a service account's, say).
func (c *cluster) kubeconfigWithToken(token string) string {
	c.t.Helper()
	return c.writeKubeconfig(&clientcmdapi.AuthInfo{Token: token})
}

func (c *cluster) writeKubeconfig(auth *clientcmdapi.AuthInfo) string {
	c.t.Helper()
	cfg := c.Config
	kc := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"fluence-it": {
			Server:                   cfg.Host,
			CertificateAuthorityData: c.readOr(cfg.CAData, cfg.CAFile),
			InsecureSkipTLSVerify:    cfg.Insecure,
			TLSServerName:            cfg.ServerName,
		}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"fluence-it": auth},
		Contexts: map[string]*clientcmdapi.Context{"fluence-it": {
			Cluster:   "fluence-it",
			AuthInfo:  "fluence-it",
			Namespace: c.NS,
		}},
		CurrentContext: "fluence-it",
	}
	path := filepath.Join(c.t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(kc, path); err != nil {
		c.t.Fatalf("writing kubeconfig: %v", err)
	}
	return path
}

// readOr returns data, or the file's content when data is empty.
func (c *cluster) readOr(data []byte, file string) []byte {
	c.t.Helper()
	if len(data) > 0 || file == "" {
		return data
	}
	b, err := os.ReadFile(file)
	if err != nil {
		c.t.Fatalf("kubeconfig: reading %s: %v", file, err)
	}
	return b
}

// newTestPod returns a pod in testNamespace with one pause container
// requesting cpu (and memory, when not ""), restartPolicy Never, the given
// scheduler and labels, and the runtime annotation when runtime > 0.
func newTestPod(name, schedulerName, cpu, memory string, runtime time.Duration, labels map[string]string) *corev1.Pod {
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	if memory != "" {
		requests[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, Labels: maps.Clone(labels)},
		Spec: corev1.PodSpec{
			SchedulerName: schedulerName,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:      "main",
				Image:     "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: requests},
			}},
		},
	}
	if runtime > 0 {
		pod.Annotations = map[string]string{runtimeAnnotation: runtime.String()}
	}
	return pod
}

// createPods creates the pods, failing the test on error.
func (c *cluster) createPods(pods ...*corev1.Pod) {
	c.t.Helper()
	for _, pod := range pods {
		ns := pod.Namespace
		if ns == "" {
			ns = c.NS
		}
		if _, err := c.Client.CoreV1().Pods(ns).Create(c.Ctx, pod, metav1.CreateOptions{}); err != nil {
			c.t.Fatalf("creating pod %s/%s: %v", ns, pod.Name, err)
		}
	}
}

// waitForPodPhase polls until every named pod in c.NS has the phase, failing
// the test after timeout with the phases last seen.
func (c *cluster) waitForPodPhase(timeout time.Duration, phase corev1.PodPhase, names ...string) {
	c.t.Helper()
	var last map[string]string
	err := wait.PollUntilContextTimeout(c.Ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		list, err := c.Client.CoreV1().Pods(c.NS).List(c.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		byName := map[string]*corev1.Pod{}
		for i := range list.Items {
			byName[list.Items[i].Name] = &list.Items[i]
		}
		last = map[string]string{}
		done := true
		for _, name := range names {
			pod := byName[name]
			switch {
			case pod == nil:
				last[name] = "missing"
				done = false
			case pod.Status.Phase != phase:
				last[name] = fmt.Sprintf("%s on %q", pod.Status.Phase, pod.Spec.NodeName)
				done = false
			}
		}
		return done, nil
	})
	if err != nil {
		c.t.Fatalf("pods not %s within %v: %v", phase, timeout, last)
	}
}

// waitPodsBound waits until at least n pods of c.NS listed with opts (and
// kept by match, when not nil) exist and every one of them is bound. It
// returns those seen last, with an error if the time ran out.
func (c *cluster) waitPodsBound(timeout time.Duration, n int, opts metav1.ListOptions, match func(*corev1.Pod) bool) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.Client.CoreV1().Pods(c.NS).List(ctx, opts)
		if err != nil {
			return false, nil
		}
		pods = pods[:0]
		for i := range list.Items {
			if match == nil || match(&list.Items[i]) {
				pods = append(pods, list.Items[i])
			}
		}
		if len(pods) < n {
			return false, nil
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" {
				return false, nil
			}
		}
		return true, nil
	})
	return pods, err
}
