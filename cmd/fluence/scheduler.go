package main

import (
	"github.com/spf13/cobra"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/fluence-sched/fluence/pkg/plugin"
)

// schedulerCmd is kube-scheduler with the fluence plugin registered: every
// kube-scheduler flag works (--config, --kubeconfig, --leader-elect, ...).
// deploy/scheduler-config.yaml is a configuration with the fluence profile;
// deploy/one-scheduler-config.yaml makes it the cluster's only scheduler.
func schedulerCmd() *cobra.Command {
	if err := plugin.SetFeatureDefaults(); err != nil {
		panic(err) // a gate name this build does not know: a programming error
	}
	cmd := app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.New), app.WithPlugin(plugin.QueueSortName, plugin.NewQueueSort))
	cmd.Use = "scheduler"
	cmd.Short = "Run kube-scheduler with the fluence plugin (all kube-scheduler flags apply)"
	return cmd
}
