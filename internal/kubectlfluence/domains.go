package kubectlfluence

import (
	"context"
	"fmt"
	"strings"

	"github.com/fluence-sched/fluence/pkg/inspect"
)

// levelDomains is one topology level as a column of kubectl fluence nodes
// -o wide: the domain of each node at that level.
type levelDomains struct {
	name string // the column: the level's vertex type (zone, block, rack)
	// byNode is each node's domain value; a node the graph does not have
	// yet has none (<pending>).
	byNode map[string]string
	// fallback is the domain of every node when there is no graph to read
	// them from (the node list's own zone and rack).
	fallback map[string]string
}

func (l levelDomains) domain(node string) string {
	if l.fallback != nil {
		return orNone(l.fallback[node])
	}
	if v, ok := l.byNode[node]; ok {
		return v
	}
	return "<pending>"
}

// nodeDomains reads the graph for the nodes' domains at each of its
// topology levels, outermost first. The graph is the one fluence decided
// on last: when nodes changed since (a node added or relabelled) it says
// so, and the domains are those of that graph until the next decision
// rebuilds it. If the graph cannot be read, the node list's zone and rack
// stand in for the levels.
func (o *options) nodeDomains(ctx context.Context, c *client, list inspect.NodeList) []levelDomains {
	var g inspect.Graph
	if err := c.get(ctx, inspect.ResourceGraph, "", "", &g); err != nil {
		fmt.Fprintf(o.streams.ErrOut, "Cannot read the graph for the nodes' topology domains (%v): showing their zone and rack labels.\n", firstLine(err))
		zone, rack := levelDomains{name: "Zone", fallback: map[string]string{}}, levelDomains{name: "Rack", fallback: map[string]string{}}
		for _, n := range list.Items {
			zone.fallback[n.Name], rack.fallback[n.Name] = n.Zone, n.Rack
		}
		return []levelDomains{zone, rack}
	}
	if g.Stale {
		fmt.Fprintln(o.streams.ErrOut, "Nodes changed since fluence's graph was built: their domains are shown as that graph has them (<pending>: not in it yet) until its next decision rebuilds it.")
	}
	levels := make([]levelDomains, len(g.Levels))
	byType := map[string]int{}
	for i, l := range g.Levels {
		levels[i] = levelDomains{name: l.Type, byNode: map[string]string{}}
		byType[l.Type] = i
	}
	// A level's domain vertices are named <type>-<value> in a graph built
	// from topology levels (its unknown domain too: <type>-_unknown), and
	// by the plain value in the graph without them (where the unknown
	// domain is "default").
	prefixed := make([]bool, len(g.Levels))
	for i, l := range g.Levels {
		prefixed[i] = strings.HasPrefix(l.UnknownDomain, l.Type+"-")
	}
	if g.Root == nil {
		return levels
	}
	path := make([]string, len(g.Levels))
	var walk func(v *inspect.Vertex)
	walk = func(v *inspect.Vertex) {
		if v.Type == "node" {
			for i := range levels {
				levels[i].byNode[v.Name] = path[i]
			}
			return
		}
		i, isLevel := byType[v.Type]
		if isLevel {
			path[i] = v.Name
			if prefixed[i] {
				path[i] = strings.TrimPrefix(v.Name, v.Type+"-")
			}
		}
		for _, ch := range v.Children {
			walk(ch)
		}
		if isLevel {
			path[i] = ""
		}
	}
	walk(g.Root)
	return levels
}

// firstLine is an error's message up to its first line break (the hints
// explainError adds follow it).
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
