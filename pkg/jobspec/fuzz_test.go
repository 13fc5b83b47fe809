package jobspec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParse checks that Parse never panics, and that whatever parses encodes
// and parses back to an equal Jobspec.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "valid", "*"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		doc("", slotCore, "", "{system: {duration: 1.5, constraints: {and: [{hostlist: ['n[0-3]']}, {not: [{ranks: ['1-2']}]}]}}, user: {a: [1, 2.0, x]}}"),
		doc("", "  - {type: slot, count: {min: 2, max: 64, operator: '^', operand: 2}, label: s, with: [{type: core, count: 1}]}", "", ""),
		doc("", "  - {type: slot, count: 1, label: s, with: [{type: core, count: 1, exclusive: false}]}", "", ""),
		doc("1", "  - {type: node, count: 1, with: [{type: slot, count: 1, label: s, with: [{type: memory, count: 1}]}]}", "", ""),
		"a: &a [*a, *a]\n",
		"a: &a [1]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n",
		"{<<: {a: 1}, a: 2}",
		`{"version": 9999, "resources": [{"type": "slot", "count": 1e3}]}`,
		`{"version": 1, "version": 1}`,
		"version: 9999\nresources: [{type: slot, count: 1, label: s, with: [{type: core, count: 1}]}]\ntasks: [{command: [x], slot: s, count: {per_slot: 1}}]\nattributes: {system: {constraints: {ranks: ['0-999999999999999999']}}}\n",
		doc("", "  - {type: slot, count: 2, label: s, requires: {or: [{properties: [a=b]}, {ranks: ['0-3']}]}, with: [{type: core, count: 1}]}", "", ""),
		"[[[[[[[[[[",
		"{",
		"",
		"!!binary aGk=",
		"? [a]\n: b\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		js, err := Parse(data)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %v is %T, not *Error", err, err)
			}
			return
		}
		out, err := Encode(js)
		if err != nil {
			t.Fatalf("parsed but does not encode: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("encoded form does not parse: %v\n%s", err, out)
		}
		if diff := cmp.Diff(js, back); diff != "" {
			t.Fatalf("round trip mismatch:\n%s", diff)
		}
		if js.Constraint != nil {
			js.Constraint.Match("n0", 0, map[string]string{"a": "b"})
		}
		for _, r := range js.Slots() {
			r.Count.Lattice(1000)
		}
	})
}
