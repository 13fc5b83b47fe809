package integration

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapiv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/transport"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedvalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/profile"
	"k8s.io/kubernetes/test/integration/framework"
)

// gpuResource is the extended resource the tests use for GPUs.
const gpuResource corev1.ResourceName = "nvidia.com/gpu"

// testNamespace is created in every cluster.
const testNamespace = "fluence-test"

// cluster is one kube-apiserver (with its own etcd prefix in the shared etcd)
// plus whatever a test starts against it.
type cluster struct {
	t      testing.TB
	Ctx    context.Context // canceled when the test's cleanup starts
	Client kubernetes.Interface
	Config *rest.Config // admin (loopback) credentials, no client-side rate limit
	NS     string

	schedulers atomic.Int32 // numbers the schedulers for user agents and loggers
}

// newCluster starts a fresh kube-apiserver for t. Everything is torn down by
// t.Cleanup: first the cluster context is canceled (stopping schedulers, the
// node simulator and the invariant checker), then the apiserver is stopped.
// It skips the test with -short.
func newCluster(t testing.TB) *cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctx = klog.NewContext(ctx, klog.Background().WithName(t.Name()))

	// StartTestServer gives every apiserver a fresh etcd prefix
	// (/<uuid>/registry), so clusters never see each other's objects.
	client, cfg, tearDown := framework.StartTestServer(ctx, t, framework.TestServerSetup{
		ModifyServerRunOptions: func(opts *options.ServerRunOptions) {
			// As k8s.io/kubernetes/test/integration/util.InitTestAPIServer.
			opts.Admission.GenericAdmission.DisablePlugins = []string{"ServiceAccount", "TaintNodesByCondition", "Priority", "StorageObjectInUseProtection"}
			runtimeConfig := cliflag.ConfigurationMap{}
			if utilfeature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation) {
				runtimeConfig[resourceapi.SchemeGroupVersion.String()] = "true"
			}
			if utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload) {
				runtimeConfig[schedulingapiv1alpha2.SchemeGroupVersion.String()] = "true"
			}
			if len(runtimeConfig) > 0 {
				opts.APIEnablement.RuntimeConfig = runtimeConfig
			}
		},
	})
	t.Cleanup(func() {
		cancel()
		tearDown()
	})

	c := &cluster{t: t, Ctx: ctx, Client: client, Config: cfg, NS: testNamespace}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", testNamespace, err)
	}
	return c
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
// 110 pods, gpus × nvidia.com/gpu when gpus > 0}. The label
// kubernetes.io/hostname=name is added unless labels set it.
//
// The node registry keeps the status given on create (only
// status.config is dropped), so one Create suffices; should the status
// come back empty anyway, it is written with UpdateStatus.
func (c *cluster) addNode(name string, cpu string, memory string, gpus int, labels map[string]string) *corev1.Node {
	c.t.Helper()
	allocatable := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	if gpus > 0 {
		allocatable[gpuResource] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	nodeLabels := map[string]string{corev1.LabelHostname: name}
	maps.Copy(nodeLabels, labels)
	now := metav1.Now()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: nodeLabels},
		Status: corev1.NodeStatus{
			Capacity:    allocatable.DeepCopy(),
			Allocatable: allocatable.DeepCopy(),
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{{
				Type:               corev1.NodeReady,
				Status:             corev1.ConditionTrue,
				Reason:             "KubeletReady",
				Message:            "simulated by the fluence integration harness",
				LastHeartbeatTime:  now,
				LastTransitionTime: now,
			}},
		},
	}
	created, err := c.Client.CoreV1().Nodes().Create(c.Ctx, node, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("creating node %s: %v", name, err)
	}
	if !nodeStatusMatches(created, allocatable) {
		c.t.Logf("node %s: status dropped on create; writing it with UpdateStatus", name)
		created.Status = node.Status
		created, err = c.Client.CoreV1().Nodes().UpdateStatus(c.Ctx, created, metav1.UpdateOptions{})
		if err != nil {
			c.t.Fatalf("updating status of node %s: %v", name, err)
		}
		if !nodeStatusMatches(created, allocatable) {
			c.t.Fatalf("node %s: status not stored: %+v", name, created.Status)
		}
	}
	return created
}

func nodeStatusMatches(node *corev1.Node, allocatable corev1.ResourceList) bool {
	for name, want := range allocatable {
		got, ok := node.Status.Allocatable[name]
		if !ok || got.Cmp(want) != 0 {
			return false
		}
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
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

// decodeSchedulerConfig decodes a kubescheduler.config.k8s.io/v1
// KubeSchedulerConfiguration into the internal type with defaults applied,
// as kube-scheduler's --config does. Args of plugins unknown to the scheme
// (out-of-tree plugins) stay *runtime.Unknown. The result is validated.
func decodeSchedulerConfig(configYAML string) (*schedconfig.KubeSchedulerConfiguration, error) {
	obj, gvk, err := schedscheme.Codecs.UniversalDecoder().Decode([]byte(configYAML), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding scheduler configuration: %w", err)
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("decoding scheduler configuration: got %s, want KubeSchedulerConfiguration", gvk)
	}
	// As kube-scheduler's loadConfig: the conversion drops it, plugins may use it.
	cfg.TypeMeta.APIVersion = gvk.GroupVersion().String()
	if err := schedvalidation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, fmt.Errorf("invalid scheduler configuration: %w", err)
	}
	return cfg, nil
}

// startScheduler runs an in-process scheduler configured by configYAML (a
// v1 KubeSchedulerConfiguration) with the out-of-tree plugins in registry
// (nil for none). It is built as kube-scheduler builds it, minus leader
// election and the HTTP endpoints: its own clients (rate-limited by the
// config's clientConnection qps/burst, default 50/100), informer factories
// and an event broadcaster writing events.k8s.io events. It returns when the
// informers and event handlers are synced and Run has been started.
//
// stop cancels the scheduler and returns once Run has returned and its
// informers have stopped, so a test can "kill" a scheduler and start another
// on the same cluster. stop is idempotent and is also called by t.Cleanup.
// Several schedulers may run at the same time (they share only the
// process-global scheduler metrics, which are registered once).
func (c *cluster) startScheduler(configYAML string, registry frameworkruntime.Registry) (stop func()) {
	c.t.Helper()
	return c.startSchedulerWith(configYAML, registry, schedulerOptions{})
}

// schedulerOptions change how startSchedulerWith builds a scheduler.
type schedulerOptions struct {
	// WrapTransport, when set, wraps the HTTP transport of every client the
	// scheduler uses (its clientset, which binds pods, its event client and
	// its dynamic client): a fault injector or a request counter
	// (faults_test.go).
	WrapTransport transport.WrapperFunc
}

// startSchedulerWith is startScheduler with options.
func (c *cluster) startSchedulerWith(configYAML string, registry frameworkruntime.Registry, opts schedulerOptions) (stop func()) {
	c.t.Helper()
	cfg, err := decodeSchedulerConfig(configYAML)
	if err != nil {
		c.t.Fatal(err)
	}
	n := c.schedulers.Add(1)
	name := fmt.Sprintf("scheduler-%d", n)

	ctx, cancel := context.WithCancel(c.Ctx)
	ctx = klog.NewContext(ctx, klog.FromContext(c.Ctx).WithName(name))

	restCfg := rest.CopyConfig(c.Config)
	restCfg.DisableCompression = true
	restCfg.AcceptContentTypes = cfg.ClientConnection.AcceptContentTypes
	restCfg.ContentType = cfg.ClientConnection.ContentType
	restCfg.QPS = cfg.ClientConnection.QPS
	restCfg.Burst = int(cfg.ClientConnection.Burst)
	if opts.WrapTransport != nil {
		restCfg.Wrap(opts.WrapTransport)
	}
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(restCfg), "fluence-it-"+name))
	if err != nil {
		cancel()
		c.t.Fatal(err)
	}
	eventClient, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(restCfg), "fluence-it-"+name+"-events"))
	if err != nil {
		cancel()
		c.t.Fatal(err)
	}
	dynClient, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		cancel()
		c.t.Fatal(err)
	}

	informerFactory := scheduler.NewInformerFactory(client, 0)
	dynInformerFactory := dynamicinformer.NewDynamicSharedInformerFactory(dynClient, 0)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: eventClient.EventsV1()})

	runDone := make(chan struct{})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-runDone
			informerFactory.Shutdown()
			dynInformerFactory.Shutdown()
			broadcaster.Shutdown()
		})
	}
	started := false
	defer func() {
		if !started { // Fatal or panic below: nothing will call Run
			close(runDone)
			stop()
		}
	}()
	c.t.Cleanup(stop)

	broadcaster.StartRecordingToSink(ctx.Done())
	sched, err := scheduler.New(ctx,
		client,
		informerFactory,
		dynInformerFactory,
		profile.NewRecorderFactory(broadcaster),
		scheduler.WithComponentConfigVersion(cfg.TypeMeta.APIVersion),
		scheduler.WithKubeConfig(restCfg),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
		scheduler.WithFrameworkOutOfTreeRegistry(registry),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithExtenders(cfg.Extenders...),
		scheduler.WithParallelism(cfg.Parallelism),
	)
	if err != nil {
		c.t.Fatalf("creating %s: %v", name, err)
	}

	informerFactory.Start(ctx.Done())
	dynInformerFactory.Start(ctx.Done())
	for typ, ok := range informerFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			c.t.Fatalf("%s: informer for %v did not sync", name, typ)
		}
	}
	for gvr, ok := range dynInformerFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			c.t.Fatalf("%s: dynamic informer for %v did not sync", name, gvr)
		}
	}
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		c.t.Fatalf("%s: waiting for event handlers: %v", name, err)
	}

	started = true
	go func() {
		defer close(runDone)
		sched.Run(ctx)
	}()
	return stop
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
