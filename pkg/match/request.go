package match

import (
	"fmt"
	"strings"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// req is one compiled jobspec resource.
//
// Counts of a request without children are in units of pool size (memory[4]
// takes 4 units, from one pool or several); a request with children counts
// vertices, each of which must hold its children.
type req struct {
	name  string
	unit  string // the jobspec's unit, for explanations
	label string // slot label
	typ   resource.TypeID
	slot  bool
	known bool // the graph has vertices of this type (slots always "exist")
	count jobspec.Count
	// excl: units are claimed exclusively (under a slot, or exclusive: true).
	excl bool
	// subtree: every claimed vertex is held whole, with all it contains
	// (exclusive: true outside a slot, or a node under a *x policy).
	subtree bool
	with    []*req
	// requires: the node holding a slot must satisfy it (nil: any node).
	requires *jobspec.Constraint
	// need[d] is the minimum number of units of tracked dimension d one unit
	// of this request consumes in its subtree; it drives aggregate pruning.
	need []int64
	// desc caches describe: reservation probes fail one request many
	// times, and each failure names it.
	desc string
	// domain: a known type whose vertices are above the nodes (a rack);
	// tightDim is the dimension in which one unit's need is the largest
	// share of the graph's, by which TightDomains orders candidates.
	domain   bool
	tightDim int
}

// request is a compiled jobspec.
type request struct {
	top []*req
	// need is the minimum the whole request consumes, per dimension.
	need       []int64
	missing    []string
	constraint *jobspec.Constraint
	duration   int64
	// count is what one slot takes per pool when the counting precheck
	// can judge the request (slotcount.go), else nil.
	count []poolNeed
}

// compile turns a validated jobspec into a request tree for this graph.
func (m *Matcher) compile(js *jobspec.Jobspec) *request {
	r := &request{constraint: js.Constraint, duration: js.Duration}
	seen := map[string]bool{}
	var build func(res *jobspec.Resource, underSlot bool) *req
	build = func(res *jobspec.Resource, underSlot bool) *req {
		q := &req{name: res.Type, unit: res.Unit, label: res.Label, slot: res.IsSlot(), count: res.Count, need: make([]int64, m.dims), requires: res.Requires}
		if q.slot {
			q.known = true
			underSlot = true
		} else if t, ok := m.g.LookupType(res.Type); ok && len(m.g.ByType(t)) > 0 {
			q.typ, q.known = t, true
		} else if !seen[res.Type] {
			seen[res.Type] = true
			r.missing = append(r.missing, res.Type)
		}
		explicit := res.Exclusive == jobspec.ExclusiveTrue
		q.excl = underSlot || explicit
		q.subtree = !q.slot && !underSlot && explicit
		if m.policy.NodeExclusive && q.known && !q.slot && m.isNodeType(q.typ) {
			q.excl, q.subtree = true, true
		}
		for _, w := range res.With {
			c := build(w, underSlot)
			q.with = append(q.with, c)
			for d := range q.need {
				q.need[d] += c.count.Min * c.need[d]
			}
		}
		if q.known && !q.slot {
			q.need[m.dimOf[q.typ]]++
			if m.tight || m.exact {
				q.domain, q.tightDim = m.isDomainType(q.typ), m.tightDim(q)
			}
		}
		return q
	}
	r.need = make([]int64, m.dims)
	for _, res := range js.Resources {
		q := build(res, false)
		r.top = append(r.top, q)
		for d := range r.need {
			r.need[d] += q.count.Min * q.need[d]
		}
	}
	r.count = m.countable(r)
	return r
}

func (m *Matcher) isNodeType(t resource.TypeID) bool {
	nt, ok := m.g.NodeType()
	return ok && t == nt
}

// describe names a request in explanations: a slot by what one slot holds
// ("slot{cpu:1000m,gpu:2}"), so a shortfall says what could not be found.
func (q *req) describe() string {
	if !q.slot || len(q.with) == 0 {
		return q.name
	}
	if q.desc != "" {
		return q.desc
	}
	var b strings.Builder
	b.WriteString("slot{")
	for i, w := range q.with {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d%s", w.name, w.count.Min, w.unit)
	}
	b.WriteByte('}')
	q.desc = b.String()
	return q.desc
}
