package resource

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// Builder assembles small hand-made graphs, mainly for tests in other
// packages:
//
//	g := resource.Build("cluster").
//		Node("node0", resource.Props{"arch": "amd64"}, resource.Cores(4), resource.GPUs(1), resource.Memory(16)).
//		Node("node1", resource.Sockets(2), resource.Cores(8)).
//		Down("node1").
//		Graph()
//
// The root is <rootType>0. Each Node adds one vertex of type node under the
// root (or under the current Group) with the leaves its options describe.
// Naming follows the generator (see Generate): a name with a trailing
// integer, like node7 or kind-worker2, gives basename "node"/"kind-worker"
// and id 7/2; a name without one keeps the whole name and gets the next
// ordinal of its type as id. Ranks are the order of Node calls (0, 1, ...),
// and every leaf of a node carries its node's rank. Leaves are numbered per
// type within their node (core0..core7 across two sockets), uniq_ids follow
// creation order.
//
// Errors (bad counts, duplicate node names, an unknown Down name) are kept
// and reported by Finish; Graph panics on them.
type Builder struct {
	g      *Graph
	root   int32
	parent int32 // where Node adds nodes
	uniq   int64
	nodes  int64
	ords   map[string]int64 // next ordinal id per type, for names without digits
	names  map[string]bool  // node and group names used so far
	down   []string
	err    error
}

// Build starts a graph whose root has type rootType (named rootType + "0").
func Build(rootType string) *Builder {
	b := &Builder{g: New(), ords: map[string]int64{}, names: map[string]bool{}}
	if rootType == "" {
		b.err = errors.New("resource: Build: empty root type")
		rootType = "cluster"
	}
	b.root = b.add(Vertex{Type: b.g.Intern(rootType), Basename: rootType, Rank: -1, Size: 1}, None)
	b.ords[rootType] = 1
	b.parent = b.root
	return b
}

// NodeOption describes part of a node for Builder.Node: Props, Cores, GPUs,
// Memory, Pool or Sockets.
type NodeOption interface {
	applyNode(*nodeSpec)
}

// Props are the RFC 31 properties of a node (Kubernetes labels); as a
// NodeOption they are copied onto the node vertex.
type Props map[string]string

func (p Props) applyNode(s *nodeSpec) {
	if len(p) == 0 {
		return
	}
	if s.props == nil {
		s.props = map[string]string{}
	}
	maps.Copy(s.props, p)
}

type nodeSpec struct {
	props   map[string]string
	sockets int
	leaves  []leafSpec
	err     error
}

type leafSpec struct {
	typ   string
	count int
	size  int64
	unit  string
}

type nodeOptionFunc func(*nodeSpec)

func (f nodeOptionFunc) applyNode(s *nodeSpec) { f(s) }

// Pool adds count leaves of type typ, each a pool of size units of unit
// (per socket when Sockets is used).
func Pool(typ string, count int, size int64, unit string) NodeOption {
	return nodeOptionFunc(func(s *nodeSpec) {
		switch {
		case typ == "":
			s.fail(errors.New("empty leaf type"))
		case count < 0:
			s.fail(fmt.Errorf("%s count %d is negative", typ, count))
		case size < 1:
			s.fail(fmt.Errorf("%s size %d must be at least 1", typ, size))
		}
		s.leaves = append(s.leaves, leafSpec{typ, count, size, unit})
	})
}

// Cores adds n core vertices of size 1 (per socket when Sockets is used).
func Cores(n int) NodeOption { return Pool("core", n, 1, "") }

// GPUs adds n gpu vertices of size 1 (per socket when Sockets is used).
func GPUs(n int) NodeOption { return Pool("gpu", n, 1, "") }

// Memory adds one memory vertex of gb units of unit "GB" (per socket when
// Sockets is used).
func Memory(gb int64) NodeOption { return Pool("memory", 1, gb, "GB") }

// Sockets puts n socket vertices under the node and repeats the node's
// leaves (Cores, GPUs, Memory, Pool) under each socket.
func Sockets(n int) NodeOption {
	return nodeOptionFunc(func(s *nodeSpec) {
		if n < 1 {
			s.fail(fmt.Errorf("socket count %d must be at least 1", n))
		}
		s.sockets = n
	})
}

func (s *nodeSpec) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

func (b *Builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

func (b *Builder) add(v Vertex, parent int32) int32 {
	v.UniqID = b.uniq
	b.uniq++
	i, err := b.g.AddVertex(v, parent)
	if err != nil {
		b.fail(err)
	}
	return i
}

// splitName derives basename, id and stored Name from a vertex name.
func (b *Builder) splitName(typ, name string) (basename string, id int64, stored string) {
	if d := trailingDigits([]byte(name)); d > 0 && d < len(name) {
		if n, err := strconv.ParseInt(name[len(name)-d:], 10, 64); err == nil {
			basename = name[:len(name)-d]
			v := Vertex{Basename: basename, ID: n}
			if v.DisplayName() != name {
				stored = name // e.g. node007
			}
			return basename, n, stored
		}
	}
	id = b.ords[typ]
	b.ords[typ]++
	return name, id, name
}

// Group adds a vertex of type typ (a zone, rack or subnet) named name under
// the root; the following Node calls add nodes under it, until the next
// Group.
func (b *Builder) Group(typ, name string) *Builder {
	if typ == "" || name == "" {
		b.fail(fmt.Errorf("resource: Builder.Group(%q, %q): empty type or name", typ, name))
		return b
	}
	if b.names[name] {
		b.fail(fmt.Errorf("resource: Builder.Group: duplicate name %q", name))
		return b
	}
	b.names[name] = true
	base, id, stored := b.splitName(typ, name)
	b.parent = b.add(Vertex{Type: b.g.Intern(typ), Basename: base, Name: stored, ID: id, Rank: -1, Size: 1}, b.root)
	return b
}

// Node adds a node named name with the given properties and leaves.
func (b *Builder) Node(name string, opts ...NodeOption) *Builder {
	var spec nodeSpec
	for _, o := range opts {
		if o != nil {
			o.applyNode(&spec)
		}
	}
	switch {
	case name == "":
		b.fail(errors.New("resource: Builder.Node: empty name"))
		return b
	case spec.err != nil:
		b.fail(fmt.Errorf("resource: Builder.Node(%q): %w", name, spec.err))
		return b
	case b.names[name]:
		b.fail(fmt.Errorf("resource: Builder.Node: duplicate name %q", name))
		return b
	}
	b.names[name] = true
	rank := b.nodes
	b.nodes++
	base, id, stored := b.splitName("node", name)
	node := b.add(Vertex{
		Type: b.g.Intern("node"), Basename: base, Name: stored, ID: id,
		Rank: rank, Size: 1, Properties: spec.props,
	}, b.parent)
	local := map[string]int64{}
	addLeaves := func(parent int32) {
		for _, l := range spec.leaves {
			t := b.g.Intern(l.typ)
			for range l.count {
				b.add(Vertex{Type: t, Basename: l.typ, ID: local[l.typ], Rank: rank, Size: l.size, Unit: l.unit}, parent)
				local[l.typ]++
			}
		}
	}
	if spec.sockets == 0 {
		addLeaves(node)
		return b
	}
	st := b.g.Intern("socket")
	for range spec.sockets {
		sock := b.add(Vertex{Type: st, Basename: "socket", ID: local["socket"], Rank: rank, Size: 1}, node)
		local["socket"]++
		addLeaves(sock)
	}
	return b
}

// Down marks a vertex down when the graph is finished. name is a vertex
// name (it must be unique, like a node name) or a containment path.
func (b *Builder) Down(name string) *Builder {
	b.down = append(b.down, name)
	return b
}

// Finish finalizes and returns the graph, or the first error met.
func (b *Builder) Finish() (*Graph, error) {
	if b.err != nil {
		return nil, b.err
	}
	if err := b.g.Finalize(); err != nil {
		return nil, err
	}
	for _, name := range b.down {
		var i int32
		if strings.HasPrefix(name, "/") {
			var ok bool
			if i, ok = b.g.ByPath(name); !ok {
				return nil, fmt.Errorf("resource: Builder.Down: no vertex has path %q", name)
			}
		} else {
			switch vs := b.g.ByName(name); len(vs) {
			case 0:
				return nil, fmt.Errorf("resource: Builder.Down: no vertex is named %q", name)
			case 1:
				i = vs[0]
			default:
				return nil, fmt.Errorf("resource: Builder.Down: %d vertices are named %q; use a path", len(vs), name)
			}
		}
		b.g.SetStatus(i, Down)
	}
	return b.g, nil
}

// Graph is Finish for tests: it panics on error.
func (b *Builder) Graph() *Graph {
	g, err := b.Finish()
	if err != nil {
		panic(err)
	}
	return g
}

// TinyCluster is a small fixed graph for tests: cluster0 with 4 nodes
// (node0..node3, ranks 0..3), each with 2 sockets holding 4 cores, 1 gpu
// and one 16 GB memory pool: 8 cores, 2 gpus and 32 GB per node, 61
// vertices in all. It equals
// MustGenerate("cluster[1]->node[4]->socket[2]->{core[4],gpu[1],memory[1]:16GB}").
func TinyCluster() *Graph {
	b := Build("cluster")
	for i := range 4 {
		b.Node("node"+strconv.Itoa(i), Sockets(2), Cores(4), GPUs(1), Memory(16))
	}
	return b.Graph()
}
