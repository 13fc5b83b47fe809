// Command kubectl-fluence is the kubectl plugin that inspects the fluence
// scheduler (kubectl fluence groups, queue, nodes, explain GROUP, graph):
// put it on the PATH and kubectl finds it.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/fluence-sched/fluence/internal/kubectlfluence"
)

// version is set at build time with -ldflags "-X main.version=..." (make
// release); `kubectl fluence version` prints it.
var version = "dev"

func main() {
	cmd := kubectlfluence.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	cmd.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), version) },
	})
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
