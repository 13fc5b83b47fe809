package jobspec

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func sysAttrs(kv ...any) map[string]any {
	sys := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		sys[kv[i].(string)] = kv[i+1]
	}
	return map[string]any{"system": sys}
}

func oneTask(cmd, slot string) []Task {
	return []Task{{Command: []string{cmd}, Slot: slot, Count: TaskCount{PerSlot: 1}}}
}

// validExamples are the examples of docs/reference/fluxion.md section 3.4,
// kept in testdata/valid as both YAML and JSON.
var validExamples = []struct {
	name string
	want *Jobspec
}{
	{"node_exclusive", &Jobspec{
		Version: 1,
		Resources: []*Resource{{
			Type: "node", Count: Fixed(4), Exclusive: ExclusiveTrue,
			With: []*Resource{{
				Type: "slot", Count: Fixed(1), Label: "task",
				With: []*Resource{{Type: "core", Count: Fixed(1)}},
			}},
		}},
		Tasks:      oneTask("app", "task"),
		Duration:   3600,
		Attributes: sysAttrs("duration", int64(3600)),
	}},
	{"ten_slots", &Jobspec{
		Version: 1,
		Resources: []*Resource{{
			Type: "slot", Count: Fixed(10), Label: "default",
			With: []*Resource{{Type: "core", Count: Fixed(2)}},
		}},
		Tasks:      oneTask("solver", "default"),
		Duration:   3600,
		Attributes: sysAttrs("duration", int64(3600)),
	}},
	{"core_gpu", &Jobspec{
		Version: 1,
		Resources: []*Resource{{
			Type: "node", Count: Fixed(4),
			With: []*Resource{{
				Type: "slot", Count: Fixed(4), Label: "default",
				With: []*Resource{{Type: "core", Count: Fixed(1)}, {Type: "gpu", Count: Fixed(1)}},
			}},
		}},
		Tasks:      oneTask("train", "default"),
		Duration:   7200,
		Attributes: sysAttrs("duration", int64(7200)),
	}},
	{"range_constraint", &Jobspec{
		Version: 9999,
		Resources: []*Resource{{
			Type: "node", Count: Count{Min: 2, Max: 8, Operator: '+', Operand: 2},
			With: []*Resource{{
				Type: "slot", Count: Fixed(1), Label: "task",
				With: []*Resource{{Type: "core", Count: Fixed(4)}},
			}},
		}},
		Tasks:      oneTask("app", "task"),
		Duration:   600,
		Constraint: &Constraint{Op: "properties", Values: []string{"batch", "^debug"}},
		Attributes: sysAttrs("duration", int64(600),
			"constraints", map[string]any{"properties": []any{"batch", "^debug"}}),
	}},
	{"full_hierarchy", New(
		R("cluster", 1).With(R("rack", 1).With(R("node", 1).With(
			Slot(1, "default").With(R("socket", 2).With(
				R("core", 5), R("gpu", 1), R("memory", 6).Unit("GB"))))))).
		Duration(3600).
		Task(Task{Command: []string{"app"}, Slot: "default", Count: TaskCount{PerSlot: 1}}).
		Obj()},
}

func TestParseValidExamples(t *testing.T) {
	for _, tc := range validExamples {
		for _, ext := range []string{"yaml", "json"} {
			t.Run(tc.name+"."+ext, func(t *testing.T) {
				js, err := ParseFile(filepath.Join("testdata", "valid", tc.name+"."+ext))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, js); diff != "" {
					t.Errorf("mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestParseValidCanonical covers canonical features the 4.9 examples do not.
func TestParseValidCanonical(t *testing.T) {
	cases := []struct {
		name  string
		doc   string
		check func(t *testing.T, js *Jobspec)
	}{
		{"heterogeneous sibling slots", `
version: 9999
resources:
  - type: slot
    count: 2
    label: leader
    with: [{type: core, count: 4}]
  - type: slot
    count: 8
    label: worker
    with: [{type: core, count: 2}, {type: gpu, count: 1}]
tasks:
  - {command: [lead], slot: leader, count: {per_slot: 1}}
  - {command: [work], slot: worker, count: {per_resource: {type: gpu, count: 2}}}
attributes: {system: {duration: 1.2}}
`, func(t *testing.T, js *Jobspec) {
			if len(js.Slots()) != 2 || js.SlotByLabel("worker").Count != Fixed(8) {
				t.Errorf("slots: %+v", js.Slots())
			}
			if js.Duration != 2 {
				t.Errorf("duration 1.2 should round up to 2, got %d", js.Duration)
			}
			if pr := js.Tasks[1].Count.PerResource; pr == nil || *pr != (PerResource{"gpu", 2}) {
				t.Errorf("per_resource: %+v", pr)
			}
		}},
		{"slots that require different nodes", `
version: 9999
resources:
  - {type: slot, count: 1, label: launcher, requires: {properties: [pool=cpu]}, with: [{type: core, count: 1}]}
  - {type: slot, count: 4, label: worker, requires: {and: [{properties: [pool=gpu]}, {not: [{hostlist: ['gpu[0-1]']}]}]}, with: [{type: core, count: 2}, {type: gpu, count: 1}]}
tasks: [{command: [x], slot: worker, count: {per_slot: 1}}]
attributes: {system: {duration: 60}}
`, func(t *testing.T, js *Jobspec) {
			l, w := js.SlotByLabel("launcher"), js.SlotByLabel("worker")
			if !l.Requires.Equal(Properties("pool=cpu")) {
				t.Errorf("launcher requires %v", l.Requires)
			}
			props := map[string]string{"pool": "gpu"}
			if !w.Requires.Match("gpu2", -1, props) || w.Requires.Match("gpu1", -1, props) || w.Requires.Match("cpu0", -1, map[string]string{"pool": "cpu"}) {
				t.Errorf("worker requires %v matches the wrong nodes", w.Requires)
			}
			if js.Constraint != nil {
				t.Errorf("a slot's requires leaked into the job constraint: %v", js.Constraint)
			}
		}},
		{"leaves inside a slot that say which vertices they take", `
version: 9999
resources:
  - type: slot
    count: 2
    label: trainer
    with:
      - {type: core, count: 4}
      - {type: device, count: 4, requires: {hostlist: ['dev[0-7]']}}
      - {type: device, count: 1, requires: {properties: [kind=nic]}}
tasks: [{command: [x], slot: trainer, count: {per_slot: 1}}]
attributes: {system: {duration: 60}}
`, func(t *testing.T, js *Jobspec) {
			w := js.SlotByLabel("trainer").With
			if len(w) != 3 || w[1].Type != "device" || w[2].Type != "device" {
				t.Fatalf("slot contents %+v", w)
			}
			if !w[1].Requires.Match("dev3", -1, nil) || w[1].Requires.Match("dev8", -1, nil) {
				t.Errorf("first device request %v matches the wrong devices", w[1].Requires)
			}
			if !w[2].Requires.Equal(Properties("kind=nic")) {
				t.Errorf("second device request requires %v", w[2].Requires)
			}
		}},
		{"open range, star operator, floats as ints", `
version: 9999
resources:
  - type: node
    count: {min: 2.0}
    with:
      - type: slot
        label: s
        count: {min: 1, max: 64, operator: "*", operand: 2}
        with: [{type: core, count: 1.0, exclusive: true}]
tasks: [{command: [x], slot: s, count: {total: 10}}]
attributes: {system: {duration: 0}, user: {owner: me}}
`, func(t *testing.T, js *Jobspec) {
			n := js.Resources[0]
			if n.Count != (Count{Min: 2, Max: Unbounded, Operator: '+', Operand: 1}) {
				t.Errorf("node count %+v", n.Count)
			}
			if s := n.With[0]; s.Count != (Count{Min: 1, Max: 64, Operator: '*', Operand: 2}) {
				t.Errorf("slot count %+v", s.Count)
			}
			if js.Tasks[0].Count.Total != 10 {
				t.Errorf("total %+v", js.Tasks[0].Count)
			}
		}},
		{"anchors and merge keys", `
version: 9999
resources:
  - type: slot
    count: 1
    label: s
    with:
      - &core {type: core, count: 2}
  - type: slot
    count: 1
    label: t
    with:
      - *core
      - {<<: *core, type: gpu}
tasks: [{command: [x], slot: s, count: {per_slot: 1}}]
attributes: {system: {duration: 5, queue: batch, extra: [1, 2.5, "x"]}}
`, func(t *testing.T, js *Jobspec) {
			w := js.Resources[1].With
			if w[0].Type != "core" || w[1].Type != "gpu" || w[1].Count != Fixed(2) {
				t.Errorf("aliases: %+v %+v", w[0], w[1])
			}
			if js.Queue() != "batch" {
				t.Errorf("queue %q", js.Queue())
			}
		}},
		{"version 1 command as a string, null task attributes", `
version: 1
resources: [{type: slot, count: 1, label: s, with: [{type: core, count: 1}]}]
tasks: [{command: hostname, slot: s, count: {total: 1}, attributes: null}]
attributes: {system: {duration: 60}}
`, func(t *testing.T, js *Jobspec) {
			if !cmp.Equal(js.Tasks[0].Command, []string{"hostname"}) || js.Tasks[0].Attributes != nil {
				t.Errorf("task %+v", js.Tasks[0])
			}
		}},
		{"null attributes in canonical form", `
version: 9999
resources: [{type: slot, count: 1, label: s, with: [{type: core, count: 1}]}]
tasks: [{command: [x], slot: s, count: {per_slot: 1}}]
attributes:
`, func(t *testing.T, js *Jobspec) {
			if js.Attributes != nil || js.Duration != 0 || js.Constraint != nil {
				t.Errorf("attributes %+v", js.Attributes)
			}
		}},
		{"JSON with float duration and nested constraints", `{
"version": 9999,
"resources": [{"type": "node", "count": 1, "with": [{"type": "slot", "count": 1, "label": "s",
  "with": [{"type": "core", "count": 1}]}]}],
"tasks": [{"command": ["x"], "slot": "s", "count": {"per_slot": 1}, "distribution": "block"}],
"attributes": {"system": {"duration": 0.001, "constraints":
  {"and": [{"hostlist": ["n[0-3]"]}, {"not": [{"ranks": ["2"]}]}, {"or": []}]}}}}`,
			func(t *testing.T, js *Jobspec) {
				if js.Duration != 1 {
					t.Errorf("duration %d", js.Duration)
				}
				c := js.Constraint
				if !c.Match("n1", 1, nil) || c.Match("n2", 2, nil) || c.Match("m1", 1, nil) {
					t.Errorf("constraint %s evaluates wrongly", c)
				}
				if js.Tasks[0].Distribution != "block" {
					t.Errorf("distribution %q", js.Tasks[0].Distribution)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			js, err := Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, js)
		})
	}
}

// doc assembles a canonical jobspec around a resources snippet (YAML flow
// or block text indented by two spaces). Other sections can be replaced.
func doc(version, resources, tasks, attributes string) string {
	if version == "" {
		version = "9999"
	}
	if tasks == "" {
		tasks = "[{command: [app], slot: s, count: {per_slot: 1}}]"
	}
	if attributes == "" {
		attributes = "{system: {duration: 60}}"
	}
	return "version: " + version + "\nresources:\n" + resources + "\ntasks: " + tasks + "\nattributes: " + attributes + "\n"
}

// slotCore is "slot s > core 1", the smallest valid resources section.
const slotCore = "  - {type: slot, count: 1, label: s, with: [{type: core, count: 1}]}"

func TestParseInvalid(t *testing.T) {
	cases := []struct {
		name, doc, path, msg string
	}{
		{"unknown top-level key", "foo: 1\n" + doc("", slotCore, "", ""), "foo", "unknown key"},
		{"missing count", doc("", "  - {type: slot, count: 1, label: s, with: [{type: core}]}", "", ""),
			"resources[0].with[0].count", "is required"},
		{"count 0", doc("", "  - {type: slot, count: 0, label: s, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].count", "must be at least 1"},
		{"count -1", doc("", "  - {type: slot, count: -1, label: s, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].count", "must be at least 1"},
		{"count abc", doc("", "  - {type: slot, count: abc, label: s, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].count", "must be an integer or a range"},
		{"count 2.5", doc("", "  - {type: slot, count: 2.5, label: s, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].count", "must be an integer"},
		{"range min 0", doc("", "  - {type: slot, count: 1, label: s, with: [{type: core, count: {min: 0, max: 4}}]}", "", ""),
			"resources[0].with[0].count.min", "must be at least 1"},
		{"range without min", doc("", "  - {type: slot, count: {max: 4}, label: s, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].count.min", "is required"},
		{"range max < min", doc("", "  - {type: slot, count: {min: 4, max: 2}, label: s, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].count.max", "must be at least min (4)"},
		{"bad operator", doc("", "  - {type: slot, count: {min: 1, max: 4, operator: '/', operand: 2}, label: s, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].count.operator", `must be "+", "*" or "^"`},
		{"power with min 1", doc("", "  - {type: slot, count: {min: 1, max: 16, operator: '^', operand: 2}, label: s, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].count.min", `must be at least 2 for operator "^"`},
		{"star with operand 1", doc("", "  - {type: slot, count: {min: 1, max: 16, operator: '*', operand: 1}, label: s, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].count.operand", `must be at least 2 for operator "*"`},
		{"star without operand", doc("", "  - {type: slot, count: {min: 1, operator: '*'}, label: s, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].count.operand", "is required"},
		{"unknown range key", doc("", "  - {type: slot, count: {min: 1, step: 2}, label: s, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].count.step", "unknown key"},
		{"exclusive false under slot", doc("", "  - {type: node, count: 1, with: [{type: slot, count: 1, label: s, with: [{type: core, count: 1, exclusive: false}]}]}", "", ""),
			"resources[0].with[0].with[0].exclusive", "must not be false inside a slot"},
		{"exclusive false on slot", doc("", "  - {type: slot, count: 1, label: s, exclusive: false, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].exclusive", "exclusive: false is not allowed"},
		{"exclusive not a bool", doc("", "  - {type: node, count: 1, exclusive: yes, with: [{type: slot, count: 1, label: s, with: [{type: core, count: 1}]}]}", "", ""),
			"resources[0].exclusive", "must be true or false"},
		{"requires on a node outside a slot", doc("", "  - {type: node, count: 1, requires: {properties: [gpu]}, with: [{type: slot, count: 1, label: s, with: [{type: core, count: 1}]}]}", "", ""),
			"resources[0].requires", "only a slot, or a resource without children inside a slot, may carry requires"},
		{"requires on a socket inside a slot", doc("", "  - {type: slot, count: 1, label: s, with: [{type: socket, count: 1, requires: {properties: [gpu]}, with: [{type: core, count: 1}]}]}", "", ""),
			"resources[0].with[0].requires", "only a slot, or a resource without children inside a slot, may carry requires"},
		{"repeated leaf without requires", doc("", "  - {type: slot, count: 1, label: s, with: [{type: device, count: 1, requires: {hostlist: [dev0]}}, {type: device, count: 1}]}", "", ""),
			"resources[0].with[1].type", `duplicate sibling type "device"`},
		{"requires not a mapping", doc("", "  - {type: slot, count: 1, label: s, requires: [gpu], with: [{type: core, count: 1}]}", "", ""),
			"resources[0].requires", "a constraint must be a mapping"},
		{"requires with a bad property", doc("", "  - {type: slot, count: 1, label: s, requires: {properties: ['a|b']}, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].requires.properties[0]", ""},
		{"requires in version 1", doc("1", "  - {type: slot, count: 1, label: s, requires: {properties: [gpu]}, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].requires", "not allowed in version 1"},
		{"slot without label", doc("", "  - {type: slot, count: 1, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].label", "is required for a slot"},
		{"slot without with", doc("", "  - {type: slot, count: 1, label: s}", "", ""),
			"resources[0].with", "a slot must contain at least one resource"},
		{"empty with", doc("", "  - {type: node, count: 1, with: []}\n"+slotCore, "", ""),
			"resources[0].with", "must list at least one resource"},
		{"nested slot", doc("", "  - {type: slot, count: 1, label: s, with: [{type: slot, count: 1, label: t, with: [{type: core, count: 1}]}]}", "", ""),
			"resources[0].with[0].type", "may not be nested"},
		{"duplicate label", doc("", slotCore+"\n  - {type: node, count: 1, label: s}", "", ""),
			"resources[1].label", "duplicate label"},
		{"unknown resource key", doc("", "  - {type: slot, count: 1, label: s, colour: red, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].colour", "unknown key"},
		{"empty type", doc("", "  - {type: '', count: 1}\n"+slotCore, "", ""),
			"resources[0].type", "non-empty"},
		{"type not a string", doc("", "  - {type: 7, count: 1}\n"+slotCore, "", ""),
			"resources[0].type", "must be a string"},
		{"two sibling cores", doc("", "  - {type: slot, count: 1, label: s, with: [{type: core, count: 1}, {type: core, count: 2}]}", "", ""),
			"resources[0].with[1].type", `duplicate sibling type "core"`},
		{"no slot at all", doc("", "  - {type: node, count: 1}", "", ""),
			"resources", "at least one slot"},
		{"empty resources", "version: 9999\nresources: []\ntasks: []\nattributes: {}\n", "resources", "at least one resource"},
		{"version 2", doc("2", slotCore, "", ""), "version", "unsupported version 2"},
		{"version as a string", doc("'1'", slotCore, "", ""), "version", "must be an integer"},
		{"missing version", "resources: []\n", "version", "is required"},
		{"missing tasks", "version: 1\nresources: []\nattributes: {}\n", "tasks", "is required"},
		{"v1 memory type", doc("1", "  - {type: node, count: 1, with: [{type: slot, count: 1, label: s, with: [{type: core, count: 1}, {type: memory, count: 4}]}]}", "", ""),
			"resources[0].with[0].with[1].type", `type "memory" is not allowed in version 1`},
		{"v1 socket", doc("1", "  - {type: node, count: 1, with: [{type: socket, count: 1, with: [{type: slot, count: 1, label: s, with: [{type: core, count: 1}]}]}]}", "", ""),
			"resources[0].with[0].type", "not allowed in version 1"},
		{"v1 two top-level resources", doc("1", "  - {type: core, count: 1}\n"+slotCore, "", ""),
			"resources", "exactly one top-level resource"},
		{"v1 range", doc("1", "  - {type: slot, count: {min: 1}, label: s, with: [{type: core, count: 1}]}", "", ""),
			"resources[0].count", "version 1 requires a fixed integer count"},
		{"v1 slot without core", doc("1", "  - {type: slot, count: 1, label: s, with: [{type: gpu, count: 1}]}", "", ""),
			"resources[0].with", "must contain a core"},
		{"v1 exclusive core", doc("1", "  - {type: slot, count: 1, label: s, with: [{type: core, count: 1, exclusive: true}]}", "", ""),
			"resources[0].with[0].exclusive", "only on node and slot"},
		{"v1 without duration", doc("1", slotCore, "", "{system: {}}"),
			"attributes.system.duration", "is required in version 1"},
		{"v1 two tasks", doc("1", slotCore, "[{command: [a], slot: s, count: {per_slot: 1}}, {command: [b], slot: s, count: {per_slot: 1}}]", ""),
			"tasks", "exactly one task"},
		{"v1 per_slot 2", doc("1", slotCore, "[{command: [a], slot: s, count: {per_slot: 2}}]", ""),
			"tasks[0].count.per_slot", "must be 1 in version 1"},
		{"v1 per_resource", doc("1", slotCore, "[{command: [a], slot: s, count: {per_resource: {type: core, count: 1}}}]", ""),
			"tasks[0].count.per_resource", "not allowed in version 1"},
		{"negative duration", doc("", slotCore, "", "{system: {duration: -1}}"),
			"attributes.system.duration", "must not be negative"},
		{"NaN duration", doc("", slotCore, "", "{system: {duration: .nan}}"),
			"attributes.system.duration", "finite"},
		{"huge duration", doc("", slotCore, "", "{system: {duration: 1e300}}"),
			"attributes.system.duration", "must be at most"},
		{"string duration", doc("", slotCore, "", "{system: {duration: '60'}}"),
			"attributes.system.duration", "must be a number"},
		{"unknown attributes key", doc("", slotCore, "", "{system: {}, other: {}}"),
			"attributes.other", "unknown key"},
		{"user not a mapping", doc("", slotCore, "", "{user: 3}"),
			"attributes.user", "must be a mapping"},
		{"task slot names no slot", doc("", slotCore, "[{command: [a], slot: nope, count: {per_slot: 1}}]", ""),
			"tasks[0].slot", `no slot is labelled "nope"`},
		{"task slot names a non-slot label", doc("", slotCore+"\n  - {type: node, count: 1, label: n}", "[{command: [a], slot: n, count: {per_slot: 1}}]", ""),
			"tasks[0].slot", `no slot is labelled "n"`},
		{"task without command", doc("", slotCore, "[{slot: s, count: {per_slot: 1}}]", ""),
			"tasks[0].command", "is required"},
		{"task empty command", doc("", slotCore, "[{command: [], slot: s, count: {per_slot: 1}}]", ""),
			"tasks[0].command", "at least the program"},
		{"task command not strings", doc("", slotCore, "[{command: [a, 3], slot: s, count: {per_slot: 1}}]", ""),
			"tasks[0].command[1]", "must be a string"},
		{"task two counts", doc("", slotCore, "[{command: [a], slot: s, count: {per_slot: 1, total: 3}}]", ""),
			"tasks[0].count", "exactly one of"},
		{"task per_slot 0", doc("", slotCore, "[{command: [a], slot: s, count: {per_slot: 0}}]", ""),
			"tasks[0].count.per_slot", "must be at least 1"},
		{"task per_resource outside slot", doc("", slotCore, "[{command: [a], slot: s, count: {per_resource: {type: gpu, count: 1}}}]", ""),
			"tasks[0].count.per_resource.type", `no resource of type "gpu"`},
		{"task unknown key", doc("", slotCore, "[{command: [a], slot: s, count: {per_slot: 1}, env: {}}]", ""),
			"tasks[0].env", "unknown key"},
		{"no tasks", doc("", slotCore, "[]", ""), "tasks", "at least one task"},
		{"bad hostlist", doc("", slotCore, "", "{system: {constraints: {hostlist: ['node[3-1]']}}}"),
			"attributes.system.constraints.hostlist[0]", "descending"},
		{"bad idset", doc("", slotCore, "", "{system: {constraints: {and: [{ranks: ['0-x']}]}}}"),
			"attributes.system.constraints.and[0].ranks[0]", "invalid character"},
		{"ranks as integers", doc("", slotCore, "", "{system: {constraints: {ranks: [0]}}}"),
			"attributes.system.constraints.ranks[0]", "must be a string"},
		{"unknown constraint operator", doc("", slotCore, "", "{system: {constraints: {or: [{properties: [a]}, {xor: []}]}}}"),
			"attributes.system.constraints.or[1].xor", "unknown constraint operator"},
		{"two constraint operators", doc("", slotCore, "", "{system: {constraints: {properties: [a], hostlist: [b]}}}"),
			"attributes.system.constraints", "exactly one operator"},
		{"constraint value not a list", doc("", slotCore, "", "{system: {constraints: {properties: a}}}"),
			"attributes.system.constraints.properties", "must be a list"},
		{"property with a bad character", doc("", slotCore, "", "{system: {constraints: {properties: ['a|b']}}}"),
			"attributes.system.constraints.properties[0]", "invalid character"},
		{"property with whitespace", doc("", slotCore, "", "{system: {constraints: {properties: ['a b']}}}"),
			"attributes.system.constraints.properties[0]", "whitespace"},
		{"property not a string", doc("", slotCore, "", "{system: {constraints: {properties: [12]}}}"),
			"attributes.system.constraints.properties[0]", "must be a string"},
		{"empty property", doc("", slotCore, "", "{system: {constraints: {properties: ['^']}}}"),
			"attributes.system.constraints.properties[0]", "empty property"},
		{"duplicate YAML key", "version: 9999\nversion: 1\n", "version", "duplicate key"},
		{"duplicate JSON key", `{"version": 9999, "resources": [{"type": "a", "type": "b"}]}`, `resources[0].type`, "duplicate key"},
		{"alias cycle", "a: &x [*x]\n", "a[0][0]", "containing itself"},
		{"not a mapping", "- 1\n- 2\n", "", "must be a mapping"},
		{"empty document", "  \n", "", "empty document"},
		{"only a comment", "# nothing\n", "", "empty document"},
		{"two documents", doc("", slotCore, "", "") + "---\nversion: 1\n", "", "more than one document"},
		{"YAML syntax", "version: [1\n", "", "invalid YAML"},
		{"JSON syntax", `{"version": 1,}`, "", "invalid JSON at line 1"},
		{"JSON trailing data", `{"version": 1} x`, "", "invalid JSON"},
		{"JSON truncated", `{"version": `, "", "invalid JSON"},
		{"JSON huge number", `{"version": 1e999}`, "version", "out of range"},
		{"odd user key path", doc("", slotCore, "", "{user: {'a b': .inf}}"), `attributes.user["a b"]`, "finite"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			js, err := Parse([]byte(tc.doc))
			if err == nil {
				t.Fatalf("parsed, want error at %q; got %+v", tc.path, js)
			}
			var je *Error
			if !errors.As(err, &je) {
				t.Fatalf("error %v (%T) is not an *Error", err, err)
			}
			if je.Path != tc.path {
				t.Errorf("path %q, want %q (error: %v)", je.Path, tc.path, err)
			}
			if !strings.Contains(je.Msg, tc.msg) {
				t.Errorf("message %q does not contain %q", je.Msg, tc.msg)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	e := &Error{Path: "resources[0].with[1].count.min", Msg: "must be at least 1"}
	if got, want := e.Error(), "jobspec: resources[0].with[1].count.min: must be at least 1"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
	if got := (&Error{Msg: "empty document"}).Error(); got != "jobspec: empty document" {
		t.Errorf("got %q", got)
	}
}

func TestParseFileNamesTheFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "bad.yaml")
	if err := writeFile(name, "version: 2\n"); err != nil {
		t.Fatal(err)
	}
	_, err := ParseFile(name)
	if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "version") {
		t.Fatalf("error %v should name the file and the field", err)
	}
	var je *Error
	if !errors.As(err, &je) || je.Path != "version" {
		t.Errorf("wrapped error should still be an *Error at version: %v", err)
	}
	if _, err := ParseFile(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("missing file parsed")
	}
}

func TestValidateBuiltInCode(t *testing.T) {
	good := func() *Jobspec {
		return New(R("node", 1).With(Slot(1, "s").With(R("core", 2)))).Duration(60).Obj()
	}
	if err := Validate(good()); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mutate func(js *Jobspec)
		path   string
	}{
		{"nil resource", func(js *Jobspec) { js.Resources[0].With[0].With = []*Resource{nil} }, "resources[0].with[0].with[0]"},
		{"empty non-nil with", func(js *Jobspec) { js.Resources[0].With = []*Resource{} }, "resources[0].with"},
		{"zero count", func(js *Jobspec) { js.Resources[0].Count = Count{} }, "resources[0].count.min"},
		{"no operator", func(js *Jobspec) { js.Resources[0].Count = Count{Min: 1, Max: 2} }, "resources[0].count.operator"},
		{"bad exclusivity", func(js *Jobspec) { js.Resources[0].Exclusive = 9 }, "resources[0].exclusive"},
		{"shared under slot", func(js *Jobspec) { js.Resources[0].With[0].With[0].Exclusive = ExclusiveFalse }, "resources[0].with[0].with[0].exclusive"},
		{"negative duration", func(js *Jobspec) { js.Duration = -5 }, "attributes.system.duration"},
		{"too long", func(js *Jobspec) { js.Duration = MaxDuration + 1 }, "attributes.system.duration"},
		{"no task count", func(js *Jobspec) { js.Tasks[0].Count = TaskCount{} }, "tasks[0].count"},
		{"empty program", func(js *Jobspec) { js.Tasks[0].Command = []string{""} }, "tasks[0].command[0]"},
		{"bad constraint", func(js *Jobspec) { js.Constraint = Not(Hosts("a[9-1]")) }, "attributes.system.constraints.not[0].hostlist[0]"},
		{"nil constraint arg", func(js *Jobspec) { js.Constraint = And(nil) }, "attributes.system.constraints.and[0]"},
		{"unencodable attribute", func(js *Jobspec) { js.Attributes["user"] = map[string]any{"f": func() {}} }, "attributes.user.f"},
		{"version 3", func(js *Jobspec) { js.Version = 3 }, "version"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			js := good()
			tc.mutate(js)
			err := Validate(js)
			var je *Error
			if !errors.As(err, &je) || je.Path != tc.path {
				t.Errorf("got %v, want an error at %q", err, tc.path)
			}
		})
	}
	if Validate(nil) == nil {
		t.Error("nil jobspec validated")
	}
}

// TestAliasBomb makes sure a "billion laughs" document is refused quickly.
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	b.WriteString("m0: &m0 {x: 1}\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "m%d: &m%d {<<: [*m%d, *m%d], k%d: 1}\n", i, i, i-1, i-1, i)
	}
	start := time.Now()
	_, err := Parse([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "after expanding aliases") {
		t.Errorf("got %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v", d)
	}
}
