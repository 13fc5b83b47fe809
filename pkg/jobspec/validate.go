package jobspec

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"
)

// Validate checks a Jobspec built in code (by the builder or another
// package) with the same rules Parse applies, and compiles its constraint so
// Match is cheap. A Jobspec returned by Parse always validates.
func Validate(js *Jobspec) error {
	if js == nil {
		return &Error{Msg: "nil jobspec"}
	}
	return validate(js)
}

// validate applies the value rules shared by Parse and Validate. Parse has
// already checked keys and types; here are ranges, references between
// fields, slot rules and the version 1 restrictions.
func validate(js *Jobspec) error {
	vp := root.k("version")
	if js.Version != Version1 && js.Version != VersionCanonical {
		return errorf(vp, fmt.Sprintf("unsupported version %d (supported: 1, 9999)", js.Version))
	}
	rp := root.k("resources")
	if len(js.Resources) == 0 {
		return errorf(rp, "must list at least one resource")
	}
	rv := &resourceValidator{labels: map[string]string{}, slots: map[string]*Resource{}}
	if err := rv.list(rp, js.Resources, nil, 0); err != nil {
		return err
	}
	if len(rv.slots) == 0 {
		return errorf(rp, "must contain at least one slot (tasks run in slots)")
	}
	if err := validateTasks(root.k("tasks"), js.Tasks, rv.slots); err != nil {
		return err
	}
	if err := validateAttributes(js); err != nil {
		return err
	}
	if js.Version == Version1 {
		return validateV1(js)
	}
	return nil
}

type resourceValidator struct {
	labels map[string]string    // label -> path of its first use
	slots  map[string]*Resource // slot label -> slot
}

// list checks one level of siblings. slot is the enclosing slot's path, or
// nil outside any slot.
func (rv *resourceValidator) list(p *path, rs []*Resource, slot *path, depth int) error {
	if depth > maxDepth {
		return errorf(p, fmt.Sprintf("resources nested more than %d levels deep", maxDepth))
	}
	seen := map[string]int{}
	for i, r := range rs {
		ip := p.i(i)
		if r == nil {
			return errorf(ip, "must not be null")
		}
		// The simple traverser cannot tell two siblings of one type apart;
		// several slots (with distinct labels) are the exception, used for
		// heterogeneous groups, and so are leaves inside a slot that each
		// say which vertices they take (a pod's DRA requests).
		if j, dup := seen[r.Type]; dup && !r.IsSlot() && !(slot != nil && r.Requires != nil && rs[j].Requires != nil && len(r.With) == 0) {
			return errorf(ip.k("type"), fmt.Sprintf("duplicate sibling type %q (also at %s); only slots, and leaves inside a slot that carry requires, may repeat at one level", r.Type, p.i(j)))
		}
		seen[r.Type] = i
		if err := rv.resource(ip, r, slot, depth); err != nil {
			return err
		}
	}
	return nil
}

func (rv *resourceValidator) resource(p *path, r *Resource, slot *path, depth int) error {
	if r.Type == "" {
		return errorf(p.k("type"), "must be a non-empty string")
	}
	if err := r.Count.validate(p.k("count")); err != nil {
		return err
	}
	if r.Exclusive > ExclusiveFalse {
		return errorf(p.k("exclusive"), fmt.Sprintf("invalid value %d", r.Exclusive))
	}
	if r.With != nil && len(r.With) == 0 {
		return errorf(p.k("with"), "must list at least one resource")
	}
	if r.Label != "" {
		if prev, dup := rv.labels[r.Label]; dup {
			return errorf(p.k("label"), fmt.Sprintf("duplicate label %q (also at %s); labels are unique within a jobspec", r.Label, prev))
		}
		rv.labels[r.Label] = p.String()
	}
	if r.Requires != nil {
		if !r.IsSlot() && (slot == nil || len(r.With) > 0) {
			return errorf(p.k("requires"), "only a slot, or a resource without children inside a slot, may carry requires (it names the nodes the slot may be placed on, or the vertices the resource may take)")
		}
		if err := r.Requires.check(p.k("requires"), 0); err != nil {
			return err
		}
	}
	if r.IsSlot() {
		if slot != nil {
			return errorf(p.k("type"), fmt.Sprintf("a slot may not be nested inside another slot (%s)", slot))
		}
		if r.Label == "" {
			return errorf(p.k("label"), "is required for a slot")
		}
		if len(r.With) == 0 {
			return errorf(p.k("with"), "a slot must contain at least one resource")
		}
		if r.Exclusive == ExclusiveFalse {
			return errorf(p.k("exclusive"), "a slot is always allocated exclusively; exclusive: false is not allowed")
		}
		rv.slots[r.Label] = r
		slot = p
	} else if slot != nil && r.Exclusive == ExclusiveFalse {
		// Fluxion fails such a request with EINVAL at match time; reject it
		// here, where the user can still see which field is wrong.
		return errorf(p.k("exclusive"), fmt.Sprintf("must not be false inside a slot (everything in the slot at %s is allocated exclusively)", slot))
	}
	if len(r.With) > 0 {
		return rv.list(p.k("with"), r.With, slot, depth+1)
	}
	return nil
}

func validateTasks(p *path, tasks []Task, slots map[string]*Resource) error {
	if len(tasks) == 0 {
		return errorf(p, "must list at least one task")
	}
	for i := range tasks {
		t := &tasks[i]
		tp := p.i(i)
		if len(t.Command) == 0 {
			return errorf(tp.k("command"), "must list at least the program to run")
		}
		if t.Command[0] == "" {
			return errorf(tp.k("command").i(0), "the program name must not be empty")
		}
		slot, ok := slots[t.Slot]
		if !ok {
			return errorf(tp.k("slot"), fmt.Sprintf("no slot is labelled %q (slots: %s)", t.Slot, slotNames(slots)))
		}
		if err := validateTaskCount(tp.k("count"), t.Count, slot); err != nil {
			return err
		}
		if err := checkValue(tp.k("attributes"), t.Attributes, 0); err != nil {
			return err
		}
	}
	return nil
}

func validateTaskCount(p *path, tc TaskCount, slot *Resource) error {
	if tc.PerSlot < 0 {
		return errorf(p.k("per_slot"), fmt.Sprintf("must be at least 1, got %d", tc.PerSlot))
	}
	if tc.Total < 0 {
		return errorf(p.k("total"), fmt.Sprintf("must be at least 1, got %d", tc.Total))
	}
	n := 0
	if tc.PerSlot > 0 {
		n++
	}
	if tc.Total > 0 {
		n++
	}
	if tc.PerResource != nil {
		n++
	}
	if n != 1 {
		return errorf(p, fmt.Sprintf("must have exactly one of per_slot, per_resource or total, got %d", n))
	}
	if pr := tc.PerResource; pr != nil {
		pp := p.k("per_resource")
		if pr.Type == "" {
			return errorf(pp.k("type"), "must be a non-empty string")
		}
		if pr.Count < 1 {
			return errorf(pp.k("count"), fmt.Sprintf("must be at least 1, got %d", pr.Count))
		}
		// RFC 14: the type must be declared in the task's slot.
		found := false
		Walk(slot.With, func(r *Resource, _ []*Resource) bool {
			found = found || r.Type == pr.Type
			return !found
		})
		if !found {
			return errorf(pp.k("type"), fmt.Sprintf("no resource of type %q inside slot %q", pr.Type, slot.Label))
		}
	}
	return nil
}

func slotNames(slots map[string]*Resource) string {
	names := make([]string, 0, len(slots))
	for l := range slots {
		names = append(names, fmt.Sprintf("%q", l))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func validateAttributes(js *Jobspec) error {
	ap := root.k("attributes")
	sp := ap.k("system")
	if js.Duration < 0 || js.Duration > MaxDuration {
		return errorf(sp.k("duration"), fmt.Sprintf("must be between 0 and %d seconds, got %d", MaxDuration, js.Duration))
	}
	if js.Constraint != nil {
		if err := js.Constraint.check(sp.k("constraints"), 0); err != nil {
			return err
		}
	}
	if err := checkKeys(ap, js.Attributes, attrKeys...); err != nil {
		return err
	}
	for _, k := range attrKeys {
		if x, ok := js.Attributes[k]; ok {
			if _, isMap := x.(map[string]any); !isMap {
				return errorf(ap.k(k), "must be a mapping, got "+typeName(x))
			}
		}
	}
	return checkValue(ap, js.Attributes, 0)
}

// checkValue makes sure a free-form value can be encoded as JSON and parsed
// back to the same value: only the generic tree's types, finite numbers,
// valid UTF-8, bounded depth (which also stops cycles built in code).
func checkValue(p *path, v any, depth int) error {
	if depth > maxDepth {
		return errorf(p, fmt.Sprintf("nested more than %d levels deep", maxDepth))
	}
	switch x := v.(type) {
	case nil, bool, int64, int:
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return errorf(p, "must be a finite number")
		}
	case string:
		if !utf8.ValidString(x) {
			return errorf(p, "string is not valid UTF-8")
		}
	case []any:
		for i, e := range x {
			if err := checkValue(p.i(i), e, depth+1); err != nil {
				return err
			}
		}
	case map[string]any:
		for k, e := range x {
			if err := checkValue(p.k(k), e, depth+1); err != nil {
				return err
			}
		}
	default:
		return errorf(p, fmt.Sprintf("unsupported value type %T (use map[string]any, []any, string, int64, float64, bool or nil)", v))
	}
	return nil
}

// v1TypeSet holds the only resource types of RFC 25.
var v1TypeSet = map[string]bool{"node": true, "slot": true, "core": true, "gpu": true}

// v1Types checks types before shapes, so a stray type is reported as such
// rather than as a wrong shape.
func v1Types(p *path, rs []*Resource) error {
	for i, r := range rs {
		if !v1TypeSet[r.Type] {
			return errorf(p.i(i).k("type"), fmt.Sprintf("type %q is not allowed in version 1 (only node, slot, core and gpu)", r.Type))
		}
		if err := v1Types(p.i(i).k("with"), r.With); err != nil {
			return err
		}
	}
	return nil
}

// validateV1 applies RFC 25 on top of the canonical rules.
func validateV1(js *Jobspec) error {
	rp := root.k("resources")
	if len(js.Resources) != 1 {
		return errorf(rp, "version 1 requires exactly one top-level resource (a node or a slot)")
	}
	if err := v1Types(rp, js.Resources); err != nil {
		return err
	}
	top := js.Resources[0]
	if top.Type != "node" && top.Type != SlotType {
		return errorf(rp.i(0).k("type"), fmt.Sprintf("version 1 requires a node or a slot at the top, got %q", top.Type))
	}
	if err := v1Resource(rp.i(0), top); err != nil {
		return err
	}
	tp := root.k("tasks")
	if len(js.Tasks) != 1 {
		return errorf(tp, fmt.Sprintf("version 1 requires exactly one task, got %d", len(js.Tasks)))
	}
	cp := tp.i(0).k("count")
	if js.Tasks[0].Count.PerResource != nil {
		return errorf(cp.k("per_resource"), "not allowed in version 1 (use per_slot or total)")
	}
	if ps := js.Tasks[0].Count.PerSlot; ps != 0 && ps != 1 {
		return errorf(cp.k("per_slot"), fmt.Sprintf("must be 1 in version 1, got %d", ps))
	}
	sys, _ := js.Attributes["system"].(map[string]any)
	if _, ok := sys["duration"]; !ok && js.Duration == 0 {
		return errorf(root.k("attributes").k("system").k("duration"), "is required in version 1")
	}
	return nil
}

// v1Resource checks one vertex and its children against the four shapes
// slot>core, node>slot>core, slot>(core,gpu), node>slot>(core,gpu).
func v1Resource(p *path, r *Resource) error {
	if !r.Count.IsFixed() {
		return errorf(p.k("count"), "version 1 requires a fixed integer count, not a range")
	}
	if r.ID != "" {
		return errorf(p.k("id"), "not allowed in version 1")
	}
	if r.Requires != nil {
		return errorf(p.k("requires"), "not allowed in version 1 (a fluence extension)")
	}
	if r.Exclusive != ExclusiveUnset && r.Type != "node" && r.Type != SlotType {
		return errorf(p.k("exclusive"), "version 1 allows exclusive only on node and slot")
	}
	wp := p.k("with")
	switch r.Type {
	case "node":
		if len(r.With) != 1 || r.With[0].Type != SlotType {
			return errorf(wp, "in version 1 a node must contain exactly one slot")
		}
	case SlotType:
		hasCore := false
		for _, c := range r.With {
			hasCore = hasCore || c.Type == "core"
		}
		if !hasCore || len(r.With) > 2 {
			return errorf(wp, "in version 1 a slot must contain a core and optionally a gpu")
		}
		for i, c := range r.With {
			if c.Type != "core" && c.Type != "gpu" {
				return errorf(wp.i(i).k("type"), fmt.Sprintf("in version 1 a slot may contain only core and gpu, got %q", c.Type))
			}
		}
	default: // core, gpu
		if len(r.With) > 0 {
			return errorf(wp, fmt.Sprintf("in version 1 a %s cannot contain other resources", r.Type))
		}
	}
	for i, c := range r.With {
		if err := v1Resource(wp.i(i), c); err != nil {
			return err
		}
	}
	return nil
}
