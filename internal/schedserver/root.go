package schedserver

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// NewRoot returns a root command named name with the scheduler and version
// subcommands and any more given. Both the fluence CLI and the
// scheduler-only image binary (cmd/fluence-scheduler) are built on it, so
// the image's binary takes the CLI's arguments (`scheduler --config ...`,
// `version`): a Deployment written for one runs the other.
func NewRoot(name, short, version string, more ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:          name,
		Short:        short,
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		// kube-scheduler's --version flag sits in pflag's global set, which
		// cobra hands every command; only the scheduler command reads it.
		// On the root it prints the version, as users expect; elsewhere it
		// is hidden.
		Run: func(cmd *cobra.Command, _ []string) {
			if f := cmd.Flags().Lookup("version"); f != nil && f.Changed {
				fmt.Fprintln(cmd.OutOrStdout(), version)
				return
			}
			_ = cmd.Help()
		},
	}
	_ = pflag.CommandLine.MarkHidden("version")
	root.AddCommand(more...)
	root.AddCommand(NewCommand(version), &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), version) },
	})
	return root
}
