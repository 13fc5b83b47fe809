package schedserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/blang/semver/v4"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apiserver/pkg/server/healthz"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/leaderelection"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/configz"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	schedulerserverconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	kubefeatures "k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler"
	conversionv1 "k8s.io/kubernetes/pkg/scheduler/apis/config/v1"

	"github.com/fluence-sched/fluence/pkg/plugin"
)

// Run runs the scheduler built by Setup until ctx ends (or, with leader
// election, until the lease is lost: the process then exits, as
// kube-scheduler does, so that a restart rebuilds its state). lead is the
// plugins' (Options.Leadership): they act once it starts.
func Run(ctx context.Context, cc *schedulerserverconfig.CompletedConfig, sched *scheduler.Scheduler, inspectors *plugin.Inspectors, lead *plugin.Leadership) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting the fluence scheduler", "kubernetes", KubeVersion())
	publishConfig(logger, cc)

	cc.EventBroadcaster.StartRecordingToSink(ctx.Done())
	defer cc.EventBroadcaster.Shutdown()

	synced := make(chan struct{})
	var health, ready []healthz.HealthChecker
	if cc.ComponentConfig.LeaderElection.LeaderElect {
		health = append(health, cc.LeaderElection.WatchDog)
		ready = append(ready, cc.LeaderElection.WatchDog)
	}
	ready = append(ready, healthz.NewShutdownHealthz(ctx.Done()), healthz.NamedCheck("sched-handler-sync", func(*http.Request) error {
		select {
		case <-synced:
			return nil
		default:
			return errors.New("handlers are not fully synchronized")
		}
	}))
	coordinated := cc.LeaderElection != nil && utilfeature.DefaultFeatureGate.Enabled(kubefeatures.CoordinatedLeaderElection)
	if coordinated {
		check, err := runCandidate(ctx, cc)
		if err != nil {
			return err
		}
		ready = append(ready, check)
	}

	stopServing := func() {}
	if cc.SecureServing != nil {
		handler := secure(endpoints(endpointsConfig{
			config: &cc.ComponentConfig, informers: cc.InformerFactory, leading: lead.Leading,
			health: health, ready: ready, flags: cc.Flagz, inspectors: inspectors,
		}), cc.Authentication.Authenticator, cc.Authorization.Authorizer)
		stop := make(chan struct{})
		stopped, listenerStopped, err := cc.SecureServing.Serve(handler, 5*time.Second, stop)
		if err != nil {
			close(stop)
			return fmt.Errorf("failed to start the secure server: %w", err)
		}
		stopServing = func() {
			close(stop)
			<-listenerStopped
			<-stopped
			logger.Info("The secure server has stopped")
		}
	}

	startInformers := func(ctx context.Context) {
		cc.InformerFactory.Start(ctx.Done())
		if cc.DynInformerFactory != nil {
			cc.DynInformerFactory.Start(ctx.Done())
		}
		cc.InformerFactory.WaitForCacheSync(ctx.Done())
		if cc.DynInformerFactory != nil {
			cc.DynInformerFactory.WaitForCacheSync(ctx.Done())
		}
		if err := sched.WaitForHandlersSync(ctx); err != nil {
			logger.Error(err, "Handlers are not fully synchronized")
		}
		close(synced)
	}
	// A standby keeps its caches warm, unless told to wait until it leads.
	if !cc.ComponentConfig.DelayCacheUntilActive || cc.LeaderElection == nil {
		startInformers(ctx)
	}

	if cc.LeaderElection == nil {
		lead.Start()
		sched.Run(ctx)
		stopServing()
		return errors.New("finished without leader election")
	}
	cc.LeaderElection.Coordinated = coordinated
	cc.LeaderElection.Callbacks = leaderelection.LeaderCallbacks{
		OnStartedLeading: func(ctx context.Context) {
			lead.Start()
			if cc.ComponentConfig.DelayCacheUntilActive {
				startInformers(ctx)
			}
			sched.Run(ctx)
		},
		OnStoppedLeading: func() {
			stopServing()
			if ctx.Err() != nil {
				logger.Info("Asked to stop; exiting")
				os.Exit(0)
			}
			logger.Error(nil, "Lost the leader election lease")
			klog.FlushAndExit(klog.ExitFlushTimeout, 1)
		},
	}
	elector, err := leaderelection.NewLeaderElector(*cc.LeaderElection)
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	elector.Run(ctx)
	return errors.New("lost the leader election lease")
}

// publishConfig serves the configuration at /configz. A second scheduler
// in one process (tests) cannot register it again; it says so and goes on.
func publishConfig(logger klog.Logger, cc *schedulerserverconfig.CompletedConfig) {
	external := &configv1.KubeSchedulerConfiguration{}
	if err := conversionv1.Convert_config_KubeSchedulerConfiguration_To_v1_KubeSchedulerConfiguration(&cc.ComponentConfig, external, nil); err != nil {
		logger.Error(err, "Cannot convert the configuration for /configz")
		return
	}
	external.SetGroupVersionKind(configv1.SchemeGroupVersion.WithKind("KubeSchedulerConfiguration"))
	cz, err := configz.New("componentconfig")
	if err != nil {
		logger.Info("Not serving the configuration at /configz", "reason", err)
		return
	}
	if err := cz.Set(external); err != nil {
		logger.Error(err, "Cannot serve the configuration at /configz")
	}
}

// runCandidate runs this process's LeaseCandidate for coordinated leader
// election (feature gate CoordinatedLeaderElection), for the lease the
// configuration names, and returns its readiness check.
func runCandidate(ctx context.Context, cc *schedulerserverconfig.CompletedConfig) (healthz.HealthChecker, error) {
	v := cc.ComponentGlobalsRegistry.EffectiveVersionFor(basecompatibility.DefaultKubeComponent)
	binary, err := semver.ParseTolerant(v.BinaryVersion().String())
	if err != nil {
		return nil, err
	}
	emulation, err := semver.ParseTolerant(v.EmulationVersion().String())
	if err != nil {
		return nil, err
	}
	le := cc.ComponentConfig.LeaderElection
	candidate, synced, err := leaderelection.NewCandidate(cc.Client, le.ResourceNamespace, cc.LeaderElection.Lock.Identity(), le.ResourceName,
		binary.FinalizeVersion(), emulation.FinalizeVersion(), coordinationv1.OldestEmulationVersion)
	if err != nil {
		return nil, err
	}
	go candidate.Run(ctx)
	return healthz.NewInformerSyncHealthz(synced), nil
}
