package jobspec

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// Constraint operators (RFC 31).
const (
	OpProperties = "properties"
	OpHostlist   = "hostlist"
	OpRanks      = "ranks"
	OpAnd        = "and"
	OpOr         = "or"
	OpNot        = "not"
)

// Constraint is an RFC 31 constraint tree, evaluated per node-like vertex.
//
// Op "" is the empty constraint {} and matches everything. Values holds the
// strings of properties, hostlist and ranks as written; Args holds the
// operands of and, or and not.
//
// Treat a Constraint as immutable once built: Parse, the constructors
// (Properties, Hosts, Ranks, And, Or, Not) and Validate compile hostlists
// and idsets into private fields so that Match is cheap. A Constraint built
// as a struct literal and never validated still matches correctly, only more
// slowly (it compiles on every call).
type Constraint struct {
	Op     string
	Values []string
	Args   []*Constraint

	compiled bool
	hosts    *Hostlist // union of the hostlist values
	ranks    *IDSet    // union of the ranks values
}

const propertyForbidden = "!&'\"^`|()"

// Match evaluates the constraint for one vertex with the given name, rank
// (-1 when it has none) and properties. A nil constraint matches.
//
// A property string p matches when props has key p, or when p has the form
// k=v and props[k] == v; "^p" matches when p does not. properties matches
// when every listed property does (so an empty list matches). hostlist and
// ranks match when the name or rank is in any listed set (an empty list
// matches nothing). and matches when all arguments do, or when it has none;
// or matches when any argument does, or when it has none (RFC 31 defines
// {"or": []} as matching everything, although Fluxion's code returns false
// there). not matches when its arguments do not all match: RFC 31 gives not
// a single argument; with several, it negates their conjunction, which is
// what both Fluxion and flux-core do, and {"not": []} matches nothing, as
// RFC 31 requires.
func (c *Constraint) Match(name string, rank int64, props map[string]string) bool {
	if c == nil {
		return true
	}
	switch c.Op {
	case "":
		return true
	case OpProperties:
		for _, v := range c.Values {
			if !matchProperty(v, props) {
				return false
			}
		}
		return true
	case OpHostlist:
		return c.hostlist().Contains(name)
	case OpRanks:
		return rank >= 0 && c.idset().Contains(rank)
	case OpAnd:
		return matchAll(c.Args, name, rank, props)
	case OpOr:
		if len(c.Args) == 0 {
			return true
		}
		for _, a := range c.Args {
			if a.Match(name, rank, props) {
				return true
			}
		}
		return false
	case OpNot:
		return !matchAll(c.Args, name, rank, props)
	}
	return false
}

func matchAll(args []*Constraint, name string, rank int64, props map[string]string) bool {
	for _, a := range args {
		if !a.Match(name, rank, props) {
			return false
		}
	}
	return true
}

func matchProperty(p string, props map[string]string) bool {
	neg := strings.HasPrefix(p, "^")
	if neg {
		p = p[1:]
	}
	_, found := props[p]
	if !found {
		if k, v, ok := strings.Cut(p, "="); ok {
			pv, has := props[k]
			found = has && pv == v
		}
	}
	return found != neg
}

func (c *Constraint) hostlist() *Hostlist {
	if c.compiled {
		return c.hosts
	}
	hl, _ := compileHosts(c.Values)
	return hl
}

func (c *Constraint) idset() *IDSet {
	if c.compiled {
		return c.ranks
	}
	s, _ := compileRanks(c.Values)
	return s
}

// compileHosts merges several hostlists into one; the error carries the
// index of the bad value.
func compileHosts(values []string) (*Hostlist, error) {
	all := &Hostlist{}
	for i, v := range values {
		hl, err := CompileHostlist(v)
		if err != nil {
			return nil, indexedErr{i, err}
		}
		all.exprs = append(all.exprs, hl.exprs...)
	}
	return all, nil
}

func compileRanks(values []string) (*IDSet, error) {
	all := &IDSet{}
	for i, v := range values {
		s, err := ParseIDSet(v)
		if err != nil {
			return nil, indexedErr{i, err}
		}
		all.Add(s)
	}
	return all, nil
}

type indexedErr struct {
	i   int
	err error
}

func (e indexedErr) Error() string { return e.err.Error() }

// check validates the tree (operators, property syntax, hostlists, idsets,
// depth) and compiles what has not been compiled yet. p is the path of c.
func (c *Constraint) check(p *path, depth int) error {
	if c == nil {
		return errorf(p, "must not be null")
	}
	if depth > maxDepth {
		return errorf(p, fmt.Sprintf("nested more than %d levels deep", maxDepth))
	}
	vp := p.k(c.Op)
	switch c.Op {
	case "":
		if len(c.Values) > 0 || len(c.Args) > 0 {
			return errorf(p, "the empty constraint has no values or arguments")
		}
	case OpProperties, OpHostlist, OpRanks:
		if len(c.Args) > 0 {
			return errorf(vp, "takes strings, not constraints")
		}
	case OpAnd, OpOr, OpNot:
		if len(c.Values) > 0 {
			return errorf(vp, "takes constraints, not strings")
		}
		for i, a := range c.Args {
			if err := a.check(vp.i(i), depth+1); err != nil {
				return err
			}
		}
	default:
		return errorf(vp, "unknown constraint operator (known: properties, hostlist, ranks, and, or, not)")
	}
	switch c.Op {
	case OpProperties:
		for i, v := range c.Values {
			if err := checkProperty(v); err != nil {
				return errorf(vp.i(i), err.Error())
			}
		}
	case OpHostlist:
		hl, err := compileHosts(c.Values)
		if err != nil {
			ie := err.(indexedErr)
			return errorf(vp.i(ie.i), ie.Error())
		}
		if !c.compiled {
			c.hosts = hl
		}
	case OpRanks:
		s, err := compileRanks(c.Values)
		if err != nil {
			ie := err.(indexedErr)
			return errorf(vp.i(ie.i), ie.Error())
		}
		if !c.compiled {
			c.ranks = s
		}
	}
	// Write only when needed: a parsed constraint is already compiled, and
	// re-validating it (Encode does) must not race with concurrent Match.
	if !c.compiled {
		c.compiled = true
	}
	return nil
}

// checkProperty applies the property name rules shared by Fluxion and
// flux-core: no characters that the RFC 35 query syntax uses as operators,
// no whitespace, and "^" only as the leading negation.
func checkProperty(v string) error {
	name := strings.TrimPrefix(v, "^")
	if name == "" {
		return fmt.Errorf("empty property name")
	}
	if i := strings.IndexAny(name, propertyForbidden); i >= 0 {
		return fmt.Errorf("property %q contains the invalid character %q", clip(v), name[i])
	}
	if i := strings.IndexFunc(name, unicode.IsSpace); i >= 0 {
		return fmt.Errorf("property %q contains whitespace", clip(v))
	}
	return nil
}

// parseConstraint reads an RFC 31 object from the generic tree. It checks
// shape (one operator, a list of operands of the right kind) and leaves
// value rules to check.
func parseConstraint(p *path, v any, depth int) (*Constraint, error) {
	if depth > maxDepth {
		return nil, errorf(p, fmt.Sprintf("nested more than %d levels deep", maxDepth))
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errorf(p, "a constraint must be a mapping {operator: [values]}, got "+typeName(v))
	}
	if len(m) == 0 {
		return &Constraint{}, nil
	}
	if len(m) > 1 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		// Fluxion rejects this; flux-core reads it as "and". Rejecting keeps
		// one meaning per document.
		return nil, errorf(p, fmt.Sprintf("a constraint must have exactly one operator, got %d (%s); combine them with \"and\"", len(m), strings.Join(keys, ", ")))
	}
	var op string
	var arg any
	for k, x := range m {
		op, arg = k, x
	}
	vp := p.k(op)
	switch op {
	case OpProperties, OpHostlist, OpRanks, OpAnd, OpOr, OpNot:
	default:
		return nil, errorf(vp, "unknown constraint operator (known: properties, hostlist, ranks, and, or, not)")
	}
	list, ok := arg.([]any)
	if !ok {
		return nil, errorf(vp, "must be a list, got "+typeName(arg))
	}
	c := &Constraint{Op: op}
	for i, item := range list {
		switch op {
		case OpAnd, OpOr, OpNot:
			a, err := parseConstraint(vp.i(i), item, depth+1)
			if err != nil {
				return nil, err
			}
			c.Args = append(c.Args, a)
		default:
			s, ok := item.(string)
			if !ok {
				return nil, errorf(vp.i(i), "must be a string, got "+describe(item))
			}
			c.Values = append(c.Values, s)
		}
	}
	return c, nil
}

// ParseConstraint reads an RFC 31 constraint from a decoded JSON or YAML
// value (map[string]any, as encoding/json produces) and validates it. Other
// packages use it for constraints that do not come inside a jobspec, such as
// a queue's own constraints.
func ParseConstraint(v any) (*Constraint, error) {
	c, err := parseConstraint(root, normalizeValue(v), 0)
	if err != nil {
		return nil, err
	}
	if err := c.check(root, 0); err != nil {
		return nil, err
	}
	return c, nil
}

// ParseConstraintJSON reads an RFC 31 constraint from JSON or YAML text.
func ParseConstraintJSON(data []byte) (*Constraint, error) {
	v, err := decodeDocument(data)
	if err != nil {
		return nil, err
	}
	return ParseConstraint(v)
}

// Map returns the RFC 31 object for c, in the generic form Parse produces.
func (c *Constraint) Map() map[string]any {
	if c == nil || c.Op == "" {
		return map[string]any{}
	}
	list := []any{}
	for _, v := range c.Values {
		list = append(list, v)
	}
	for _, a := range c.Args {
		list = append(list, a.Map())
	}
	return map[string]any{c.Op: list}
}

// String renders c as compact JSON.
func (c *Constraint) String() string {
	b, err := marshalCanonical(c.Map())
	if err != nil {
		return fmt.Sprintf("<invalid constraint: %v>", err)
	}
	return string(b)
}

// Equal reports whether two constraints are the same tree (ignoring
// compiled state). go-cmp uses it, so tests can compare Jobspecs directly.
func (c *Constraint) Equal(o *Constraint) bool {
	if c == nil || o == nil {
		return c == o
	}
	if c.Op != o.Op || len(c.Values) != len(o.Values) || len(c.Args) != len(o.Args) {
		return false
	}
	for i := range c.Values {
		if c.Values[i] != o.Values[i] {
			return false
		}
	}
	for i := range c.Args {
		if !c.Args[i].Equal(o.Args[i]) {
			return false
		}
	}
	return true
}
