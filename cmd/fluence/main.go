// Command fluence is HPC-grade gang scheduling for Kubernetes: one binary
// whose subcommands share one pure-Go engine (see docs/ and pkg/).
//
// `fluence up` and `fluence demo` link a whole control plane (etcd,
// kube-apiserver, controllers) into this binary; the container image runs
// cmd/fluence-scheduler instead, which has the scheduler alone.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/fluence-sched/fluence/internal/schedserver"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if err := rootCmd().Execute(); err != nil {
		os.Exit(1)
	}
}

// rootCmd has the scheduler subcommand (kube-scheduler with the fluence
// plugin registered: every kube-scheduler flag works, and the secure port
// also serves the inspection API) from internal/schedserver, shared with
// cmd/fluence-scheduler. deploy/scheduler-config.yaml is a configuration
// with the fluence profile; deploy/one-scheduler-config.yaml makes it the
// cluster's only scheduler.
func rootCmd() *cobra.Command {
	return schedserver.NewRoot("fluence", "Gang scheduling for Kubernetes with a pure-Go Fluxion matcher", version,
		matchCmd(), simCmd(), demoCmd(), upCmd(), benchEngineCmd())
}
