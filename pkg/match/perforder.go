package match

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/fluence-sched/fluence/pkg/resource"
)

// perfOrder returns u's children ordered by ascending perf_class property
// (default 9999, as in Fluxion's variation-aware policy), then uniq_id.
// Sorting on every visit would cost more than the walk it orders, so the
// order is cached with the values it was sorted on. Properties change in
// place (the gang core relabels a node's vertex without rebuilding the
// graph, and constraints read them live), so the first use in each
// operation compares the values again and sorts anew only when one
// changed.
func (m *Matcher) perfOrder(u int32) []int32 {
	if m.perfCache == nil {
		m.perfCache = map[int32]*perfEntry{}
	}
	kids := m.g.Children(u)
	e := m.perfCache[u]
	if e != nil && (e.checked == m.ops || e.current(m.g, kids)) {
		e.checked = m.ops
		return e.order
	}
	if e == nil {
		e = &perfEntry{}
		m.perfCache[u] = e
	}
	// Fresh slices: a walk may still be iterating the old order.
	e.values = make([]string, len(kids))
	for i, v := range kids {
		e.values[i] = perfValue(m.g, v)
	}
	e.order = slices.Clone(kids)
	class := func(v int32) int64 { return perfClassOf(e.values[m.childPos[v]]) }
	slices.SortStableFunc(e.order, func(a, b int32) int { return cmp.Compare(class(a), class(b)) })
	e.checked = m.ops
	return e.order
}

// perfEntry is one vertex's cached child order, the raw perf_class of
// each child, by position, it was sorted on, and the operation that last
// found them current.
type perfEntry struct {
	order   []int32
	values  []string
	checked uint64
}

// current says whether every child still has the perf_class the order was
// sorted on.
func (e *perfEntry) current(g *resource.Graph, kids []int32) bool {
	if len(e.values) != len(kids) {
		return false
	}
	for i, v := range kids {
		if perfValue(g, v) != e.values[i] {
			return false
		}
	}
	return true
}

// perfValue is a vertex's raw perf_class; absent reads as "", which, like
// any value that is not a number, is class 9999.
func perfValue(g *resource.Graph, v int32) string {
	return g.Vertex(v).Properties["perf_class"]
}

func perfClassOf(s string) int64 {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	return 9999
}
