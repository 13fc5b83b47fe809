package jobspec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeScalars(t *testing.T) {
	v, err := decodeDocument([]byte(`
hex: 0x1F
octal: 0o17
under: 1_000
big: 99999999999999999999
bigneg: -99999999999999999999
float: 2.5
intfloat: 2.0
exp: 1e3
null1: ~
null2:
bool: true
quoted: "12"
tagged_int: !!int "42"
tagged_str: !!str 42
date: 2001-12-14
custom: !thing value
bin: !!binary aGk=
"1": one
key with space: x
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"hex": int64(31), "octal": int64(15), "under": int64(1000),
		"big": float64(99999999999999999999), "bigneg": float64(-99999999999999999999),
		"float": 2.5, "intfloat": 2.0, "exp": 1000.0,
		"null1": nil, "null2": nil, "bool": true, "quoted": "12",
		"tagged_int": int64(42), "tagged_str": "42", "date": "2001-12-14",
		"custom": "value", "bin": "aGk=", "1": "one", "key with space": "x",
	}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	bad := map[string]string{
		"a: !!int abc\n":     "invalid integer",
		"a: !!float abc\n":   "invalid number",
		"a: !!bool maybe\n":  "invalid boolean",
		"a: .inf\n":          "finite",
		"a: -.Inf\n":         "finite",
		"? [1, 2]\n: x\n":    "mapping keys must be scalars",
		"a: *nope\n":         "invalid YAML",
		"a: {<<: 3}\n":       "merge key",
		"\xff: 1\n":          "invalid YAML",
		`{"a": "\ud800"}`:    "", // a lone surrogate becomes U+FFFD, as encoding/json does
		`{"a": 1, "a": 2}`:   "duplicate key",
		`{"a": [1, 2}`:       "invalid JSON at line 1",
		"{\n\"a\": tru}":     "invalid JSON at line 2",
		`{"a": NaN}`:         "invalid JSON",
		"\xef\xbb\xbf{\"a\"": "invalid JSON: unexpected end of input",
	}
	for in, msg := range bad {
		_, err := decodeDocument([]byte(in))
		if msg == "" {
			if err != nil {
				t.Errorf("%q: %v", in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: got %v, want %q", in, err, msg)
		}
	}
	if _, err := decodeDocument(make([]byte, MaxInputSize+1)); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("oversized input: %v", err)
	}
}

func TestDecodeMerge(t *testing.T) {
	v, err := decodeDocument([]byte(`
base: &b {x: 1, y: 1}
other: &o {y: 2, z: 2}
m: {<<: [*b, *o], x: 0}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := v.(map[string]any)["m"]
	want := map[string]any{"x": int64(0), "y": int64(1), "z": int64(2)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merge (-want +got):\n%s", diff)
	}
}
