// Command kubectl-fluence is the kubectl plugin that inspects the fluence
// scheduler (kubectl fluence groups, queue, nodes, explain GROUP, graph):
// put it on the PATH and kubectl finds it.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/fluence-sched/fluence/internal/kubectlfluence"
)

func main() {
	cmd := kubectlfluence.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
