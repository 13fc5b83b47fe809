package localcluster

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedvalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// SchedulerOptions configure a scheduler started in this process.
type SchedulerOptions struct {
	// Name names the scheduler in logs and user agents.
	Name string
	// ConfigYAML is a kubescheduler.config.k8s.io/v1
	// KubeSchedulerConfiguration, as kube-scheduler's --config reads it.
	ConfigYAML string
	// Registry holds the out-of-tree plugins (fluence's); nil for none.
	Registry frameworkruntime.Registry
	// WrapTransport, when set, wraps the HTTP transport of every client
	// the scheduler uses (to inject faults or count requests).
	WrapTransport transport.WrapperFunc
}

// Scheduler is a kube-scheduler running in this process.
type Scheduler struct {
	cancel context.CancelFunc
	once   sync.Once
	done   chan struct{}
	stop   func()
}

// Stop stops the scheduler and returns once its loop and informers have
// stopped. It is idempotent.
func (s *Scheduler) Stop() {
	s.once.Do(s.stop)
}

// DecodeSchedulerConfig decodes a v1 KubeSchedulerConfiguration into the
// internal type with defaults applied, as kube-scheduler's --config does,
// and validates it. Args of out-of-tree plugins stay *runtime.Unknown for
// the plugins to decode.
func DecodeSchedulerConfig(configYAML string) (*schedconfig.KubeSchedulerConfiguration, error) {
	obj, gvk, err := schedscheme.Codecs.UniversalDecoder().Decode([]byte(configYAML), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding scheduler configuration: %w", err)
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("decoding scheduler configuration: got %s, want KubeSchedulerConfiguration", gvk)
	}
	// As kube-scheduler's loadConfig: the conversion drops it, plugins read it.
	cfg.TypeMeta.APIVersion = gvk.GroupVersion().String()
	if err := schedvalidation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, fmt.Errorf("invalid scheduler configuration: %w", err)
	}
	return cfg, nil
}

// StartScheduler runs a scheduler against the cluster, built as
// kube-scheduler builds it minus leader election and its HTTP endpoints:
// its own clients (rate-limited as the configuration's clientConnection
// says), informer factories and an event broadcaster. It returns once the
// informers and event handlers have synced and the loop has started. The
// scheduler stops with Stop, or with the cluster.
func (c *Cluster) StartScheduler(ctx context.Context, opts SchedulerOptions) (*Scheduler, error) {
	cfg, err := DecodeSchedulerConfig(opts.ConfigYAML)
	if err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		name = "scheduler"
	}
	ctx, cancel := context.WithCancel(ctx)
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName(name))

	restCfg := rest.CopyConfig(c.Config)
	restCfg.DisableCompression = true
	restCfg.AcceptContentTypes = cfg.ClientConnection.AcceptContentTypes
	restCfg.ContentType = cfg.ClientConnection.ContentType
	restCfg.QPS = cfg.ClientConnection.QPS
	restCfg.Burst = int(cfg.ClientConnection.Burst)
	if opts.WrapTransport != nil {
		restCfg.Wrap(opts.WrapTransport)
	}
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(restCfg), name))
	if err != nil {
		cancel()
		return nil, err
	}
	eventClient, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(restCfg), name+"-events"))
	if err != nil {
		cancel()
		return nil, err
	}
	dynClient, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		cancel()
		return nil, err
	}

	informerFactory := scheduler.NewInformerFactory(client, 0, nil)
	dynInformerFactory := dynamicinformer.NewDynamicSharedInformerFactory(dynClient, 0)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: eventClient.EventsV1()})
	s := &Scheduler{cancel: cancel, done: make(chan struct{})}
	s.stop = func() {
		cancel()
		<-s.done
		informerFactory.Shutdown()
		dynInformerFactory.Shutdown()
		broadcaster.Shutdown()
	}
	fail := func(err error) (*Scheduler, error) {
		close(s.done) // Run never started
		s.Stop()
		return nil, fmt.Errorf("%s: %w", name, err)
	}

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
		scheduler.WithFrameworkOutOfTreeRegistry(opts.Registry),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithExtenders(cfg.Extenders...),
		scheduler.WithParallelism(cfg.Parallelism),
	)
	if err != nil {
		return fail(err)
	}
	informerFactory.Start(ctx.Done())
	dynInformerFactory.Start(ctx.Done())
	for typ, ok := range informerFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fail(fmt.Errorf("informer for %v did not sync", typ))
		}
	}
	for gvr, ok := range dynInformerFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fail(fmt.Errorf("dynamic informer for %v did not sync", gvr))
		}
	}
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		return fail(fmt.Errorf("waiting for event handlers: %w", err))
	}
	go func() {
		defer close(s.done)
		sched.Run(ctx)
	}()
	c.track(s)
	return s, nil
}
