package up

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fluence-sched/fluence/deploy"
	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// The scheduler runs deploy/one-scheduler-config.yaml as shipped; with
// racks, only the fluence profile's rackLabel differs, and kube-scheduler
// still accepts the configuration.
func TestSchedulerConfig(t *testing.T) {
	plainYAML, err := Defaults().SchedulerConfig()
	if err != nil {
		t.Fatal(err)
	}
	if plainYAML != deploy.OneSchedulerConfig {
		t.Error("without racks the configuration is not deploy/one-scheduler-config.yaml as shipped")
	}
	racks := Defaults()
	racks.Racks = 2
	rackYAML, err := racks.SchedulerConfig()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := localcluster.DecodeSchedulerConfig(plainYAML)
	if err != nil {
		t.Fatal(err)
	}
	withRacks, err := localcluster.DecodeSchedulerConfig(rackYAML)
	if err != nil {
		t.Fatal(err)
	}
	if len(withRacks.Profiles) != 2 || withRacks.Profiles[0].SchedulerName != "default-scheduler" || withRacks.Profiles[1].SchedulerName != plugin.Name {
		t.Fatalf("profiles %v, want default-scheduler and fluence", withRacks.Profiles)
	}
	found := 0
	for i, p := range withRacks.Profiles {
		for j, pc := range p.PluginConfig {
			if pc.Name != plugin.Name {
				if diff := cmp.Diff(plain.Profiles[i].PluginConfig[j], pc); diff != "" {
					t.Errorf("profile %s, %s arguments changed (-shipped +racks):\n%s", p.SchedulerName, pc.Name, diff)
				}
				continue
			}
			found++
			want, err := plugin.DecodeArgs(plain.Profiles[i].PluginConfig[j].Args)
			if err != nil {
				t.Fatal(err)
			}
			got, err := plugin.DecodeArgs(pc.Args)
			if err != nil {
				t.Fatal(err)
			}
			if got.RackLabel != RackLabel {
				t.Errorf("profile %s: rackLabel %q, want %q", p.SchedulerName, got.RackLabel, RackLabel)
			}
			want.RackLabel = RackLabel
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("profile %s: more than rackLabel changed (-shipped +racks):\n%s", p.SchedulerName, diff)
			}
		}
	}
	if found != 1 {
		t.Errorf("%d fluence pluginConfig entries, want 1", found)
	}
}

// With --levels the fluence profile's topologyLevels are the levels'
// labels, outermost first, and the plugin accepts them.
func TestSchedulerConfigLevels(t *testing.T) {
	o := Defaults()
	o.Levels = []Level{{"block", 2}, {"rack", 4}}
	y, err := o.SchedulerConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := localcluster.DecodeSchedulerConfig(y)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, p := range cfg.Profiles {
		for _, pc := range p.PluginConfig {
			if pc.Name != plugin.Name {
				continue
			}
			found++
			a, err := plugin.DecodeArgs(pc.Args)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"fluence.flux-framework.org/block", "fluence.flux-framework.org/rack"}; !cmp.Equal(a.TopologyLevels, want) || a.RackLabel != "" {
				t.Errorf("topologyLevels %q rackLabel %q, want %q and none", a.TopologyLevels, a.RackLabel, want)
			}
			if _, err := a.Validate(); err != nil {
				t.Error(err)
			}
		}
	}
	if found != 1 {
		t.Errorf("%d fluence pluginConfig entries, want 1", found)
	}
}
