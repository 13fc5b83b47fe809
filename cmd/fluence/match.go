package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/fluence-sched/fluence/internal/matchcli"
	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/resource"
)

func matchCmd() *cobra.Command {
	var graphFile, spec, policy string
	var demo bool
	cmd := &cobra.Command{
		Use:   "match (--graph FILE.json | --generate SPEC) [--policy P] | match --demo",
		Short: "Run resource-query-style match commands read from stdin",
		Long: `Reads commands from stdin, one a line, and prints one JSON object per
command on stdout (nothing for quit):

  match allocate FILE                      allocate now, or BUSY
  match allocate_with_satisfiability FILE  allocate now, BUSY or UNSATISFIABLE
  match allocate_orelse_reserve FILE       allocate now or reserve at the earliest time
  match satisfiability FILE                SATISFIABLE or UNSATISFIABLE
  cancel JOBID | info JOBID | partial-cancel JOBID VERTEX... |
  set-status VERTEX up|down | stat | quit

Time is 0 and does not advance. Diagnostics go to stderr.

--demo runs an embedded script on an embedded 8-node cluster (2 racks, GPUs)
and prints every command with its response: a group placed whole, a
GPU group, an impossible group rejected at once, a reservation, a
cancellation.

Policies: ` + fmt.Sprint(match.PolicyNames()),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if demo {
				if graphFile != "" || spec != "" || cmd.Flags().Changed("policy") {
					return errors.New("--demo brings its own graph and policy: give --demo alone")
				}
				return runMatchDemo(cmd.OutOrStdout(), nil)
			}
			g, err := loadGraph(graphFile, spec)
			if err != nil {
				return err
			}
			m, err := match.New(g, match.Options{Policy: policy})
			if err != nil {
				return err
			}
			s := matchcli.NewSession(m)
			s.Diag = cmd.ErrOrStderr()
			return s.Run(cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&graphFile, "graph", "", "JGF graph file")
	cmd.Flags().StringVar(&spec, "generate", "", `generate the graph from a spec, e.g. "cluster[1]->node[4]->socket[2]->core[8]"`)
	cmd.Flags().StringVar(&policy, "policy", "first", "match policy")
	cmd.Flags().BoolVar(&demo, "demo", false, "run the embedded demo script on an embedded 8-node cluster")
	return cmd
}

// loadGraph reads a JGF file or generates a graph from a spec: exactly one.
func loadGraph(file, spec string) (*resource.Graph, error) {
	switch {
	case file != "" && spec != "":
		return nil, errors.New("give --graph or --generate, not both")
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		g, err := resource.ReadJGF(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		return g, nil
	case spec != "":
		return resource.Generate(spec)
	}
	return nil, errors.New("give a graph: --graph FILE.json or --generate SPEC")
}
