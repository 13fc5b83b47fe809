package kubectlfluence

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/fluence-sched/fluence/pkg/inspect"
)

func (o *options) graph(ctx context.Context, c *client, _ string) error {
	var g inspect.Graph
	if err := c.get(ctx, inspect.ResourceGraph, "", "", &g); err != nil {
		return err
	}
	if done, err := o.printRaw(g); done {
		return err
	}
	w := o.streams.Out
	if !g.Built {
		fmt.Fprintln(w, "No graph yet: fluence has seen no node.")
		return nil
	}
	var types []string
	for _, t := range g.Types {
		types = append(types, fmt.Sprintf("%s %d", t.Type, t.Vertices))
	}
	fmt.Fprintf(w, "%d vertices (%s); built %d times", g.Vertices, strings.Join(types, ", "), g.Rebuilds)
	if g.Stale {
		fmt.Fprint(w, "; nodes changed since, rebuilt before the next decision")
	}
	if g.Arriving > 0 {
		fmt.Fprintf(w, "; %d new nodes join it within a second", g.Arriving)
	}
	fmt.Fprintln(w)
	printLevels(w, g.Levels)
	printVertex(w, g.Root, "", "", o.output == "wide")
	return nil
}

// printLevels names the topology levels and the nodes that miss a level's
// label: they are grouped under a domain of their own, which a topology
// key cannot choose.
func printLevels(w io.Writer, levels []inspect.GraphLevel) {
	if len(levels) == 0 {
		return
	}
	var names []string
	for _, l := range levels {
		names = append(names, fmt.Sprintf("%s (%s, %s)", l.Type, l.Key, plural(l.Domains, "value")))
	}
	fmt.Fprintf(w, "Levels: cluster > %s > node\n", strings.Join(names, " > "))
	for _, l := range levels {
		if l.Unlabelled > 0 {
			verb := "have"
			if l.Unlabelled == 1 {
				verb = "has"
			}
			fmt.Fprintf(w, "%s %s no %s label: under %s %s\n", plural(l.Unlabelled, "node"), verb, l.Key, l.Type, l.UnknownDomain)
		}
	}
}

// printVertex draws the graph as a tree. A node's pools go on its own line
// unless wide, which draws them as vertices too.
func printVertex(w io.Writer, v *inspect.Vertex, lead, childLead string, wide bool) {
	fmt.Fprintf(w, "%s%s %s", lead, v.Type, v.Name)
	children := v.Children
	if v.Type == "node" && !wide {
		var pools []string
		for _, c := range v.Children {
			pools = append(pools, pool(c))
		}
		if len(pools) > 0 {
			fmt.Fprintf(w, ": %s", strings.Join(pools, ", "))
		}
		children = nil
	} else if len(children) == 0 && v.Type != "cluster" {
		fmt.Fprintf(w, ": %s", strings.TrimPrefix(pool(v), v.Type+" "))
	}
	if v.Down {
		fmt.Fprint(w, " (down)")
	}
	fmt.Fprintln(w)
	for i, c := range children {
		if i == len(children)-1 {
			printVertex(w, c, childLead+"└── ", childLead+"    ", wide)
		} else {
			printVertex(w, c, childLead+"├── ", childLead+"│   ", wide)
		}
	}
}

// pool renders a leaf: its size in its unit, or a count of identical ones.
func pool(v *inspect.Vertex) string {
	switch {
	case v.Count > 1:
		return fmt.Sprintf("%s ×%d", v.Type, v.Count)
	case v.Unit == "m":
		return v.Type + " " + cpu(v.Size)
	case v.Unit == "MiB":
		return v.Type + " " + memory(v.Size<<20)
	}
	return fmt.Sprintf("%s %d%s", v.Type, v.Size, v.Unit)
}

// plural counts things: 1 node, 2 nodes.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
