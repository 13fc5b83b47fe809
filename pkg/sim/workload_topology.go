package sim

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Topology in the native format (docs/sim-workload.md):
//
//	topology_levels: [topology.kubernetes.io/zone, example.com/block, example.com/rack]
//	groups:
//	  - {name: a, pods: 4, cpu: 2, runtime: 60, topology_required: example.com/rack}
//	  - {name: b, pods: 8, cpu: 2, runtime: 60, topology_preferred: example.com/rack}
//
// topology_levels are node label keys, outermost first; a group asks for
// one domain of a label key (the nodes sharing one value of it), required
// or preferred. Every key must be a label some node of the cluster
// carries: a key no node has is a typo far more often than a test of the
// schedulers (which would only reject, or ignore, the group).

// clusterLabelKeys is the set of label keys the cluster's nodes carry; nil
// for a cluster without nodes (its error is reported already: keys are
// not checked against it).
func clusterLabelKeys(c Cluster) map[string]bool {
	if len(c.Nodes) == 0 {
		return nil
	}
	keys := map[string]bool{}
	for _, n := range c.Nodes {
		for k := range n.Labels {
			keys[k] = true
		}
	}
	return keys
}

// labelKeyList names the keys for an error message, sorted.
func labelKeyList(keys map[string]bool) string {
	if len(keys) == 0 {
		return "no node has a label"
	}
	list := make([]string, 0, len(keys))
	for k := range keys {
		list = append(list, k)
	}
	slices.Sort(list)
	const most = 8
	if len(list) > most {
		return "node labels: " + strings.Join(list[:most], ", ") + fmt.Sprintf(" and %d more", len(list)-most)
	}
	return "node labels: " + strings.Join(list, ", ")
}

// topologyLevels reads topology_levels: a list of distinct label keys,
// each with a name after its prefix (the core names a level's vertices by
// it) and carried by some node.
func (c *yctx) topologyLevels(n *yaml.Node, cl Cluster) []string {
	const path = "topology_levels"
	seq, ok := c.sequence(n, path)
	if !ok {
		return nil
	}
	if len(seq) == 0 {
		c.errf(path, "must list at least one node label key, outermost first (leave it out for none)")
		return nil
	}
	labels := clusterLabelKeys(cl)
	var out []string
	for i, kn := range seq {
		p := yidx(path, i)
		k, ok := c.str(kn, p)
		if !ok {
			continue
		}
		switch prev := slices.Index(out, k); {
		case k == "":
			c.errf(p, "must not be empty")
		case prev >= 0:
			c.errf(p, "level %q is listed twice (also %s)", k, yidx(path, prev))
		case strings.HasSuffix(k, "/"):
			c.errf(p, "label key %q has no name after its prefix", k)
		case labels != nil && !labels[k]:
			c.errf(p, "label key %q is on no node of the cluster (%s)", k, labelKeyList(labels))
		}
		out = append(out, k)
	}
	return out
}

// groupTopology reads a group's topology_required or topology_preferred
// into g. Errors name the group as well as the field: a workload of
// hundreds of groups is read by name.
func (c *yctx) groupTopology(m ymap, path string, g *GroupSpec, labels map[string]bool) {
	read := func(key string) string {
		n := m.get(key)
		if n == nil {
			return ""
		}
		p := ykey(path, key)
		v, ok := c.str(n, p)
		switch {
		case !ok:
			return ""
		case v == "":
			c.errf(p, "group %q: must name a node label key (leave it out for none)", g.Name)
		case labels != nil && !labels[v]:
			c.errf(p, "group %q: label key %q is on no node of the cluster (%s)", g.Name, v, labelKeyList(labels))
		}
		return v
	}
	g.TopologyRequired = read("topology_required")
	g.TopologyPreferred = read("topology_preferred")
	if g.TopologyRequired != "" && g.TopologyPreferred != "" {
		c.errf(path, "group %q: gives both topology_required (%s) and topology_preferred (%s); a group's domain is required or preferred, not both",
			g.Name, g.TopologyRequired, g.TopologyPreferred)
	}
}
