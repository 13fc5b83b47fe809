package k8sadapter

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// RequiresKey is the annotation listing extra node requirements.
const RequiresKey = "fluence.flux-framework.org/requires"

// requirement is one clause of the requires annotation.
type requirement struct {
	key, op, value string
	version        []int64 // parsed value for ordering operators
}

func (r requirement) String() string { return r.key + r.op + r.value }

// operators, two-character ones first so ">=" is not read as ">".
var operators = []string{">=", "<=", "!=", ">", "<", "="}

// parseRequires parses "key=value, key>=1.20, ..." into clauses. Clauses
// are separated by commas; surrounding spaces are ignored; an empty clause
// is an error.
func parseRequires(s string) ([]requirement, error) {
	var out []requirement
	for _, clause := range strings.Split(s, ",") {
		clause = strings.TrimSpace(clause)
		r, err := parseRequirement(clause)
		if err != nil {
			return nil, fmt.Errorf("clause %q: %v", clause, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func parseRequirement(c string) (requirement, error) {
	if c == "" {
		return requirement{}, fmt.Errorf("empty requirement")
	}
	i := strings.IndexAny(c, "!<>=")
	if i < 0 {
		return requirement{}, fmt.Errorf("no operator (use key=value, key!=value, key>=v, key<=v, key>v or key<v)")
	}
	r := requirement{key: strings.TrimSpace(c[:i])}
	for _, op := range operators {
		if strings.HasPrefix(c[i:], op) {
			r.op = op
			break
		}
	}
	if r.op == "" {
		return requirement{}, fmt.Errorf("unknown operator at %q", c[i:])
	}
	r.value = strings.TrimSpace(c[i+len(r.op):])
	if r.key == "" {
		return requirement{}, fmt.Errorf("missing label key")
	}
	if errs := validation.IsQualifiedName(r.key); len(errs) > 0 {
		return requirement{}, fmt.Errorf("invalid label key %q: %s", r.key, strings.Join(errs, "; "))
	}
	switch r.op {
	case "=", "!=":
		if errs := validation.IsValidLabelValue(r.value); len(errs) > 0 {
			return requirement{}, fmt.Errorf("invalid label value %q: %s", r.value, strings.Join(errs, "; "))
		}
	default:
		v, ok := parseVersion(r.value)
		if !ok {
			return requirement{}, fmt.Errorf("%q is not a version (numbers separated by dots, like 1.20)", r.value)
		}
		r.version = v
	}
	return r, nil
}

// match reports whether a node's labels satisfy the requirement. key=value
// needs the label with that value; key!=value matches nodes without the
// label too (like a Kubernetes "!=" selector). The ordering operators need
// the label and a version value (an optional leading "v" is allowed).
func (r requirement) match(labels map[string]string) bool {
	v, ok := labels[r.key]
	switch r.op {
	case "=":
		return ok && v == r.value
	case "!=":
		return !ok || v != r.value
	}
	if !ok {
		return false
	}
	have, ok := parseVersion(strings.TrimPrefix(v, "v"))
	if !ok {
		return false
	}
	c := compareVersions(have, r.version)
	switch r.op {
	case ">=":
		return c >= 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	default: // "<"
		return c < 0
	}
}

// parseVersion reads dot-separated non-negative integers ("1", "1.20.3").
func parseVersion(s string) ([]int64, bool) {
	if s == "" {
		return nil, false
	}
	parts := strings.Split(s, ".")
	out := make([]int64, len(parts))
	for i, p := range parts {
		if p == "" || strings.TrimLeft(p, "0123456789") != "" {
			return nil, false
		}
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, false
		}
		out[i] = n
	}
	return out, true
}

// compareVersions compares numerically component by component; missing
// components count as 0, so 1.20 equals 1.20.0.
func compareVersions(a, b []int64) int {
	for i := range max(len(a), len(b)) {
		var x, y int64
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}
