package jobspec

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Encode validates js and writes it as canonical JSON: compact, keys sorted,
// fixed counts as integers, ranges as {min, max, operator, operand} (max
// omitted when unbounded), floats always with a fraction or exponent so they
// read back as floats. Parse(Encode(js)) equals js.
//
// Attributes are written as held in js.Attributes, except that Duration and
// Constraint win when they disagree with the map (the struct fields are what
// the scheduler used); a disagreement can only come from code that changed
// one and not the other.
func Encode(js *Jobspec) ([]byte, error) {
	if err := Validate(js); err != nil {
		return nil, err
	}
	return marshalCanonical(toValue(js))
}

// toValue builds the generic tree for js.
func toValue(js *Jobspec) map[string]any {
	tasks := make([]any, 0, len(js.Tasks))
	for i := range js.Tasks {
		tasks = append(tasks, taskValue(&js.Tasks[i]))
	}
	return map[string]any{
		"version":    int64(js.Version),
		"resources":  resourcesValue(js.Resources),
		"tasks":      tasks,
		"attributes": attributesValue(js),
	}
}

func resourcesValue(rs []*Resource) []any {
	out := make([]any, 0, len(rs))
	for _, r := range rs {
		m := map[string]any{"type": r.Type, "count": countValue(r.Count)}
		if r.Unit != "" {
			m["unit"] = r.Unit
		}
		if r.Exclusive != ExclusiveUnset {
			m["exclusive"] = r.Exclusive == ExclusiveTrue
		}
		if len(r.With) > 0 {
			m["with"] = resourcesValue(r.With)
		}
		if r.Label != "" {
			m["label"] = r.Label
		}
		if r.ID != "" {
			m["id"] = r.ID
		}
		if r.Requires != nil {
			m["requires"] = r.Requires.Map()
		}
		out = append(out, m)
	}
	return out
}

func countValue(c Count) any {
	if c.IsFixed() {
		return c.Min
	}
	m := map[string]any{"min": c.Min, "operator": string(rune(c.Operator)), "operand": c.Operand}
	if c.Max != Unbounded {
		m["max"] = c.Max
	}
	return m
}

func taskValue(t *Task) map[string]any {
	cmd := make([]any, len(t.Command))
	for i, s := range t.Command {
		cmd[i] = s
	}
	count := map[string]any{}
	switch {
	case t.Count.PerSlot > 0:
		count["per_slot"] = t.Count.PerSlot
	case t.Count.Total > 0:
		count["total"] = t.Count.Total
	case t.Count.PerResource != nil:
		count["per_resource"] = map[string]any{"type": t.Count.PerResource.Type, "count": t.Count.PerResource.Count}
	}
	m := map[string]any{"command": cmd, "slot": t.Slot, "count": count}
	if t.Distribution != "" {
		m["distribution"] = t.Distribution
	}
	if t.Attributes != nil {
		m["attributes"] = t.Attributes
	}
	return m
}

// attributesValue reconciles js.Attributes with Duration and Constraint.
// Only the maps on the way to the changed keys are copied; the rest is
// shared with js, which is fine because it is only read.
func attributesValue(js *Jobspec) map[string]any {
	attrs := make(map[string]any, len(js.Attributes)+1)
	for k, v := range js.Attributes {
		attrs[k] = v
	}
	orig, hadSys := attrs["system"].(map[string]any)
	sys := make(map[string]any, len(orig)+2)
	for k, v := range orig {
		sys[k] = v
	}
	sp := root.k("attributes").k("system")
	if raw, ok := sys["duration"]; ok {
		if d, err := parseDuration(sp.k("duration"), raw); err != nil || d != js.Duration {
			sys["duration"] = js.Duration
		}
	} else if js.Duration != 0 || js.Version == Version1 {
		sys["duration"] = js.Duration
	}
	if js.Constraint == nil {
		delete(sys, "constraints")
	} else if raw, ok := sys["constraints"]; !ok {
		sys["constraints"] = js.Constraint.Map()
	} else if c, err := parseConstraint(sp.k("constraints"), raw, 0); err != nil || !c.Equal(js.Constraint) {
		sys["constraints"] = js.Constraint.Map()
	}
	if hadSys || len(sys) > 0 {
		attrs["system"] = sys
	}
	return attrs
}

// marshalCanonical writes the generic tree as compact JSON with sorted keys.
// It is ours rather than encoding/json's so that float64 2.0 is written as
// "2.0" (encoding/json writes "2", which would read back as an integer).
func marshalCanonical(v any) ([]byte, error) {
	var b strings.Builder
	if err := writeValue(&b, v, 0); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

func writeValue(b *strings.Builder, v any, depth int) error {
	if depth > maxDepth+8 {
		return fmt.Errorf("jobspec: value nested too deeply to encode")
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case int:
		b.WriteString(strconv.Itoa(x))
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if strings.ContainsAny(s, "NI") {
			return fmt.Errorf("jobspec: cannot encode the number %v", x)
		}
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		b.WriteString(s)
	case string:
		writeString(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeValue(b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			if err := writeValue(b, x[k], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("jobspec: cannot encode a value of type %T", v)
	}
	return nil
}

// writeString writes a JSON string. Input is valid UTF-8 (the decoders and
// Validate make sure), so only quotes, backslashes and control characters
// need escaping.
func writeString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			b.WriteByte(c)
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b.WriteString(`\ufffd`)
			} else {
				b.WriteString(s[i : i+size])
			}
			i += size
			continue
		}
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		}
		i++
	}
	b.WriteByte('"')
}
