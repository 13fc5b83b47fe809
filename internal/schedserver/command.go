package schedserver

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	_ "k8s.io/component-base/version/verflag" // registers --version
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/fluence-sched/fluence/pkg/plugin"
)

// NewCommand returns the scheduler command: every kube-scheduler flag
// works (--config, --kubeconfig, --leader-elect, --secure-port, the
// authentication and authorization flags, ...). version is fluence's own,
// which --version prints beside the Kubernetes release.
func NewCommand(version string) *cobra.Command {
	if err := plugin.SetFeatureDefaults(); err != nil {
		panic(err) // a gate name this build does not know: a programming error
	}
	opts := options.NewOptions()
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run kube-scheduler with the fluence plugin (all kube-scheduler flags apply)",
		Long: `Run kube-scheduler with the fluence plugin registered. Every kube-scheduler
flag applies. Besides kube-scheduler's endpoints, the secure port serves the
read-only inspection API (` + "`kubectl fluence`" + `) behind the same delegated
authentication and authorization as /metrics.`,
		// Feature gates are set from the flags before RunE, at the API
		// server's release when it is older (skew.go).
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if v := cmd.Flags().Lookup("version"); v == nil || !v.Changed {
				if err := matchAPIServer(cmd.Flags(), opts, klog.Background()); err != nil {
					return err
				}
			}
			return opts.ComponentGlobalsRegistry.Set()
		},
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if printVersion(cmd.OutOrStdout(), version) {
				return nil
			}
			gates := opts.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
			if err := logsapi.ValidateAndApply(opts.Logs, gates); err != nil {
				return err
			}
			cliflag.PrintFlags(cmd.Flags())
			return Start(genericapiserver.SetupSignalContext(), opts, gates)
		},
	}
	named := opts.Flags
	// kube-scheduler's --version, as a flag of this command's own over
	// verflag's value: the fluence root hides the global one, which
	// cobra gives every command and only this one reads.
	if v := pflag.Lookup("version"); v != nil {
		global := named.FlagSet("global")
		global.Var(v.Value, v.Name, v.Usage)
		global.Lookup(v.Name).NoOptDefVal = v.NoOptDefVal
	}
	globalflag.AddGlobalFlags(named.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	for _, fs := range named.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *named, cols)
	if err := cmd.MarkFlagFilename("config", "yaml", "yml", "json"); err != nil {
		panic(err)
	}
	return cmd
}

// Start builds the scheduler from the options, with the fluence plugins,
// and runs it until ctx ends.
func Start(ctx context.Context, opts *options.Options, gates featuregate.FeatureGate) error {
	inspectors := plugin.NewInspectors()
	// Setup builds the plugins before leader election: they wait for lead.
	lead := plugin.NewLeadership()
	cc, sched, err := app.Setup(ctx, opts,
		app.WithPlugin(plugin.Name, plugin.NewWith(plugin.Options{Inspectors: inspectors, Leadership: lead})),
		app.WithPlugin(plugin.QueueSortName, plugin.NewQueueSort))
	if err != nil {
		return err
	}
	if mg, ok := gates.(featuregate.MutableFeatureGate); ok {
		mg.AddMetrics()
	}
	opts.ComponentGlobalsRegistry.AddMetrics()
	if err := Run(ctx, cc, sched, inspectors, lead); err != nil {
		return fmt.Errorf("fluence scheduler: %w", err)
	}
	return nil
}
