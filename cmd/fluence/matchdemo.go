package main

import (
	"bufio"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/fluence-sched/fluence/internal/matchcli"
	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// `fluence match --demo`: the matcher on an embedded cluster, driven by an
// embedded script of match commands, every response printed.

//go:embed matchdemo
var matchDemoFS embed.FS

// matchDemoGraph is the embedded cluster: 2 racks of 4 nodes, each node
// 2 sockets of 8 cores, one GPU and two 16 GB memory pools per socket.
const matchDemoGraph = "cluster[1]->rack[2]->node[4]->socket[2]->{core[8],gpu[1],memory[2]:16GB}"

// runMatchDemo prints the demo to out. clock times each match for the
// script's stat line; nil is the wall clock.
func runMatchDemo(out io.Writer, clock func() time.Time) error {
	g, err := resource.Generate(matchDemoGraph)
	if err != nil {
		return err
	}
	m, err := match.New(g, match.Options{Policy: "first"})
	if err != nil {
		return err
	}
	script, err := matchDemoFS.ReadFile("matchdemo/script.txt")
	if err != nil {
		return err
	}
	s := matchcli.NewSession(m)
	if clock != nil {
		s.Clock = clock
	}
	s.ReadFile = func(p string) ([]byte, error) { return matchDemoFS.ReadFile(path.Join("matchdemo", p)) }
	fmt.Fprintf(out, "graph: %s (%d vertices, %d nodes), policy %s\n\n", matchDemoGraph, g.Len(), len(g.ByTypeName("node")), m.Policy().Name)
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
