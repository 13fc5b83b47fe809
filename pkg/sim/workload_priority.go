package sim

import (
	"math"

	"go.yaml.in/yaml/v3"
)

// A group's priority is its pods' (docs/sim-workload.md): higher first in
// every scheduler's queue, and, with preemption, a group may evict
// groups of strictly lower priority. It is a Kubernetes pod priority, a
// 32-bit integer; the fluence model hands it to the core as the pods'
// gang.Pod.Priority.

// Limits of a group's priority: a pod's spec.priority is an int32.
const (
	minPriority = math.MinInt32
	maxPriority = math.MaxInt32
)

// groupPriority reads groups[i].priority; errors name the group.
func (c *yctx) groupPriority(n *yaml.Node, path, group string) int64 {
	n = yderef(n)
	var v int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		c.errf(path, "group %q: must be a whole number (a pod priority; higher goes first), got %s", group, ydescribe(n))
		return 0
	}
	if v < minPriority || v > maxPriority {
		c.errf(path, "group %q: %d is out of range: a pod priority is a 32-bit integer, %d to %d", group, v, int64(minPriority), int64(maxPriority))
		return 0
	}
	return v
}
