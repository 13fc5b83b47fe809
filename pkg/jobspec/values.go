package jobspec

import (
	"fmt"
	"sort"
	"strings"
)

// Helpers for reading the generic tree (map[string]any, []any, string,
// int64, float64, bool, nil) with path-named errors.

// checkKeys reports the first key of m (in sorted order, so the error is
// deterministic) that is not in allowed.
func checkKeys(p *path, m map[string]any, allowed ...string) error {
	var unknown []string
	for k := range m {
		found := false
		for _, a := range allowed {
			if k == a {
				found = true
				break
			}
		}
		if !found {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return errorf(p.k(unknown[0]), "unknown key (allowed: "+strings.Join(allowed, ", ")+")")
}

func requiredString(p *path, m map[string]any, key string) (string, error) {
	x, ok := m[key]
	if !ok {
		return "", errorf(p.k(key), "is required")
	}
	s, ok := x.(string)
	if !ok {
		return "", errorf(p.k(key), "must be a string, got "+describe(x))
	}
	return s, nil
}

func optionalString(p *path, m map[string]any, key string) (string, error) {
	x, ok := m[key]
	if !ok {
		return "", nil
	}
	s, ok := x.(string)
	if !ok {
		return "", errorf(p.k(key), "must be a string, got "+describe(x))
	}
	return s, nil
}

// describe names a value's type and, for scalars, the value itself.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("a string %q", clip(x))
	case bool, int64, int, float64:
		return fmt.Sprintf("%s %v", typeName(v), x)
	}
	return typeName(v)
}

// clip shortens long user strings in error messages.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// normalizeValue converts values built in Go (as encoding/json or callers
// produce them) into the generic tree the parser uses.
func normalizeValue(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case float32:
		return float64(x)
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeValue(e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeValue(e)
		}
		return out
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, s := range x {
			out[k] = s
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalizeValue(e)
		}
		return out
	}
	return v
}
