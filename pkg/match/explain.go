package match

import (
	"fmt"
	"strings"
)

// Explain records why a selection failed: what fell short and which nodes
// were cut off on the way, in the spirit of Nomad's allocation metrics.
type Explain struct {
	// Visited counts vertices the selection tested.
	Visited int64
	// Node vertices cut off, by reason.
	NodesDown        int64
	NodesConstrained int64
	NodesBusy        int64
	// SlotsConstrained counts places a slot was not packed because its
	// requires refused the node.
	SlotsConstrained int64
	// VerticesRefused counts vertices of a requested type (devices) that
	// no request still short of them admitted by its requires.
	VerticesRefused int64
	// Short lists the top-level requests whose count was not met.
	Short []Shortfall
	// Missing names requested types the graph does not have at all.
	Missing []string
	// Empty: the selection was judged on the empty, all-up graph
	// (satisfiability), so a node cut off is too small, not busy.
	Empty bool
	// Totals lists resource types the request needs more of than the
	// whole graph (or, for Busy, its free part at the time) holds.
	Totals []Shortfall
}

// Shortfall is a count that was not met.
type Shortfall struct {
	Type  string
	Need  int64
	Found int64
	// Unit is the pool unit of Type, if it has one (MiB, m for
	// millicores), so "cpu: needs 4000m" is not read as 4000 CPUs.
	Unit string
}

func (e *Explain) reset() { *e = Explain{} }

func (e *Explain) clone() *Explain {
	c := *e
	c.Short = append([]Shortfall(nil), e.Short...)
	c.Missing = append([]string(nil), e.Missing...)
	c.Totals = append([]Shortfall(nil), e.Totals...)
	return &c
}

// String renders the explanation as one line, most specific cause first.
func (e *Explain) String() string {
	var parts []string
	for _, m := range e.Missing {
		parts = append(parts, fmt.Sprintf("the graph has no %s", m))
	}
	for _, t := range e.Totals {
		parts = append(parts, fmt.Sprintf("%s: needs %d%s in total, %d%s available", t.Type, t.Need, t.Unit, t.Found, t.Unit))
	}
	for _, s := range e.Short {
		parts = append(parts, fmt.Sprintf("%s: needs %d, found %d", s.Type, s.Need, s.Found))
	}
	var nodes []string
	if e.NodesDown > 0 {
		nodes = append(nodes, fmt.Sprintf("%d down", e.NodesDown))
	}
	if e.NodesConstrained > 0 {
		nodes = append(nodes, fmt.Sprintf("%d excluded by constraints", e.NodesConstrained))
	}
	if e.NodesBusy > 0 {
		word := "busy"
		if e.Empty {
			word = "too small"
		}
		nodes = append(nodes, fmt.Sprintf("%d %s", e.NodesBusy, word))
	}
	if e.SlotsConstrained > 0 {
		nodes = append(nodes, fmt.Sprintf("%d refused a slot by its requires", e.SlotsConstrained))
	}
	if len(nodes) > 0 {
		parts = append(parts, "nodes: "+strings.Join(nodes, ", "))
	}
	if e.VerticesRefused > 0 {
		parts = append(parts, fmt.Sprintf("%d vertices refused by a request's requires", e.VerticesRefused))
	}
	if len(parts) == 0 {
		return "no matching resources"
	}
	return strings.Join(parts, "; ")
}
