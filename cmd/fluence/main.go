// Command fluence is HPC-grade gang scheduling for Kubernetes: one binary
// whose subcommands share one pure-Go engine (see docs/ and pkg/).
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if err := rootCmd().Execute(); err != nil {
		os.Exit(1)
	}
}

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "fluence",
		Short:         "Gang scheduling for Kubernetes with a pure-Go Fluxion matcher",
		SilenceUsage:  true,
		SilenceErrors: false,
		Args:          cobra.NoArgs,
		// kube-scheduler's --version flag sits in pflag's global set, which
		// cobra hands every command; only `fluence scheduler` reads it. On
		// the root it prints the version, as users expect; elsewhere it is
		// hidden.
		Run: func(cmd *cobra.Command, _ []string) {
			if f := cmd.Flags().Lookup("version"); f != nil && f.Changed {
				fmt.Fprintln(cmd.OutOrStdout(), version)
				return
			}
			_ = cmd.Help()
		},
	}
	_ = pflag.CommandLine.MarkHidden("version")
	root.AddCommand(matchCmd(), simCmd(), demoCmd(), upCmd(), benchEngineCmd(), schedulerCmd(), &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), version) },
	})
	return root
}
