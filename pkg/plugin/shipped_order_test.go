package plugin_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/fluence-sched/fluence/pkg/plugin"
)

// In every shipped configuration fluence's PreFilter runs before
// DynamicResources': fluence waits while kube-scheduler's DRA manager
// still counts a claim's devices it saw released, and DynamicResources,
// reading the manager after it, then never finds them taken
// (cacheorder.go). kube-scheduler's own ordering rules decide the order,
// so the profile is built by its framework, as the scheduler builds it.
func TestShippedPreFilterOrder(t *testing.T) {
	metrics.Register()
	for _, file := range []string{"../../deploy/scheduler-config.yaml", "../../deploy/one-scheduler-config.yaml", "../../test/schedperf/testdata/fluence-scheduler.yaml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		obj, _, err := schedscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		cfg := obj.(*schedconfig.KubeSchedulerConfiguration)
		registry := plugins.NewInTreeRegistry()
		if err := registry.Register(plugin.Name, plugin.New); err != nil {
			t.Fatal(err)
		}
		if err := registry.Register(plugin.QueueSortName, plugin.NewQueueSort); err != nil {
			t.Fatal(err)
		}
		for i := range cfg.Profiles {
			prof := &cfg.Profiles[i]
			if prof.SchedulerName != "fluence" {
				continue
			}
			ctx, cancel := context.WithCancel(context.Background())
			cs := fake.NewClientset()
			factory := informers.NewSharedInformerFactory(cs, 0)
			fw, err := frameworkruntime.NewFramework(ctx, registry, prof,
				frameworkruntime.WithClientSet(cs),
				frameworkruntime.WithInformerFactory(factory),
				frameworkruntime.WithEventRecorder(events.NewFakeRecorder(10)),
				frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
				frameworkruntime.WithSnapshotSharedLister(internalcache.NewEmptySnapshot()),
			)
			if err != nil {
				cancel()
				t.Fatalf("%s: %v", file, err)
			}
			var names []string
			for _, p := range fw.ListPlugins().PreFilter.Enabled {
				names = append(names, p.Name)
			}
			f, d := slices.Index(names, plugin.Name), slices.Index(names, "DynamicResources")
			if f < 0 || d < 0 || f > d {
				t.Errorf("%s: PreFilter plugins %v: want fluence, then DynamicResources", file, names)
			}
			cancel()
			factory.Shutdown()
		}
	}
}
