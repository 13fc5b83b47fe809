package jobspec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// decodeYAML parses one YAML document into the generic tree. It works on
// yaml.Node rather than decoding into map[string]any because the node API
// lets us reject duplicate keys (which plain decoding into a map does not
// report for all forms), keep scalars typed by their resolved tag, expand
// aliases under our own budget, and name the path of every error.
func decodeYAML(data []byte) (v any, err error) {
	// The YAML library is not ours; a panic inside it on hostile input must
	// not take the caller down, so it becomes an ordinary error.
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, &Error{Msg: fmt.Sprintf("invalid YAML: parser failure: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{Msg: "empty document"}
		}
		return nil, &Error{Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, &Error{Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
		}
		return nil, &Error{Msg: fmt.Sprintf("invalid YAML: more than one document (the second starts at line %d)", extra.Line)}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &Error{Msg: "empty document"}
	}
	// Measure the expanded size first, remembering each node's size, so an
	// alias "bomb" is refused after work proportional to the text, not to
	// its expansion.
	sizes := map[*yaml.Node]int{}
	if expandedSize(doc.Content[0], sizes, map[*yaml.Node]bool{}, 0) > maxNodes {
		return nil, &Error{Msg: fmt.Sprintf("document has more than %d values after expanding aliases", maxNodes)}
	}
	yd := &yamlDecoder{active: map[*yaml.Node]bool{}}
	return yd.value(doc.Content[0], root, 0)
}

// expandedSize counts the values n stands for once aliases are expanded,
// saturating just above maxNodes. Cycles and excessive depth are left for
// the decoder to report with a path; here they count as small.
func expandedSize(n *yaml.Node, sizes map[*yaml.Node]int, active map[*yaml.Node]bool, depth int) int {
	if s, ok := sizes[n]; ok {
		return s
	}
	if active[n] || depth > maxDepth+2 {
		return 1
	}
	active[n] = true
	size := 1
	if n.Kind == yaml.AliasNode {
		if n.Alias != nil {
			size += expandedSize(n.Alias, sizes, active, depth+1)
		}
	} else {
		for _, c := range n.Content {
			size += expandedSize(c, sizes, active, depth+1)
			if size > maxNodes {
				size = maxNodes + 1
				break
			}
		}
	}
	delete(active, n)
	sizes[n] = size
	return size
}

type yamlDecoder struct {
	b budget
	// active holds the alias targets being expanded right now; meeting one
	// again means the alias refers to an ancestor of itself (a cycle).
	active map[*yaml.Node]bool
}

func (yd *yamlDecoder) value(n *yaml.Node, p *path, depth int) (any, error) {
	if err := yd.b.take(p, depth); err != nil {
		return nil, err
	}
	switch n.Kind {
	case yaml.AliasNode:
		target := n.Alias
		if target == nil {
			return nil, errorf(p, fmt.Sprintf("line %d: unknown alias %q", n.Line, n.Value))
		}
		if yd.active[target] {
			return nil, errorf(p, fmt.Sprintf("line %d: alias %q refers to a value containing itself", n.Line, n.Value))
		}
		yd.active[target] = true
		v, err := yd.value(target, p, depth+1)
		delete(yd.active, target)
		return v, err
	case yaml.ScalarNode:
		return yamlScalar(n, p)
	case yaml.SequenceNode:
		list := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			v, err := yd.value(c, p.i(i), depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		return list, nil
	case yaml.MappingNode:
		return yd.mapping(n, p, depth)
	}
	return nil, errorf(p, fmt.Sprintf("line %d: unsupported YAML node", n.Line))
}

// mapping converts a mapping node. Explicit keys must be unique; keys brought
// in by a merge key ("<<: *anchor") never override explicit ones, and among
// several merged mappings the first wins, as the YAML merge spec says.
func (yd *yamlDecoder) mapping(n *yaml.Node, p *path, depth int) (any, error) {
	if len(n.Content)%2 != 0 {
		return nil, errorf(p, fmt.Sprintf("line %d: malformed mapping", n.Line))
	}
	m := make(map[string]any, len(n.Content)/2)
	firstLine := make(map[string]int, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if isMergeKey(kn) {
			merges = append(merges, vn)
			continue
		}
		key, err := yamlKey(kn, p)
		if err != nil {
			return nil, err
		}
		kp := p.k(key)
		if line, dup := firstLine[key]; dup {
			return nil, errorf(kp, fmt.Sprintf("duplicate key (line %d; first at line %d)", kn.Line, line))
		}
		firstLine[key] = kn.Line
		v, err := yd.value(vn, kp, depth+1)
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
	for _, mn := range merges {
		if err := yd.merge(m, mn, p, depth); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (yd *yamlDecoder) merge(m map[string]any, mn *yaml.Node, p *path, depth int) error {
	var sources []*yaml.Node
	if resolveAlias(mn).Kind == yaml.SequenceNode {
		sources = resolveAlias(mn).Content
	} else {
		sources = []*yaml.Node{mn}
	}
	mp := p.k("<<")
	for _, src := range sources {
		if resolveAlias(src).Kind != yaml.MappingNode {
			return errorf(mp, fmt.Sprintf("line %d: a merge key must refer to a mapping or a list of mappings", src.Line))
		}
		v, err := yd.value(src, mp, depth+1)
		if err != nil {
			return err
		}
		for k, x := range v.(map[string]any) {
			if _, ok := m[k]; !ok {
				m[k] = x
			}
		}
	}
	return nil
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; i < 100 && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

func isMergeKey(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Value == "<<" && n.ShortTag() == "!!merge"
}

// yamlKey returns the text of a scalar key. Non-scalar keys (a YAML feature
// JSON has no equivalent for) are rejected.
func yamlKey(kn *yaml.Node, p *path) (string, error) {
	kn = resolveAlias(kn)
	if kn.Kind != yaml.ScalarNode {
		return "", errorf(p, fmt.Sprintf("line %d: mapping keys must be scalars", kn.Line))
	}
	return kn.Value, checkString(p.k(kn.Value), kn.Value)
}

// yamlScalar converts a scalar by its resolved tag. Integers become int64,
// floats float64; timestamps and unknown tags stay strings because JSON has
// no other way to carry them.
func yamlScalar(n *yaml.Node, p *path) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, errorf(p, fmt.Sprintf("line %d: invalid boolean %q", n.Line, n.Value))
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return i, nil
		}
		var u uint64
		if err := n.Decode(&u); err == nil {
			return checkFloat(p, float64(u))
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil {
			return nil, errorf(p, fmt.Sprintf("line %d: invalid integer %q", n.Line, n.Value))
		}
		return checkFloat(p, f)
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, errorf(p, fmt.Sprintf("line %d: invalid number %q", n.Line, n.Value))
		}
		return checkFloat(p, f)
	}
	return n.Value, checkString(p, n.Value)
}
