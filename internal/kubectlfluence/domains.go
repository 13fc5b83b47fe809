package kubectlfluence

import (
	"strings"

	"github.com/fluence-sched/fluence/pkg/inspect"
)

// levelColumns names the columns of kubectl fluence nodes -o wide for the
// topology levels, outermost first: the levels' vertex types (zone, block,
// rack). A node list from a scheduler that reports no levels (one older
// than them) shows its zone and rack labels instead.
func levelColumns(list inspect.NodeList) []string {
	if len(list.Levels) == 0 {
		return []string{"Zone", "Rack"}
	}
	cols := make([]string, len(list.Levels))
	for i, l := range list.Levels {
		cols[i] = strings.ToUpper(l[:1]) + l[1:]
	}
	return cols
}

// nodeDomains is a node's domain at each level column.
func nodeDomains(list inspect.NodeList, n inspect.Node) []string {
	if len(list.Levels) == 0 {
		return []string{orNone(n.Zone), orNone(n.Rack)}
	}
	out := make([]string, len(list.Levels))
	for i := range out {
		out[i] = "<none>"
		if i < len(n.Domains) {
			out[i] = n.Domains[i]
		}
	}
	return out
}
