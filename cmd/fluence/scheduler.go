package main

import (
	"github.com/spf13/cobra"

	"github.com/fluence-sched/fluence/internal/schedserver"
)

// schedulerCmd is kube-scheduler with the fluence plugin registered: every
// kube-scheduler flag works (--config, --kubeconfig, --leader-elect, ...),
// and the secure port also serves the inspection API (kubectl fluence).
// deploy/scheduler-config.yaml is a configuration with the fluence profile;
// deploy/one-scheduler-config.yaml makes it the cluster's only scheduler.
func schedulerCmd() *cobra.Command { return schedserver.NewCommand(version) }
