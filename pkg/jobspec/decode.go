package jobspec

import (
	"bytes"
	"fmt"
	"math"
	"unicode/utf8"
)

// decodeDocument turns YAML or JSON bytes into a generic value tree made of
// map[string]any, []any, string, int64, float64, bool and nil. Both syntaxes
// end in the same tree, so every later rule is written once.
//
// The tree is also what Jobspec.Attributes holds, which is why it is
// restricted to values JSON can represent: NaN, infinities and invalid UTF-8
// are rejected here, so anything that parses can be encoded again.
func decodeDocument(data []byte) (any, error) {
	if len(data) > MaxInputSize {
		return nil, &Error{Msg: fmt.Sprintf("input is %d bytes, more than the limit of %d", len(data), MaxInputSize)}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 byte order mark
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, &Error{Msg: "empty document"}
	}
	if trimmed[0] == '{' {
		return decodeJSON(data)
	}
	return decodeYAML(data)
}

// budget counts values produced while decoding, to stop alias expansion and
// pathological nesting early.
type budget struct{ nodes int }

func (b *budget) take(p *path, depth int) error {
	b.nodes++
	if b.nodes > maxNodes {
		return errorf(p, fmt.Sprintf("document has more than %d values (after expanding aliases)", maxNodes))
	}
	if depth > maxDepth {
		return errorf(p, fmt.Sprintf("nested more than %d levels deep", maxDepth))
	}
	return nil
}

func checkString(p *path, s string) error {
	if !utf8.ValidString(s) {
		return errorf(p, "string is not valid UTF-8")
	}
	return nil
}

func checkFloat(p *path, f float64) (any, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, errorf(p, "must be a finite number")
	}
	return f, nil
}

// typeName names the kind of a decoded value for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case int64, int:
		return "an integer"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}
