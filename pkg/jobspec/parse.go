package jobspec

import (
	"errors"
	"fmt"
	"math"
	"os"
)

// Parse reads a jobspec from YAML or JSON and validates it. Input whose
// first non-space byte is '{' is read as JSON (so JSON mistakes get JSON
// error messages); anything else as YAML. Every error is an *Error naming
// the offending field.
func Parse(data []byte) (*Jobspec, error) {
	v, err := decodeDocument(data)
	if err != nil {
		return nil, err
	}
	js, err := fromValue(v)
	if err != nil {
		return nil, err
	}
	if err := validate(js); err != nil {
		return nil, err
	}
	return js, nil
}

// ParseFile reads and parses a jobspec file. Errors name the file.
func ParseFile(name string) (*Jobspec, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	js, err := Parse(data)
	if err != nil {
		var je *Error
		if errors.As(err, &je) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return nil, err
	}
	return js, nil
}

var (
	topKeys      = []string{"version", "resources", "tasks", "attributes"}
	resourceKeys = []string{"type", "count", "unit", "exclusive", "with", "label", "id", "requires"}
	taskKeys     = []string{"command", "slot", "count", "distribution", "attributes"}
	attrKeys     = []string{"system", "user"}
)

// fromValue builds a Jobspec from the decoded tree, checking keys and value
// types. Rules about values (ranges, references, shapes) live in validate,
// which also serves jobspecs built in code.
func fromValue(v any) (*Jobspec, error) {
	top, ok := v.(map[string]any)
	if !ok {
		return nil, errorf(root, "the document must be a mapping with keys version, resources, tasks and attributes, got "+typeName(v))
	}
	// The version comes first: it decides which rules apply to the rest.
	vv, ok := top["version"]
	if !ok {
		return nil, errorf(root.k("version"), "is required")
	}
	version, err := asInt(root.k("version"), vv)
	if err != nil {
		return nil, err
	}
	if version != Version1 && version != VersionCanonical {
		return nil, errorf(root.k("version"), fmt.Sprintf("unsupported version %d (supported: 1, 9999)", version))
	}
	if err := checkKeys(root, top, topKeys...); err != nil {
		return nil, err
	}
	for _, k := range topKeys[1:] {
		if _, ok := top[k]; !ok {
			return nil, errorf(root.k(k), "is required")
		}
	}
	js := &Jobspec{Version: int(version)}
	if js.Resources, err = parseResources(root.k("resources"), top["resources"], js.Version, 0); err != nil {
		return nil, err
	}
	if js.Tasks, err = parseTasks(root.k("tasks"), top["tasks"], js.Version); err != nil {
		return nil, err
	}
	if err := parseAttributes(root.k("attributes"), top["attributes"], js); err != nil {
		return nil, err
	}
	return js, nil
}

func parseResources(p *path, v any, version, depth int) ([]*Resource, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, errorf(p, "must be a list of resources, got "+typeName(v))
	}
	if len(list) == 0 {
		return nil, errorf(p, "must list at least one resource")
	}
	if depth > maxDepth {
		return nil, errorf(p, fmt.Sprintf("resources nested more than %d levels deep", maxDepth))
	}
	out := make([]*Resource, 0, len(list))
	for i, item := range list {
		r, err := parseResource(p.i(i), item, version, depth)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func parseResource(p *path, v any, version, depth int) (*Resource, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errorf(p, "a resource must be a mapping, got "+typeName(v))
	}
	if err := checkKeys(p, m, resourceKeys...); err != nil {
		return nil, err
	}
	r := &Resource{}
	var err error
	if r.Type, err = requiredString(p, m, "type"); err != nil {
		return nil, err
	}
	cv, ok := m["count"]
	if !ok {
		return nil, errorf(p.k("count"), "is required")
	}
	if r.Count, err = parseCount(p.k("count"), cv, version); err != nil {
		return nil, err
	}
	if r.Unit, err = optionalString(p, m, "unit"); err != nil {
		return nil, err
	}
	if x, ok := m["exclusive"]; ok {
		b, isBool := x.(bool)
		if !isBool {
			return nil, errorf(p.k("exclusive"), "must be true or false, got "+describe(x))
		}
		r.Exclusive = ExclusiveFalse
		if b {
			r.Exclusive = ExclusiveTrue
		}
	}
	if x, ok := m["with"]; ok {
		if r.With, err = parseResources(p.k("with"), x, version, depth+1); err != nil {
			return nil, err
		}
	}
	if r.Label, err = optionalString(p, m, "label"); err != nil {
		return nil, err
	}
	if r.ID, err = optionalString(p, m, "id"); err != nil {
		return nil, err
	}
	if x, ok := m["requires"]; ok {
		if r.Requires, err = parseConstraint(p.k("requires"), x, 0); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func parseTasks(p *path, v any, version int) ([]Task, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, errorf(p, "must be a list of tasks, got "+typeName(v))
	}
	if len(list) == 0 {
		return nil, errorf(p, "must list at least one task")
	}
	out := make([]Task, 0, len(list))
	for i, item := range list {
		t, err := parseTask(p.i(i), item, version)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func parseTask(p *path, v any, version int) (Task, error) {
	var t Task
	m, ok := v.(map[string]any)
	if !ok {
		return t, errorf(p, "a task must be a mapping, got "+typeName(v))
	}
	if err := checkKeys(p, m, taskKeys...); err != nil {
		return t, err
	}
	cmd, ok := m["command"]
	if !ok {
		return t, errorf(p.k("command"), "is required")
	}
	var err error
	if t.Command, err = parseCommand(p.k("command"), cmd, version); err != nil {
		return t, err
	}
	if t.Slot, err = requiredString(p, m, "slot"); err != nil {
		return t, err
	}
	cv, ok := m["count"]
	if !ok {
		return t, errorf(p.k("count"), "is required")
	}
	if t.Count, err = parseTaskCount(p.k("count"), cv); err != nil {
		return t, err
	}
	if t.Distribution, err = optionalString(p, m, "distribution"); err != nil {
		return t, err
	}
	if x, ok := m["attributes"]; ok && x != nil {
		if t.Attributes, ok = x.(map[string]any); !ok {
			return t, errorf(p.k("attributes"), "must be a mapping, got "+typeName(x))
		}
	}
	return t, nil
}

// parseCommand reads a list of strings. RFC 25's schema also lets version 1
// give the command as one string, which becomes a one-element list.
func parseCommand(p *path, v any, version int) ([]string, error) {
	if s, ok := v.(string); ok && version == Version1 {
		return []string{s}, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, errorf(p, "must be a list of strings, got "+typeName(v))
	}
	out := make([]string, 0, len(list))
	for i, item := range list {
		s, ok := item.(string)
		if !ok {
			return nil, errorf(p.i(i), "must be a string, got "+describe(item))
		}
		out = append(out, s)
	}
	return out, nil
}

func parseTaskCount(p *path, v any) (TaskCount, error) {
	var tc TaskCount
	m, ok := v.(map[string]any)
	if !ok {
		return tc, errorf(p, "must be a mapping with one of per_slot, per_resource or total, got "+typeName(v))
	}
	if err := checkKeys(p, m, "per_slot", "per_resource", "total"); err != nil {
		return tc, err
	}
	if len(m) != 1 {
		return tc, errorf(p, fmt.Sprintf("must have exactly one of per_slot, per_resource or total, got %d", len(m)))
	}
	var err error
	if x, ok := m["per_slot"]; ok {
		if tc.PerSlot, err = asInt(p.k("per_slot"), x); err != nil {
			return tc, err
		}
		if tc.PerSlot < 1 {
			return tc, errorf(p.k("per_slot"), fmt.Sprintf("must be at least 1, got %d", tc.PerSlot))
		}
	}
	if x, ok := m["total"]; ok {
		if tc.Total, err = asInt(p.k("total"), x); err != nil {
			return tc, err
		}
		if tc.Total < 1 {
			return tc, errorf(p.k("total"), fmt.Sprintf("must be at least 1, got %d", tc.Total))
		}
	}
	if x, ok := m["per_resource"]; ok {
		pp := p.k("per_resource")
		pm, ok := x.(map[string]any)
		if !ok {
			return tc, errorf(pp, "must be a mapping {type, count}, got "+typeName(x))
		}
		if err := checkKeys(pp, pm, "type", "count"); err != nil {
			return tc, err
		}
		pr := &PerResource{}
		if pr.Type, err = requiredString(pp, pm, "type"); err != nil {
			return tc, err
		}
		c, ok := pm["count"]
		if !ok {
			return tc, errorf(pp.k("count"), "is required")
		}
		if pr.Count, err = asInt(pp.k("count"), c); err != nil {
			return tc, err
		}
		tc.PerResource = pr
	}
	return tc, nil
}

// parseAttributes keeps the raw mapping and extracts duration and
// constraints. Range checks happen in validate.
func parseAttributes(p *path, v any, js *Jobspec) error {
	if v == nil {
		return nil // RFC 14's schema allows null attributes
	}
	m, ok := v.(map[string]any)
	if !ok {
		return errorf(p, "must be a mapping, got "+typeName(v))
	}
	if err := checkKeys(p, m, attrKeys...); err != nil {
		return err
	}
	if len(m) > 0 {
		js.Attributes = m
	}
	for _, k := range attrKeys {
		if x, ok := m[k]; ok {
			if _, isMap := x.(map[string]any); !isMap {
				return errorf(p.k(k), "must be a mapping, got "+typeName(x))
			}
		}
	}
	sys, _ := m["system"].(map[string]any)
	sp := p.k("system")
	if d, ok := sys["duration"]; ok {
		dur, err := parseDuration(sp.k("duration"), d)
		if err != nil {
			return err
		}
		js.Duration = dur
	}
	if q, ok := sys["queue"]; ok {
		if _, isStr := q.(string); !isStr {
			return errorf(sp.k("queue"), "must be a string, got "+typeName(q))
		}
	}
	if c, ok := sys["constraints"]; ok {
		con, err := parseConstraint(sp.k("constraints"), c, 0)
		if err != nil {
			return err
		}
		js.Constraint = con
	}
	return nil
}

// parseDuration reads seconds as an integer or a float and rounds up to a
// whole second, as Fluxion does, so a job never gets less time than asked.
func parseDuration(p *path, v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return 0, errorf(p, fmt.Sprintf("must not be negative, got %d", x))
		}
		if x > MaxDuration {
			return 0, errorf(p, fmt.Sprintf("must be at most %d seconds, got %d", MaxDuration, x))
		}
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, errorf(p, "must be a finite number")
		}
		if x < 0 {
			return 0, errorf(p, fmt.Sprintf("must not be negative, got %v", x))
		}
		c := math.Ceil(x)
		if c > float64(MaxDuration) {
			return 0, errorf(p, fmt.Sprintf("must be at most %d seconds, got %v", MaxDuration, x))
		}
		return int64(c), nil
	}
	return 0, errorf(p, "must be a number of seconds, got "+describe(v))
}
