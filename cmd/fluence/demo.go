package main

import (
	"bufio"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fluence-sched/fluence/internal/matchcli"
	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/resource"
)

//go:embed demo
var demoFS embed.FS

// demoGraph is the embedded default cluster: 2 racks of 4 nodes, each node
// 2 sockets of 8 cores, one GPU and two 16 GB memory pools per socket.
const demoGraph = "cluster[1]->rack[2]->node[4]->socket[2]->{core[8],gpu[1],memory[2]:16GB}"

func demoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Place pod groups on an embedded 8-node cluster and show every decision",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.OutOrStdout())
		},
	}
}

func runDemo(out io.Writer) error {
	g, err := resource.Generate(demoGraph)
	if err != nil {
		return err
	}
	m, err := match.New(g, match.Options{Policy: "first"})
	if err != nil {
		return err
	}
	script, err := demoFS.ReadFile("demo/script.txt")
	if err != nil {
		return err
	}
	s := matchcli.NewSession(m)
	s.ReadFile = func(p string) ([]byte, error) { return demoFS.ReadFile(path.Join("demo", p)) }
	fmt.Fprintf(out, "graph: %s (%d vertices, %d nodes), policy %s\n\n", demoGraph, g.Len(), len(g.ByTypeName("node")), m.Policy().Name)
	sc := bufio.NewScanner(strings.NewReader(string(script)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			fmt.Fprintln(out, line)
			continue
		}
		resp, quit := s.Exec(line)
		if quit {
			break
		}
		if resp == nil {
			fmt.Fprintln(out)
			continue
		}
		b, err := json.Marshal(resp)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "> %s\n%s\n", line, b)
	}
	return sc.Err()
}
