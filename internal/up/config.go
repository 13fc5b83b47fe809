package up

import (
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/fluence-sched/fluence/deploy"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// SchedulerConfig is deploy/one-scheduler-config.yaml as shipped, with
// the fluence profile's rackLabel set to RackLabel when the nodes have
// racks, or its topologyLevels to the levels' labels: kube-scheduler's
// stock default-scheduler profile and fluence's in one process, sharing
// one queue and one cache.
func (o Options) SchedulerConfig() (string, error) {
	if o.Racks == 0 && len(o.Levels) == 0 {
		return deploy.OneSchedulerConfig, nil
	}
	field, value := "rackLabel", any(RackLabel)
	if len(o.Levels) > 0 {
		var keys []any
		for _, l := range o.Levels {
			keys = append(keys, l.Label())
		}
		field, value = "topologyLevels", keys
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(deploy.OneSchedulerConfig), &cfg); err != nil {
		return "", fmt.Errorf("deploy/one-scheduler-config.yaml: %w", err)
	}
	set := 0
	profiles, _ := cfg["profiles"].([]any)
	for _, p := range profiles {
		profile, _ := p.(map[string]any)
		pcs, _ := profile["pluginConfig"].([]any)
		for _, pc := range pcs {
			entry, _ := pc.(map[string]any)
			if entry["name"] != plugin.Name {
				continue
			}
			args, _ := entry["args"].(map[string]any)
			if args == nil {
				args = map[string]any{}
				entry["args"] = args
			}
			args[field] = value
			set++
		}
	}
	if set == 0 {
		return "", fmt.Errorf("deploy/one-scheduler-config.yaml: no pluginConfig entry %q to set %s in", plugin.Name, field)
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// withKubeconfig sets clientConnection.kubeconfig in a scheduler
// configuration: kube-scheduler ignores --kubeconfig when --config is given.
func withKubeconfig(configYAML, kubeconfig string) (string, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(configYAML), &cfg); err != nil {
		return "", fmt.Errorf("scheduler configuration: %w", err)
	}
	cc, _ := cfg["clientConnection"].(map[string]any)
	if cc == nil {
		cc = map[string]any{}
		cfg["clientConnection"] = cc
	}
	cc["kubeconfig"] = kubeconfig
	out, err := yaml.Marshal(cfg)
	return string(out), err
}
