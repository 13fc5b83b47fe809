package jobspec

import (
	"fmt"
	"math"
	"strconv"
)

// Count is the count of a resource vertex: a fixed integer N (Min = Max = N,
// Operator '+', Operand 1) or a range.
//
// A fixed count means "match a vertex with at least N, allocate exactly N".
// A range means "at least Min, and as many as are available up to Max, on
// the lattice Min, next(Min), next(next(Min)), ..." where next is x+Operand,
// x*Operand or x^Operand for the operators '+', '*' and '^'.
type Count struct {
	Min, Max int64 // Max == Unbounded when the range has no max
	Operator byte  // '+', '*' or '^'
	Operand  int64
}

// Fixed returns the count "exactly n".
func Fixed(n int64) Count { return Count{Min: n, Max: n, Operator: '+', Operand: 1} }

// IsFixed reports whether c is a plain integer count. A range whose min and
// max coincide with the default operator is the same request, so it counts
// as fixed too (and is written back as an integer).
func (c Count) IsFixed() bool { return c.Min == c.Max && c.Operator == '+' && c.Operand == 1 }

// Lattice returns the largest valid count <= n for this range, capped at
// Max; 0 if n < Min (the request cannot be met). This is Fluxion's
// calc_count rule for choosing how many to allocate out of n available.
func (c Count) Lattice(n int64) int64 {
	if n < c.Min || c.Min < 1 {
		return 0
	}
	m := n
	if c.Max < m {
		m = c.Max
	}
	if m < c.Min {
		return 0
	}
	switch c.Operator {
	case '*':
		if c.Operand < 2 {
			return c.Min
		}
		v := c.Min
		for v <= m/c.Operand { // v*Operand <= m without overflow
			v *= c.Operand
		}
		return v
	case '^':
		if c.Operand < 2 || c.Min < 2 {
			return c.Min
		}
		v := c.Min
		for {
			next, ok := powLE(v, c.Operand, m)
			if !ok {
				return v
			}
			v = next
		}
	default: // '+'
		step := c.Operand
		if step < 1 {
			step = 1
		}
		return c.Min + (m-c.Min)/step*step
	}
}

// powLE returns base^exp and true when it is <= limit, or false otherwise
// (including on overflow). base >= 2, exp >= 2.
func powLE(base, exp, limit int64) (int64, bool) {
	r := int64(1)
	for i := int64(0); i < exp; i++ {
		if r > limit/base {
			return 0, false
		}
		r *= base
	}
	return r, true
}

// String renders the count compactly: "4", "2+", "2-8:+2", "2-64:*2".
func (c Count) String() string {
	if c.IsFixed() {
		return strconv.FormatInt(c.Min, 10)
	}
	s := strconv.FormatInt(c.Min, 10)
	if c.Max == Unbounded {
		s += "+"
	} else {
		s += "-" + strconv.FormatInt(c.Max, 10)
	}
	if c.Operator != '+' || c.Operand != 1 {
		s += ":" + string(rune(c.Operator)) + strconv.FormatInt(c.Operand, 10)
	}
	return s
}

// validate checks the count rules of RFC 14. Errors on a fixed count name
// the count itself; errors on a range name the offending key of the range.
func (c Count) validate(p *path) error {
	if c.IsFixed() {
		if c.Min < 1 {
			return errorf(p, fmt.Sprintf("must be at least 1, got %d", c.Min))
		}
		return nil
	}
	if c.Min < 1 {
		return errorf(p.k("min"), fmt.Sprintf("must be at least 1, got %d", c.Min))
	}
	if c.Max < c.Min {
		return errorf(p.k("max"), fmt.Sprintf("must be at least min (%d), got %d", c.Min, c.Max))
	}
	switch c.Operator {
	case '+':
		if c.Operand < 1 {
			return errorf(p.k("operand"), fmt.Sprintf(`must be at least 1 for operator "+", got %d`, c.Operand))
		}
	case '*', '^':
		if c.Operand < 2 {
			return errorf(p.k("operand"), fmt.Sprintf("must be at least 2 for operator %q, got %d", string(rune(c.Operator)), c.Operand))
		}
		if c.Operator == '^' && c.Min < 2 {
			// 1^k is 1: the lattice would never grow.
			return errorf(p.k("min"), fmt.Sprintf(`must be at least 2 for operator "^", got %d`, c.Min))
		}
	default:
		return errorf(p.k("operator"), `must be "+", "*" or "^"`)
	}
	return nil
}

// parseCount reads a count: a positive integer or a range mapping. Value
// checks are left to validate so code-built counts get the same messages.
func parseCount(p *path, v any, version int) (Count, error) {
	switch x := v.(type) {
	case int64, float64:
		n, err := asInt(p, x)
		if err != nil {
			return Count{}, err
		}
		return Fixed(n), nil
	case map[string]any:
		if version == Version1 {
			return Count{}, errorf(p, "version 1 requires a fixed integer count, not a range")
		}
		return parseRange(p, x)
	case string:
		// RFC 14 also allows an idset string here; Fluxion does not parse it,
		// and neither do we.
		return Count{}, errorf(p, fmt.Sprintf("must be an integer or a range mapping {min, max, operator, operand}, got a string %q (idset counts are not supported)", clip(x)))
	}
	return Count{}, errorf(p, "must be an integer or a range mapping {min, max, operator, operand}, got "+typeName(v))
}

func parseRange(p *path, m map[string]any) (Count, error) {
	if err := checkKeys(p, m, "min", "max", "operator", "operand"); err != nil {
		return Count{}, err
	}
	c := Count{Max: Unbounded, Operator: '+', Operand: 1}
	mv, ok := m["min"]
	if !ok {
		return Count{}, errorf(p.k("min"), "is required in a range")
	}
	var err error
	if c.Min, err = asInt(p.k("min"), mv); err != nil {
		return Count{}, err
	}
	if v, ok := m["max"]; ok {
		if c.Max, err = asInt(p.k("max"), v); err != nil {
			return Count{}, err
		}
	}
	if v, ok := m["operator"]; ok {
		s, isStr := v.(string)
		if !isStr || len(s) != 1 || (s[0] != '+' && s[0] != '*' && s[0] != '^') {
			return Count{}, errorf(p.k("operator"), fmt.Sprintf(`must be "+", "*" or "^", got %s`, describe(v)))
		}
		c.Operator = s[0]
		if c.Operator != '+' {
			c.Operand = 0 // no default for '*' and '^': the operand must be given
		}
	}
	if v, ok := m["operand"]; ok {
		if c.Operand, err = asInt(p.k("operand"), v); err != nil {
			return Count{}, err
		}
	} else if c.Operator != '+' {
		return Count{}, errorf(p.k("operand"), fmt.Sprintf("is required for operator %q", string(rune(c.Operator))))
	}
	return c, nil
}

// asInt accepts an integer, or a float with an integral value (YAML and JSON
// writers sometimes emit 2.0 for 2).
func asInt(p *path, v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case float64:
		if x != math.Trunc(x) {
			return 0, errorf(p, fmt.Sprintf("must be an integer, got %v", x))
		}
		if x < -(1<<63) || x >= 1<<63 {
			return 0, errorf(p, fmt.Sprintf("integer %v is out of range", x))
		}
		return int64(x), nil
	}
	return 0, errorf(p, "must be an integer, got "+describe(v))
}
