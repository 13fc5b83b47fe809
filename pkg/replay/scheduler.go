package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/fluence-sched/fluence/deploy"
	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/plugin"
	"github.com/fluence-sched/fluence/pkg/sim"
)

// Scheduler is one scheduler the replay compares: how its cluster is set
// up, how it is started, how a Job is shaped for it, and which of the
// simulator's schedulers predicts it.
type Scheduler interface {
	// Name is the scheduler's name in every output.
	Name() string
	// Config describes the scheduler and its settings in one line.
	Config() string
	// FeatureGates are the Kubernetes feature gates its cluster runs with.
	FeatureGates() map[string]bool
	// Start starts the scheduler on c, whose Jobs go to namespace.
	Start(ctx context.Context, c *localcluster.Cluster, namespace string) error
	// Prepare shapes job for the scheduler and creates what it needs
	// beside the Job (a PodGroup, say), before the Job is created.
	Prepare(ctx context.Context, client kubernetes.Interface, job *batchv1.Job) error
	// Model returns the simulator's scheduler that predicts this one, or
	// nil and the reason there is none.
	Model() (sim.Scheduler, string, error)
}

// SchedulerNames are the schedulers `fluence demo` runs by default, in
// its order; NewScheduler knows these and KueueSchedulerNames.
var SchedulerNames = []string{"fluence", "stock", "gang"}

// NotIncluded are peers a reader would expect beside these that the replay
// does not run, each with the reason (NewScheduler's error gives it).
var NotIncluded = map[string]string{
	"coscheduling": "the Coscheduling plugin of sigs.k8s.io/scheduler-plugins builds against its own " +
		"Kubernetes release, so it would have to be built as a Go module and binary of its own, as Kueue is, " +
		"and the Go module proxy does not serve sigs.k8s.io/scheduler-plugins; pkg/sim's coscheduling model " +
		"stays the only comparison (`fluence sim`)",
}

// NewScheduler returns the named scheduler.
func NewScheduler(name string) (Scheduler, error) {
	switch name {
	case "fluence":
		return fluenceScheduler{}, nil
	case "stock":
		return stockScheduler{}, nil
	case "gang":
		return gangScheduler{}, nil
	case "stock+kueue":
		return kueueScheduler{place: stockScheduler{}}, nil
	case "fluence+kueue":
		return kueueScheduler{place: fluenceScheduler{}}, nil
	}
	if why, ok := NotIncluded[name]; ok {
		return nil, fmt.Errorf("scheduler %q is not included: %s", name, why)
	}
	return nil, fmt.Errorf("unknown scheduler %q (known: %s)", name, strings.Join(slices.Concat(SchedulerNames, KueueSchedulerNames), ", "))
}

// stockConfig is kube-scheduler's configuration with nothing changed.
const stockConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
`

// nominatedGate writes a pod's nominated node while it waits at Permit.
// Upstream turns it on by default (beta since 1.35); fluence turns it off
// (pkg/plugin.SetFeatureDefaults says why). Each scheduler gets its own
// value here, whatever the process set before.
const nominatedGate = "NominatedNodeNameForExpectation"

// fluenceScheduler is `fluence scheduler` with deploy/scheduler-config.yaml.
type fluenceScheduler struct{}

func (fluenceScheduler) Name() string { return "fluence" }

func (fluenceScheduler) Config() string {
	c, err := shippedFluenceConfig()
	if err != nil {
		return "fluence scheduler, deploy/scheduler-config.yaml (" + err.Error() + ")"
	}
	packing := ""
	if c.Queue.Packing {
		packing = ", packing-aware backfill"
	}
	return fmt.Sprintf("fluence scheduler, deploy/scheduler-config.yaml: match policy %s, queue policy %s%s, default duration %ds; Jobs grouped by owner",
		c.MatchPolicy, c.Queue.Policy, packing, c.DefaultDuration)
}

func (fluenceScheduler) FeatureGates() map[string]bool { return map[string]bool{nominatedGate: false} }

func (fluenceScheduler) Start(ctx context.Context, c *localcluster.Cluster, _ string) error {
	_, err := c.StartScheduler(ctx, localcluster.SchedulerOptions{
		Name:       "fluence",
		ConfigYAML: deploy.SchedulerConfig,
		Registry:   frameworkruntime.Registry{plugin.Name: plugin.New, plugin.QueueSortName: plugin.NewQueueSort},
	})
	return err
}

func (fluenceScheduler) Prepare(_ context.Context, _ kubernetes.Interface, job *batchv1.Job) error {
	job.Spec.Template.Spec.SchedulerName = "fluence"
	return nil
}

func (fluenceScheduler) Model() (sim.Scheduler, string, error) {
	c, err := shippedFluenceConfig()
	if err != nil {
		return nil, "", err
	}
	s, err := sim.NewFluence(sim.FluenceConfig{MatchPolicy: c.MatchPolicy, Queue: c.Queue, DefaultDuration: c.DefaultDuration})
	return s, "", err
}

// shippedFluenceConfig reads the fluence plugin's arguments from the
// shipped configuration, so the prediction plans as the live scheduler
// does.
func shippedFluenceConfig() (plugin.Config, error) {
	cfg, err := localcluster.DecodeSchedulerConfig(deploy.SchedulerConfig)
	if err != nil {
		return plugin.Config{}, err
	}
	for _, p := range cfg.Profiles {
		if p.SchedulerName != "fluence" {
			continue
		}
		i := slices.IndexFunc(p.PluginConfig, func(pc schedconfig.PluginConfig) bool { return pc.Name == plugin.Name })
		if i < 0 {
			return plugin.Args{}.Validate()
		}
		args, err := plugin.DecodeArgs(p.PluginConfig[i].Args)
		if err != nil {
			return plugin.Config{}, err
		}
		return args.Validate()
	}
	return plugin.Config{}, fmt.Errorf("deploy/scheduler-config.yaml has no fluence profile")
}

// stockScheduler is kube-scheduler's default profile.
type stockScheduler struct{}

func (stockScheduler) Name() string { return "stock" }
func (stockScheduler) Config() string {
	return "kube-scheduler v1.37, default profile (no gangs)"
}
func (stockScheduler) FeatureGates() map[string]bool { return map[string]bool{nominatedGate: true} }

func (stockScheduler) Start(ctx context.Context, c *localcluster.Cluster, _ string) error {
	_, err := c.StartScheduler(ctx, localcluster.SchedulerOptions{Name: "stock", ConfigYAML: stockConfig})
	return err
}

func (stockScheduler) Prepare(context.Context, kubernetes.Interface, *batchv1.Job) error { return nil }

func (stockScheduler) Model() (sim.Scheduler, string, error) { return sim.NewStock(), "", nil }

// gangScheduler is kube-scheduler's default profile with its in-tree gang
// scheduling on: each Job's pods name a PodGroup whose gang minCount is
// the Job's size.
type gangScheduler struct{}

func (gangScheduler) Name() string { return "gang" }
func (gangScheduler) Config() string {
	return "kube-scheduler v1.37, default profile, gate GenericWorkload (its gang scheduling and workload cycle), one scheduling.k8s.io/v1beta1 PodGroup per Job (gang minCount = size)"
}
func (gangScheduler) FeatureGates() map[string]bool {
	return map[string]bool{"GenericWorkload": true, nominatedGate: true}
}

func (gangScheduler) Start(ctx context.Context, c *localcluster.Cluster, _ string) error {
	_, err := c.StartScheduler(ctx, localcluster.SchedulerOptions{Name: "gang", ConfigYAML: stockConfig})
	return err
}

func (gangScheduler) Prepare(ctx context.Context, client kubernetes.Interface, job *batchv1.Job) error {
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: job.Namespace, Labels: job.Labels},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: *job.Spec.Parallelism},
		}},
	}
	if _, err := client.SchedulingV1beta1().PodGroups(job.Namespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating PodGroup %s/%s: %w", job.Namespace, job.Name, err)
	}
	job.Spec.Template.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &pg.Name}
	return nil
}

func (gangScheduler) Model() (sim.Scheduler, string, error) {
	return nil, "pkg/sim has no model of kube-scheduler's pod-group cycle", nil
}
