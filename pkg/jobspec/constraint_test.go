package jobspec

import (
	"testing"
)

type vertex struct {
	name  string
	rank  int64
	props map[string]string
}

var (
	n0 = vertex{"node0", 0, map[string]string{"batch": "", "zone": "a"}}
	n1 = vertex{"node1", 1, map[string]string{"batch": "", "debug": "", "zone": "b"}}
	n2 = vertex{"node2", 2, map[string]string{"gpu": "a100", "zone=a": ""}}
	l1 = vertex{"login01", -1, nil}
)

func TestConstraintMatch(t *testing.T) {
	cases := []struct {
		json string
		want []bool // for n0, n1, n2, l1
	}{
		{`{}`, []bool{true, true, true, true}},
		{`{"properties": []}`, []bool{true, true, true, true}},
		{`{"properties": ["batch"]}`, []bool{true, true, false, false}},
		{`{"properties": ["batch", "^debug"]}`, []bool{true, false, false, false}},
		{`{"properties": ["^debug"]}`, []bool{true, false, true, true}},
		// k=v compares the value; a literal key "zone=a" also matches.
		{`{"properties": ["zone=a"]}`, []bool{true, false, true, false}},
		{`{"properties": ["gpu=a100"]}`, []bool{false, false, true, false}},
		{`{"properties": ["gpu=h100"]}`, []bool{false, false, false, false}},
		{`{"properties": ["^zone=b"]}`, []bool{true, false, true, true}},
		{`{"properties": ["zone="]}`, []bool{false, false, false, false}},
		{`{"hostlist": ["node[0,2]"]}`, []bool{true, false, true, false}},
		{`{"hostlist": ["node0", "login[01-02]"]}`, []bool{true, false, false, true}},
		{`{"hostlist": []}`, []bool{false, false, false, false}},
		{`{"ranks": ["1-2"]}`, []bool{false, true, true, false}},
		{`{"ranks": ["0", "2"]}`, []bool{true, false, true, false}},
		{`{"ranks": []}`, []bool{false, false, false, false}},
		{`{"and": []}`, []bool{true, true, true, true}},
		{`{"or": []}`, []bool{true, true, true, true}},
		{`{"not": []}`, []bool{false, false, false, false}},
		{`{"not": [{"properties": ["debug"]}]}`, []bool{true, false, true, true}},
		{`{"not": [{"hostlist": ["node[0-1]"]}]}`, []bool{false, false, true, true}},
		// not with several arguments negates their conjunction.
		{`{"not": [{"properties": ["batch"]}, {"ranks": ["1"]}]}`, []bool{true, false, true, true}},
		{`{"or": [{"properties": ["debug"]}, {"ranks": ["2"]}]}`, []bool{false, true, true, false}},
		{`{"and": [{"hostlist": ["node[0-2]"]}, {"not": [{"ranks": ["1"]}]}]}`, []bool{true, false, true, false}},
		{`{"and": [{"or": [{"properties": ["zone=a"]}, {"properties": ["zone=b"]}]}, {"not": [{"not": [{"properties": ["batch"]}]}]}]}`,
			[]bool{true, true, false, false}},
		{`{"or": [{}, {"not": []}]}`, []bool{true, true, true, true}},
	}
	vs := []vertex{n0, n1, n2, l1}
	for _, tc := range cases {
		c, err := ParseConstraintJSON([]byte(tc.json))
		if err != nil {
			t.Errorf("%s: %v", tc.json, err)
			continue
		}
		// The same tree built as a struct literal, never compiled, must agree.
		raw := &Constraint{Op: c.Op, Values: c.Values, Args: c.Args}
		for i, v := range vs {
			if got := c.Match(v.name, v.rank, v.props); got != tc.want[i] {
				t.Errorf("%s on %s = %v, want %v", tc.json, v.name, got, tc.want[i])
			}
			if got := raw.Match(v.name, v.rank, v.props); got != tc.want[i] {
				t.Errorf("uncompiled %s on %s = %v, want %v", tc.json, v.name, got, tc.want[i])
			}
		}
		if c.String() != compact(tc.json) {
			t.Errorf("String() = %s, want %s", c.String(), compact(tc.json))
		}
	}
	var nilC *Constraint
	if !nilC.Match("x", 0, nil) {
		t.Error("a nil constraint matches everything")
	}
}

func compact(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' {
			out = append(out, s[i])
		}
	}
	return string(out)
}

func TestConstraintConstructors(t *testing.T) {
	c := And(Properties("batch", "^debug"), Or(Hosts("node[0-1]"), Ranks("2")), Not(MatchAll()))
	if err := c.check(root, 0); err != nil {
		t.Fatal(err)
	}
	want := `{"and":[{"properties":["batch","^debug"]},{"or":[{"hostlist":["node[0-1]"]},{"ranks":["2"]}]},{"not":[{}]}]}`
	if c.String() != want {
		t.Errorf("got %s", c.String())
	}
	parsed, err := ParseConstraint(c.Map())
	if err != nil || !parsed.Equal(c) {
		t.Errorf("ParseConstraint(Map()) = %v, %v", parsed, err)
	}
	// A Not of MatchAll matches nothing, so the and never matches.
	if c.Match("node0", 0, n0.props) {
		t.Error("should not match")
	}
	if Properties("a").Equal(Properties("b")) || !Properties("a").Equal(Properties("a")) || Properties().Equal(nil) {
		t.Error("Equal")
	}
	// ParseConstraint accepts values as encoding/json or Go code build them.
	if _, err := ParseConstraint(map[string]any{"properties": []string{"x"}}); err != nil {
		t.Error(err)
	}
	if _, err := ParseConstraint(map[string]any{"ranks": []any{"0-"}}); err == nil {
		t.Error("bad ranks accepted")
	}
}
