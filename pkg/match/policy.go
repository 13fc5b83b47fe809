package match

import (
	"fmt"
	"slices"
	"strings"
)

// order is how a vertex's children are visited; it is the whole of a
// policy's preference, since selection stops at the first sufficient set.
type order uint8

const (
	ascending  order = iota // lowest uniq_id first
	descending              // highest uniq_id first
	// untouchedFirst visits children no job touches first, then the rest,
	// each group by descending uniq_id: Fluxion's `first` spreads jobs over
	// untouched subtrees the same way.
	untouchedFirst
	// perfClass visits children by ascending perf_class property (default
	// 9999) then uniq_id, packing jobs into homogeneous performance classes.
	perfClass
)

// Policy is a named match policy.
type Policy struct {
	Name string
	// Order of children at every vertex.
	order order
	// NodeExclusive allocates every selected node whole (the *x policies).
	NodeExclusive bool
	// Locality chooses units of a multi-unit request from the longest runs
	// of consecutive ids first.
	Locality bool
}

var policies = map[string]Policy{
	"first":      {Name: "first", order: untouchedFirst},
	"firstnodex": {Name: "firstnodex", order: untouchedFirst, NodeExclusive: true},
	"low":        {Name: "low", order: ascending},
	"high":       {Name: "high", order: descending},
	"lonode":     {Name: "lonode", order: ascending},
	"hinode":     {Name: "hinode", order: descending},
	"lonodex":    {Name: "lonodex", order: ascending, NodeExclusive: true},
	"hinodex":    {Name: "hinodex", order: descending, NodeExclusive: true},
	"locality":   {Name: "locality", order: ascending, Locality: true},
	"variation":  {Name: "variation", order: perfClass},
}

// PolicyNames lists the known policies in sorted order.
func PolicyNames() []string {
	names := make([]string, 0, len(policies))
	for n := range policies {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LookupPolicy returns the policy with a name, or an error listing the known
// ones.
func LookupPolicy(name string) (Policy, error) {
	if name == "" {
		name = "first"
	}
	p, ok := policies[name]
	if !ok {
		return Policy{}, fmt.Errorf("match: unknown policy %q (known: %s)", name, strings.Join(PolicyNames(), ", "))
	}
	return p, nil
}
