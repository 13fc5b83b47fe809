package resource

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// None is the index used for "no vertex" (the root's parent).
const None int32 = -1

// Graph is a containment tree of resource pools. See the package doc for the
// two-phase build (AddVertex..., Finalize) and the numbering it guarantees.
type Graph struct {
	vertices []Vertex
	parent   []int32
	// After Finalize: children of v are childList[childStart[v]:childStart[v+1]],
	// in ascending UniqID order; subtreeEnd[v] is one past v's last descendant.
	childStart []int32
	childList  []int32
	subtreeEnd []int32
	depth      []int32

	typeNames []string
	typeIDs   map[string]TypeID

	byType map[TypeID][]int32
	byName map[string][]int32 // built on first ByName call
	byRank map[int64][]int32
	byPath map[string]int32 // built on first ByPath call

	finalized bool
	nodesUp   int
	nodeType  TypeID
	hasNode   bool
}

// New returns an empty graph ready for AddVertex.
func New() *Graph {
	return &Graph{typeIDs: map[string]TypeID{}}
}

// Intern returns the TypeID for a type name, creating it if needed.
func (g *Graph) Intern(typ string) TypeID {
	if id, ok := g.typeIDs[typ]; ok {
		return id
	}
	id := TypeID(len(g.typeNames))
	g.typeNames = append(g.typeNames, typ)
	g.typeIDs[typ] = id
	return id
}

// LookupType returns the TypeID of a type name, if any vertex or caller
// interned it.
func (g *Graph) LookupType(typ string) (TypeID, bool) {
	id, ok := g.typeIDs[typ]
	return id, ok
}

// TypeName returns the name of a TypeID.
func (g *Graph) TypeName(t TypeID) string { return g.typeNames[t] }

// NumTypes is the number of interned types; TypeIDs are 0..NumTypes()-1.
func (g *Graph) NumTypes() int { return len(g.typeNames) }

// AddVertex appends a vertex under parent (None for the root) and returns its
// builder index. Parents must be added before their children. Indexes are
// renumbered by Finalize; the returned value is only meaningful before it.
func (g *Graph) AddVertex(v Vertex, parent int32) (int32, error) {
	if g.finalized {
		return None, errors.New("resource: graph is finalized")
	}
	if parent != None && (parent < 0 || int(parent) >= len(g.vertices)) {
		return None, fmt.Errorf("resource: parent index %d out of range", parent)
	}
	if v.Size < 1 {
		return None, fmt.Errorf("resource: vertex %q: size %d must be at least 1", v.DisplayName(), v.Size)
	}
	if int(v.Type) >= len(g.typeNames) {
		return None, fmt.Errorf("resource: vertex %q: unknown type id %d", v.DisplayName(), v.Type)
	}
	if len(g.vertices) >= 1<<31-2 {
		return None, errors.New("resource: too many vertices")
	}
	g.vertices = append(g.vertices, v)
	g.parent = append(g.parent, parent)
	return int32(len(g.vertices) - 1), nil
}

// Finalize checks the tree (exactly one root, every vertex reachable),
// renumbers vertices into pre-order and builds the indexes.
func (g *Graph) Finalize() error {
	if g.finalized {
		return nil
	}
	n := len(g.vertices)
	if n == 0 {
		return errors.New("resource: graph has no vertices")
	}
	root := None
	for i, p := range g.parent {
		if p == None {
			if root != None {
				return fmt.Errorf("resource: two roots: %q and %q",
					g.vertices[root].DisplayName(), g.vertices[i].DisplayName())
			}
			root = int32(i)
		}
	}
	if root == None {
		return errors.New("resource: graph has no root")
	}
	order := preorder(g.parent, func(v int32) int64 { return g.vertices[v].UniqID }, root)
	if len(order) != n {
		return fmt.Errorf("resource: %d of %d vertices are not reachable from the root %q",
			n-len(order), n, g.vertices[root].DisplayName())
	}
	newIdx := make([]int32, n)
	for i, old := range order {
		newIdx[old] = int32(i)
	}
	verts := make([]Vertex, n)
	parent := make([]int32, n)
	for i, old := range order {
		verts[i] = g.vertices[old]
		if p := g.parent[old]; p == None {
			parent[i] = None
		} else {
			parent[i] = newIdx[p]
		}
	}
	g.vertices, g.parent = verts, parent
	g.buildStructure()
	g.finalized = true
	return nil
}

// buildStructure derives children, subtree ranges, depths and indexes from
// the pre-ordered vertices and parent links.
func (g *Graph) buildStructure() {
	n := len(g.vertices)
	g.childStart = make([]int32, n+1)
	for _, p := range g.parent {
		if p != None {
			g.childStart[p+1]++
		}
	}
	for i := 1; i <= n; i++ {
		g.childStart[i] += g.childStart[i-1]
	}
	g.childList = make([]int32, max(n-1, 0))
	fill := slices.Clone(g.childStart[:n])
	// Pre-order visits children in order, so appending keeps UniqID order.
	for i, p := range g.parent {
		if p != None {
			g.childList[fill[p]] = int32(i)
			fill[p]++
		}
	}
	g.subtreeEnd = make([]int32, n)
	g.depth = make([]int32, n)
	for i := n - 1; i >= 0; i-- {
		if g.subtreeEnd[i] == 0 {
			g.subtreeEnd[i] = int32(i + 1)
		}
		if p := g.parent[i]; p != None && g.subtreeEnd[p] < g.subtreeEnd[i] {
			g.subtreeEnd[p] = g.subtreeEnd[i]
		}
	}
	for i := 1; i < n; i++ {
		g.depth[i] = g.depth[g.parent[i]] + 1
	}
	g.byType = map[TypeID][]int32{}
	g.byName = nil
	g.byRank = map[int64][]int32{}
	g.byPath = nil
	g.nodeType, g.hasNode = g.typeIDs["node"]
	g.nodesUp = 0
	for i := range g.vertices {
		v := &g.vertices[i]
		g.byType[v.Type] = append(g.byType[v.Type], int32(i))
		if v.Rank >= 0 {
			g.byRank[v.Rank] = append(g.byRank[v.Rank], int32(i))
		}
		if g.hasNode && v.Type == g.nodeType && v.Status == Up {
			g.nodesUp++
		}
	}
}

// Len is the number of vertices.
func (g *Graph) Len() int { return len(g.vertices) }

// Root is the index of the root vertex (0 after Finalize).
func (g *Graph) Root() int32 { return 0 }

// Finalized reports whether Finalize has run.
func (g *Graph) Finalized() bool { return g.finalized }

// Vertex returns the vertex at index i. The pointer stays valid until the
// graph is finalized again; callers may change Status only via SetStatus.
func (g *Graph) Vertex(i int32) *Vertex { return &g.vertices[i] }

// Parent returns the parent index of i, or None for the root.
func (g *Graph) Parent(i int32) int32 { return g.parent[i] }

// Children returns the children of i in ascending UniqID order. The slice
// is shared: do not modify it.
func (g *Graph) Children(i int32) []int32 {
	return g.childList[g.childStart[i]:g.childStart[i+1]]
}

// SubtreeEnd returns one past the last descendant of i: the subtree of i is
// the index range [i, SubtreeEnd(i)).
func (g *Graph) SubtreeEnd(i int32) int32 { return g.subtreeEnd[i] }

// Depth is the number of edges from the root to i.
func (g *Graph) Depth(i int32) int32 { return g.depth[i] }

// IsAncestor reports whether a is i or an ancestor of i.
func (g *Graph) IsAncestor(a, i int32) bool { return a <= i && i < g.subtreeEnd[a] }

// Path returns the containment path of i, e.g. /cluster0/rack1/node3/core7.
func (g *Graph) Path(i int32) string {
	var parts []string
	for v := i; v != None; v = g.parent[v] {
		parts = append(parts, g.vertices[v].DisplayName())
	}
	slices.Reverse(parts)
	return "/" + strings.Join(parts, "/")
}

// ByType returns the vertices of a type in index order. Shared slice.
func (g *Graph) ByType(t TypeID) []int32 { return g.byType[t] }

// ByTypeName is ByType for a type name; nil when no vertex has the type.
func (g *Graph) ByTypeName(typ string) []int32 {
	t, ok := g.typeIDs[typ]
	if !ok {
		return nil
	}
	return g.byType[t]
}

// ByName returns the vertices with a name in index order. Shared slice.
// The index is built on first use: most callers (the matcher, the
// simulator) never look vertices up by name, and building it costs one
// string and one map insert per vertex at load.
func (g *Graph) ByName(name string) []int32 {
	if g.byName == nil {
		g.byName = map[string][]int32{}
		for i := range g.vertices {
			n := g.vertices[i].DisplayName()
			g.byName[n] = append(g.byName[n], int32(i))
		}
	}
	return g.byName[name]
}

// ByRank returns the vertices with a rank in index order. Shared slice.
func (g *Graph) ByRank(rank int64) []int32 { return g.byRank[rank] }

// ByPath finds a vertex by its containment path.
func (g *Graph) ByPath(path string) (int32, bool) {
	if g.byPath == nil {
		g.byPath = make(map[string]int32, len(g.vertices))
		g.walkPaths(func(i int32, p string) { g.byPath[p] = i })
	}
	i, ok := g.byPath[path]
	return i, ok
}

// walkPaths calls fn with every vertex and its path, building each path from
// its parent's so the whole walk is linear in the total path length.
func (g *Graph) walkPaths(fn func(int32, string)) {
	paths := make([]string, len(g.vertices))
	for i := range g.vertices {
		p := "/" + g.vertices[i].DisplayName()
		if par := g.parent[i]; par != None {
			p = paths[par] + p
		}
		paths[i] = p
		fn(int32(i), p)
	}
}

// NodeType returns the TypeID of "node" and whether the graph has nodes.
func (g *Graph) NodeType() (TypeID, bool) { return g.nodeType, g.hasNode }

// NodesUp is the number of vertices of type node whose status is Up.
func (g *Graph) NodesUp() int { return g.nodesUp }

// SetStatus marks one vertex up or down.
func (g *Graph) SetStatus(i int32, s Status) {
	v := &g.vertices[i]
	if v.Status == s {
		return
	}
	if g.hasNode && v.Type == g.nodeType {
		if s == Up {
			g.nodesUp++
		} else {
			g.nodesUp--
		}
	}
	v.Status = s
}

// NodeOf returns the nearest ancestor of i (or i itself) of type node, or
// None when there is none.
func (g *Graph) NodeOf(i int32) int32 {
	if !g.hasNode {
		return None
	}
	for v := i; v != None; v = g.parent[v] {
		if g.vertices[v].Type == g.nodeType {
			return v
		}
	}
	return None
}

// preorder returns the vertices reachable from root, given parent links, in
// depth-first pre-order with each vertex's children ordered by uniq_id (ties
// by index): the numbering a finalized graph uses. Finalize and the JGF
// reader, which renumbers while it reads, share it so both always agree.
func preorder(parent []int32, uniq func(int32) int64, root int32) []int32 {
	n := len(parent)
	start := make([]int32, n+1)
	for _, p := range parent {
		if p != None {
			start[p+1]++
		}
	}
	for i := 1; i <= n; i++ {
		start[i] += start[i-1]
	}
	kids := make([]int32, max(n-1, 0))
	fill := slices.Clone(start[:n])
	for i, p := range parent {
		if p != None {
			kids[fill[p]] = int32(i)
			fill[p]++
		}
	}
	byUniq := func(a, b int32) int {
		if ua, ub := uniq(a), uniq(b); ua != ub {
			if ua < ub {
				return -1
			}
			return 1
		}
		return int(a - b)
	}
	for v := range n {
		if k := kids[start[v]:start[v+1]]; !slices.IsSortedFunc(k, byUniq) {
			slices.SortFunc(k, byUniq)
		}
	}
	// An explicit stack: graphs can be deep.
	order := make([]int32, 0, n)
	stack := []int32{root}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		order = append(order, v)
		k := kids[start[v]:start[v+1]]
		for i := len(k) - 1; i >= 0; i-- {
			stack = append(stack, k[i])
		}
	}
	return order
}
