package gang

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// ZoneLabel is the well-known node label that places a node in a zone.
const ZoneLabel = "topology.kubernetes.io/zone"

// DefaultTopology is the zone (and rack) of nodes without the label.
const DefaultTopology = "default"

// Vertex types of the graph the core builds, and the pool units.
const (
	TypeCPU    = "cpu"    // one pool per node, in millicores
	TypeMemory = "memory" // one pool per node, in MiB
	TypeGPU    = "gpu"    // one vertex per GPU
	TypePods   = "pods"   // one pool per node: how many pods it may hold
	typeNode   = "node"
	UnitMilli  = "m"
	UnitMiB    = "MiB"
)

// BuildGraph builds the resource graph of the nodes:
//
//	cluster0
//	└── zone <topology.kubernetes.io/zone, or "default">
//	    └── rack <rackLabel, or "default"> (level omitted when rackLabel is "")
//	        └── node <name>, properties = labels, down when Node.Down
//	            ├── cpu pool, allocatable millicores
//	            ├── memory pool, allocatable MiB (rounded down)
//	            ├── gpu x allocatable GPUs
//	            └── pods pool, allocatable pods
//
// CPU is counted in millicores, as Kubernetes counts it, so sixteen pods
// of 250m share one 4-CPU node. Nodes are ordered by name; a node's rank
// is its index in that order.
func BuildGraph(nodes []*Node, rackLabel string) (*resource.Graph, error) {
	sorted := slices.Clone(nodes)
	for i, n := range sorted {
		if n == nil || n.Name == "" {
			return nil, fmt.Errorf("gang: node %d has no name", i)
		}
		a := n.Allocatable
		if a.MilliCPU < 0 || a.MemoryBytes < 0 || a.GPU < 0 || a.Pods < 0 {
			return nil, fmt.Errorf("gang: node %s: negative allocatable resources %+v", n.Name, a)
		}
	}
	slices.SortFunc(sorted, func(a, b *Node) int { return cmp.Compare(a.Name, b.Name) })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].Name == sorted[i-1].Name {
			return nil, fmt.Errorf("gang: node %s is listed twice", sorted[i].Name)
		}
	}
	zones := map[string]map[string][]int{}
	for i, n := range sorted {
		zone, rack := labelOr(n.Labels, ZoneLabel), ""
		if rackLabel != "" {
			rack = labelOr(n.Labels, rackLabel)
		}
		if zones[zone] == nil {
			zones[zone] = map[string][]int{}
		}
		zones[zone][rack] = append(zones[zone][rack], i)
	}
	g := resource.New()
	tCluster, tZone, tRack, tNode := g.Intern("cluster"), g.Intern("zone"), g.Intern("rack"), g.Intern(typeNode)
	tCPU, tMem, tGPU, tPods := g.Intern(TypeCPU), g.Intern(TypeMemory), g.Intern(TypeGPU), g.Intern(TypePods)
	uniq := int64(0)
	add := func(v resource.Vertex, parent int32) (int32, error) {
		v.UniqID = uniq
		uniq++
		return g.AddVertex(v, parent)
	}
	root, err := add(resource.Vertex{Type: tCluster, Basename: "cluster", Rank: -1, Size: 1}, resource.None)
	if err != nil {
		return nil, err
	}
	for zi, zone := range slices.Sorted(maps.Keys(zones)) {
		zv, err := add(resource.Vertex{Type: tZone, Basename: "zone", Name: zone, ID: int64(zi), Rank: -1, Size: 1}, root)
		if err != nil {
			return nil, err
		}
		for ri, rack := range slices.Sorted(maps.Keys(zones[zone])) {
			parent := zv
			if rackLabel != "" {
				if parent, err = add(resource.Vertex{Type: tRack, Basename: "rack", Name: rack, ID: int64(ri), Rank: -1, Size: 1}, zv); err != nil {
					return nil, err
				}
			}
			for _, i := range zones[zone][rack] {
				n, rank := sorted[i], int64(i)
				status := resource.Up
				if n.Down {
					status = resource.Down
				}
				nv, err := add(resource.Vertex{Type: tNode, Status: status, Basename: "node", Name: n.Name, ID: rank, Rank: rank, Size: 1, Properties: maps.Clone(n.Labels)}, parent)
				if err != nil {
					return nil, fmt.Errorf("gang: node %s: %w", n.Name, err)
				}
				a := n.Allocatable
				pods := a.Pods
				if pods == 0 {
					pods = DefaultMaxPods
				}
				leaves := []resource.Vertex{
					{Type: tCPU, Basename: TypeCPU, Size: a.MilliCPU, Unit: UnitMilli},
					{Type: tMem, Basename: TypeMemory, Size: a.MemoryBytes >> 20, Unit: UnitMiB},
					{Type: tPods, Basename: TypePods, Size: pods},
				}
				for _, l := range leaves {
					if l.Size > 0 {
						l.Rank = rank
						if _, err := add(l, nv); err != nil {
							return nil, fmt.Errorf("gang: node %s: %w", n.Name, err)
						}
					}
				}
				for k := range a.GPU {
					if _, err := add(resource.Vertex{Type: tGPU, Basename: TypeGPU, ID: k, Rank: rank, Size: 1}, nv); err != nil {
						return nil, fmt.Errorf("gang: node %s: %w", n.Name, err)
					}
				}
			}
		}
	}
	if err := g.Finalize(); err != nil {
		return nil, err
	}
	return g, nil
}

func labelOr(labels map[string]string, key string) string {
	if v := labels[key]; v != "" {
		return v
	}
	return DefaultTopology
}

// Shape is a pod's request in graph units: millicores, MiB (rounded up),
// GPUs; every pod also takes one of its node's pod places.
type Shape struct {
	MilliCPU, MemoryMiB, GPU int64
}

// ShapeOf converts requests to graph units.
func ShapeOf(r Resources) Shape {
	// Rounded up without adding first: a request near the largest int64
	// must not wrap to a negative one.
	mib := r.MemoryBytes >> 20
	if r.MemoryBytes&(1<<20-1) != 0 {
		mib++
	}
	return Shape{MilliCPU: r.MilliCPU, MemoryMiB: mib, GPU: r.GPU}
}

// slotResources returns the contents of one pod's slot.
func (s Shape) with() []*jobspec.ResourceBuilder {
	var w []*jobspec.ResourceBuilder
	if s.MilliCPU > 0 {
		w = append(w, jobspec.R(TypeCPU, s.MilliCPU).Unit(UnitMilli))
	}
	if s.MemoryMiB > 0 {
		w = append(w, jobspec.R(TypeMemory, s.MemoryMiB).Unit(UnitMiB))
	}
	if s.GPU > 0 {
		w = append(w, jobspec.R(TypeGPU, s.GPU))
	}
	return append(w, jobspec.R(TypePods, 1))
}

// slotKey groups pods into slot requests: pods with the same shape and
// the same requires share one.
type slotKey struct {
	shape    Shape
	requires string
}

// slotGroup is one slot request of a jobspec: its label, the pods
// (indexes) it stands for, their shape and requires.
type slotGroup struct {
	label    string
	shape    Shape
	requires *jobspec.Constraint
	pods     []int
	// standIns counts slots for pods not seen yet, beside pods.
	standIns int64
}

// onePerNode reports whether groupJobspec asked for the pods on distinct
// nodes (apart).
func onePerNode(js *jobspec.Jobspec) bool {
	return len(js.Resources) == 1 && js.Resources[0].Type == typeNode
}

// groupJobspec builds the jobspec of some pods of a group: one slot per
// pod, one slot request per distinct shape and requires, labelled shape0,
// shape1, ... in order of first appearance. requires is nil or one per
// pod. The slot requests come back with the pods they stand for, in
// jobspec order, so the caller can tell which pod a placed slot is.
//
// apart asks for every pod on a node of its own. With one slot request
// that is node[n] holding one slot each (the nodes shared with other
// jobs, as any node outside a slot); pods of several shapes or requires
// cannot say so, and are placed as slots, which a node's filters may turn
// away (avoid.go).
func groupJobspec(shapes []Shape, requires []*jobspec.Constraint, constraint *jobspec.Constraint, duration int64, apart bool) (*jobspec.Jobspec, []slotGroup, error) {
	return groupJobspecWith(shapes, requires, 0, Shape{}, constraint, duration, apart)
}

// groupJobspecWith is groupJobspec plus standIns slots of the stand-in
// shape on any node, counted rather than listed: a group may expect two
// billion pods, and one of each would not fit in memory.
func groupJobspecWith(shapes []Shape, requires []*jobspec.Constraint, standIns int64, standIn Shape, constraint *jobspec.Constraint, duration int64, apart bool) (*jobspec.Jobspec, []slotGroup, error) {
	if len(shapes) == 0 {
		return nil, nil, fmt.Errorf("a group needs at least one pod")
	}
	if standIns < 0 {
		return nil, nil, fmt.Errorf("%d stand-in pods", standIns)
	}
	var keys []slotKey
	var groups []slotGroup
	for i, s := range shapes {
		if s.MilliCPU < 0 || s.MemoryMiB < 0 || s.GPU < 0 {
			return nil, nil, fmt.Errorf("pod %d requests a negative amount: %+v", i, s)
		}
		k := slotKey{shape: s}
		var r *jobspec.Constraint
		if requires != nil && requires[i] != nil {
			r = requires[i]
			k.requires = r.String()
		}
		j := slices.Index(keys, k)
		if j < 0 {
			j = len(keys)
			keys = append(keys, k)
			groups = append(groups, slotGroup{label: fmt.Sprintf("shape%d", j), shape: s, requires: r})
		}
		groups[j].pods = append(groups[j].pods, i)
	}
	if standIns > 0 {
		s := standIn
		if s.MilliCPU < 0 || s.MemoryMiB < 0 || s.GPU < 0 {
			return nil, nil, fmt.Errorf("a stand-in pod requests a negative amount: %+v", s)
		}
		j := slices.Index(keys, slotKey{shape: s})
		if j < 0 {
			j = len(keys)
			keys = append(keys, slotKey{shape: s})
			groups = append(groups, slotGroup{label: fmt.Sprintf("shape%d", j), shape: s})
		}
		groups[j].standIns += standIns
	}
	rs := make([]*jobspec.ResourceBuilder, len(groups))
	for i, sg := range groups {
		rs[i] = jobspec.Slot(int64(len(sg.pods))+sg.standIns, sg.label).With(sg.shape.with()...).Requires(sg.requires)
	}
	if n := int64(len(shapes)) + standIns; apart && len(groups) == 1 && n > 1 {
		sg := groups[0]
		rs[0] = jobspec.R(typeNode, n).With(jobspec.Slot(1, sg.label).With(sg.shape.with()...).Requires(sg.requires))
	}
	b := jobspec.New(rs...).Duration(duration)
	if constraint != nil {
		b = b.Constraint(constraint)
	}
	js, err := b.Build()
	return js, groups, err
}
