package gang

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// ZoneLabel is the well-known node label that places a node in a zone.
const ZoneLabel = "topology.kubernetes.io/zone"

// DefaultTopology is the zone (and rack) of nodes without the label in a
// graph built without topology levels.
const DefaultTopology = "default"

// UnknownDomain stands for the value of a topology level's label on the
// nodes without it. It is not a valid Kubernetes label value (those begin
// with a letter or digit), so no labelled domain can take its place.
const UnknownDomain = "_unknown"

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

// level is one topology level of the graph: the nodes sharing a value of
// its label form a domain, one vertex of type typ under the domain of the
// level above.
type level struct {
	key, typ string
	// missing is the domain value of nodes without the label: "default"
	// in the graph without levels (as it always was), "" otherwise.
	missing string
	// levelled: a graph built from topology levels. Its domain vertices
	// are named <type>-<value> and carry the property key=value; the
	// graph without levels keeps its plain names and no properties, so
	// that nothing built on it before moves.
	levelled bool
}

// reservedTypes are the vertex types the core gives a meaning to; a level
// may not take one.
var reservedTypes = []string{"cluster", typeNode, TypeCPU, TypeMemory, TypeGPU, TypePods, TypeDevice}

// graphLevels returns the levels of a graph without topology levels: the
// zone, then the rack when rackLabel is set.
func graphLevels(rackLabel string) []level {
	ls := []level{{key: ZoneLabel, typ: "zone", missing: DefaultTopology}}
	if rackLabel != "" {
		ls = append(ls, level{key: rackLabel, typ: "rack", missing: DefaultTopology})
	}
	return ls
}

// topologyLevels returns the levels of the label keys, outermost first.
// A level's type is its key's name (the part after the prefix), unless
// that is a type the core uses or an outer level's: then the name with
// the level's number (1 outermost), then with a count, until it is free.
func topologyLevels(keys []string) ([]level, error) {
	ls := make([]level, 0, len(keys))
	taken := slices.Clone(reservedTypes)
	for i, k := range keys {
		if k == "" {
			return nil, fmt.Errorf("gang: topology level %d is an empty label key", i+1)
		}
		if slices.ContainsFunc(ls, func(l level) bool { return l.key == k }) {
			return nil, fmt.Errorf("gang: topology level %d: label key %s is listed twice", i+1, k)
		}
		name := k[strings.LastIndex(k, "/")+1:]
		if name == "" {
			return nil, fmt.Errorf("gang: topology level %d: label key %s has no name after its prefix", i+1, k)
		}
		typ := name
		for n := 0; slices.Contains(taken, typ); n++ {
			typ = fmt.Sprintf("%s-%d", name, i+1)
			if n > 0 {
				typ = fmt.Sprintf("%s-%d-%d", name, i+1, n)
			}
		}
		taken = append(taken, typ)
		ls = append(ls, level{key: k, typ: typ, levelled: true})
	}
	return ls, nil
}

// value is the node's domain at level l.
func (l level) value(n *Node) string {
	if v := n.Labels[l.key]; v != "" {
		return v
	}
	return l.missing
}

// vertexName names a domain vertex of the level.
func (l level) vertexName(value string) string {
	if !l.levelled {
		return value
	}
	if value == "" {
		value = UnknownDomain
	}
	return l.typ + "-" + value
}

// BuildGraph builds the resource graph of the nodes without topology
// levels:
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
	return buildGraph(nodes, graphLevels(rackLabel))
}

// BuildGraphLevels builds the resource graph of the nodes with the given
// topology levels (node label keys, outermost first) instead of the zone
// and rack:
//
//	cluster0
//	└── <level 1 type> <type>-<value>, property <key>=<value>
//	    └── ... one vertex per domain of each level within its parent
//	        └── node <name>, as in BuildGraph
//
// Only the listed levels are built: the zone is a level when its label
// is listed. Nodes without a level's label (or with an empty value) go
// under that level's domain <type>-_unknown, last among its siblings,
// which carries no property. A domain is a vertex per parent: nodes
// sharing a rack label under two blocks are two rack vertices.
func BuildGraphLevels(nodes []*Node, keys []string) (*resource.Graph, error) {
	ls, err := topologyLevels(keys)
	if err != nil {
		return nil, err
	}
	return buildGraph(nodes, ls)
}

// levels returns the core's topology levels, outermost first.
func (c *Core) levels() []level {
	if len(c.cfg.TopologyLevels) == 0 {
		return graphLevels(c.cfg.RackLabel)
	}
	ls, _ := topologyLevels(c.cfg.TopologyLevels) // checked by New
	return ls
}

// domainTree is the domains of one level within a parent domain, and the
// nodes (indexes into the sorted nodes) of the innermost level.
type domainTree struct {
	sub   map[string]*domainTree
	nodes []int
}

func buildGraph(nodes []*Node, levels []level) (*resource.Graph, error) {
	sorted := slices.Clone(nodes)
	for i, n := range sorted {
		if n == nil || n.Name == "" {
			return nil, fmt.Errorf("gang: node %d has no name", i)
		}
		a := n.Allocatable
		if a.MilliCPU < 0 || a.MemoryBytes < 0 || a.GPU < 0 || a.Pods < 0 {
			return nil, fmt.Errorf("gang: node %s: negative allocatable resources %+v", n.Name, a)
		}
		for k, d := range n.Devices {
			if d.ID == "" {
				return nil, fmt.Errorf("gang: node %s: device %d has no ID", n.Name, k)
			}
		}
	}
	slices.SortFunc(sorted, func(a, b *Node) int { return cmp.Compare(a.Name, b.Name) })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].Name == sorted[i-1].Name {
			return nil, fmt.Errorf("gang: node %s is listed twice", sorted[i].Name)
		}
	}
	tree := &domainTree{}
	for i, n := range sorted {
		t := tree
		for _, l := range levels {
			v := l.value(n)
			if t.sub == nil {
				t.sub = map[string]*domainTree{}
			}
			if t.sub[v] == nil {
				t.sub[v] = &domainTree{}
			}
			t = t.sub[v]
		}
		t.nodes = append(t.nodes, i)
	}
	g := resource.New()
	// Types are interned in the order the graph without levels always
	// had (cluster, zone, rack, node, ...), so that its type ids stay.
	tCluster := g.Intern("cluster")
	if len(levels) == 0 || !levels[0].levelled {
		g.Intern("zone")
		g.Intern("rack")
	}
	tLevels := make([]resource.TypeID, len(levels))
	for i, l := range levels {
		tLevels[i] = g.Intern(l.typ)
	}
	tNode := g.Intern(typeNode)
	tCPU, tMem, tGPU, tPods := g.Intern(TypeCPU), g.Intern(TypeMemory), g.Intern(TypeGPU), g.Intern(TypePods)
	// Interned last, and only where there are devices, so that the type
	// ids of a graph without them stay as they were.
	var tDev resource.TypeID
	if slices.ContainsFunc(sorted, func(n *Node) bool { return len(n.Devices) > 0 }) {
		tDev = g.Intern(TypeDevice)
	}
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
	addNodes := func(idx []int, parent int32) error {
		for _, i := range idx {
			n, rank := sorted[i], int64(i)
			status := resource.Up
			if n.Down {
				status = resource.Down
			}
			nv, err := add(resource.Vertex{Type: tNode, Status: status, Basename: "node", Name: n.Name, ID: rank, Rank: rank, Size: 1, Properties: maps.Clone(n.Labels)}, parent)
			if err != nil {
				return fmt.Errorf("gang: node %s: %w", n.Name, err)
			}
			a := n.Allocatable
			pods := podPlaces(a)
			leaves := []resource.Vertex{
				{Type: tCPU, Basename: TypeCPU, Size: a.MilliCPU, Unit: UnitMilli},
				{Type: tMem, Basename: TypeMemory, Size: a.MemoryBytes >> 20, Unit: UnitMiB},
				{Type: tPods, Basename: TypePods, Size: pods},
			}
			for _, l := range leaves {
				if l.Size > 0 {
					l.Rank = rank
					if _, err := add(l, nv); err != nil {
						return fmt.Errorf("gang: node %s: %w", n.Name, err)
					}
				}
			}
			for k := range a.GPU {
				if _, err := add(resource.Vertex{Type: tGPU, Basename: TypeGPU, ID: k, Rank: rank, Size: 1}, nv); err != nil {
					return fmt.Errorf("gang: node %s: %w", n.Name, err)
				}
			}
			// A device vertex's id is its index in the node's devices,
			// which is how the core finds the device it stands for.
			for k, d := range n.Devices {
				props := make(map[string]string, len(d.Attributes)+2)
				maps.Copy(props, d.Attributes)
				props[DeviceIDProperty] = d.ID
				if _, err := add(resource.Vertex{Type: tDev, Basename: TypeDevice, ID: int64(k), Rank: rank, Size: 1, Properties: props}, nv); err != nil {
					return fmt.Errorf("gang: node %s: device %s: %w", n.Name, d.ID, err)
				}
			}
		}
		return nil
	}
	var addDomains func(t *domainTree, depth int, parent int32) error
	addDomains = func(t *domainTree, depth int, parent int32) error {
		if depth == len(levels) {
			return addNodes(t.nodes, parent)
		}
		l := levels[depth]
		for i, v := range domainOrder(t.sub) {
			vx := resource.Vertex{Type: tLevels[depth], Basename: l.typ, Name: l.vertexName(v), ID: int64(i), Rank: -1, Size: 1}
			if l.levelled && v != "" {
				vx.Properties = map[string]string{l.key: v}
			}
			dv, err := add(vx, parent)
			if err != nil {
				return err
			}
			if err := addDomains(t.sub[v], depth+1, dv); err != nil {
				return err
			}
		}
		return nil
	}
	if err := addDomains(tree, 0, root); err != nil {
		return nil, err
	}
	if err := g.Finalize(); err != nil {
		return nil, err
	}
	return g, nil
}

// domainOrder sorts the domain values of a level, the nodes without the
// label ("") last.
func domainOrder(sub map[string]*domainTree) []string {
	vs := slices.Sorted(maps.Keys(sub))
	if len(vs) > 0 && vs[0] == "" {
		vs = append(vs[1:], "")
	}
	return vs
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
	// Devices is what the pod's resource claims ask of its node's
	// devices (devices.go); nil for none. Interned: equal asks are one.
	Devices *deviceAsk
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
	w = append(w, s.Devices.with()...)
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
	return groupJobspecWith(shapes, requires, 0, Shape{}, constraint, "", duration, apart)
}

// groupJobspecWith is groupJobspec plus standIns slots of the stand-in
// shape on any node, counted rather than listed: a group may expect two
// billion pods, and one of each would not fit in memory.
//
// A level names a vertex type of the graph above the nodes: the pods are
// then asked for within one vertex of it (rack[1] -> slots), one domain
// of a topology level, which the matcher chooses.
func groupJobspecWith(shapes []Shape, requires []*jobspec.Constraint, standIns int64, standIn Shape, constraint *jobspec.Constraint, level string, duration int64, apart bool) (*jobspec.Jobspec, []slotGroup, error) {
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
	if level != "" {
		rs = []*jobspec.ResourceBuilder{jobspec.R(level, 1).With(rs...)}
	}
	b := jobspec.New(rs...).Duration(duration)
	if constraint != nil {
		b = b.Constraint(constraint)
	}
	js, err := b.Build()
	return js, groups, err
}
