package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fluence-sched/fluence/internal/enginebench"
)

func benchEngineCmd() *cobra.Command {
	var sizes []int
	cmd := &cobra.Command{
		Use:   "bench-engine",
		Short: "Print engine build, memory and match-time figures for cluster->node[N]->socket[2]->{core[16],gpu[2]}",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var rows []enginebench.Row
			for _, n := range sizes {
				fmt.Fprintf(cmd.ErrOrStderr(), "measuring N = %d ...\n", n)
				r, err := enginebench.Measure(n)
				if err != nil {
					return fmt.Errorf("N = %d: %w", n, err)
				}
				rows = append(rows, r)
			}
			return enginebench.Print(cmd.OutOrStdout(), rows)
		},
	}
	cmd.Flags().IntSliceVar(&sizes, "nodes", []int{128, 2048, 16384}, "graph sizes (nodes)")
	return cmd
}
