package jobspec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// roundTrip checks Parse(Encode(js)) == js and that encoding is stable.
func roundTrip(t *testing.T, js *Jobspec) {
	t.Helper()
	out, err := Encode(js)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatalf("Parse(Encode(js)): %v\n%s", err, out)
	}
	if diff := cmp.Diff(js, back); diff != "" {
		t.Fatalf("round trip mismatch (-orig +back):\n%s\nencoded: %s", diff, out)
	}
	again, err := Encode(back)
	if err != nil || string(again) != string(out) {
		t.Fatalf("encoding not stable:\n%s\n%s", out, again)
	}
}

func TestRoundTripFiles(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "valid", "*"))
	if len(files) == 0 {
		t.Fatal("no test files")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			js, err := ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, js)
		})
	}
}

func TestRoundTripValues(t *testing.T) {
	docs := []string{
		doc("", slotCore, "", "{system: {duration: 1.5, queue: q, cwd: /tmp, env: {A: '1'}}, user: {x: 2.0, y: [1, 'two', null, true, 1e30, -0.5], z: {}, 'w v': \"\\t\\u0001é\"}}"),
		doc("", "  - {type: node, count: {min: 1, max: 9223372036854775807}, exclusive: false, id: '0-3', with: [{type: slot, count: {min: 2, operator: '^', operand: 3}, label: s, exclusive: true, with: [{type: memory, count: 4, unit: GB}]}]}", "[{command: [a, '--x=1'], slot: s, count: {per_resource: {type: memory, count: 1}}, distribution: cyclic, attributes: {}}]", "{system: {constraints: {}}}"),
		doc("", slotCore, "[{command: [a], slot: s, count: {total: 5}, attributes: {environment: {A: B}}}]", "{system: {}}"),
		doc("", slotCore, "", "{}"),
		doc("", slotCore, "", "{user: {}}"),
	}
	for i, d := range docs {
		js, err := Parse([]byte(d))
		if err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
		roundTrip(t, js)
	}
}

func TestEncodeCanonical(t *testing.T) {
	js, err := Parse([]byte(doc("", "  - {type: slot, count: 2, label: s, with: [{type: core, count: {min: 1, max: 4}}]}", "", "{system: {duration: 60}, user: {f: 3.0}}")))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Encode(js)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"attributes":{"system":{"duration":60},"user":{"f":3.0}},"resources":[{"count":2,"label":"s","type":"slot","with":[{"count":{"max":4,"min":1,"operand":1,"operator":"+"},"type":"core"}]}],"tasks":[{"command":["app"],"count":{"per_slot":1},"slot":"s"}],"version":9999}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

// TestEncodeReconciles checks that Duration and Constraint win over a stale
// attributes map.
func TestEncodeReconciles(t *testing.T) {
	js, err := Parse([]byte(doc("", slotCore, "", "{system: {duration: 1.5, constraints: {properties: [a]}, queue: q}}")))
	if err != nil {
		t.Fatal(err)
	}
	js.Duration = 10
	js.Constraint = Properties("b")
	out, err := Encode(js)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"constraints":{"properties":["b"]}`) || !strings.Contains(string(out), `"duration":10`) ||
		!strings.Contains(string(out), `"queue":"q"`) {
		t.Errorf("not reconciled: %s", out)
	}
	js.Constraint = nil
	js.Duration = 0
	out, _ = Encode(js)
	if strings.Contains(string(out), "constraints") || !strings.Contains(string(out), `"duration":0`) {
		t.Errorf("not reconciled: %s", out)
	}
	// A jobspec built without attributes still encodes its fields.
	bare := &Jobspec{Version: 9999, Resources: []*Resource{Slot(1, "s").With(R("core", 1)).Res()},
		Tasks: oneTask("x", "s"), Duration: 5, Constraint: Ranks("0")}
	back, err := Parse(mustEncode(t, bare))
	if err != nil || back.Duration != 5 || !back.Constraint.Equal(bare.Constraint) {
		t.Errorf("bare: %+v %v", back, err)
	}
}

func mustEncode(t *testing.T, js *Jobspec) []byte {
	t.Helper()
	out, err := Encode(js)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEncodeRejectsInvalid(t *testing.T) {
	js := New(Slot(1, "s").With(R("core", 0))).Obj()
	if _, err := Encode(js); err == nil {
		t.Error("invalid jobspec encoded")
	}
}

// TestExamplesDoc keeps the JSON testdata equal to the YAML testdata.
func TestExamplesDoc(t *testing.T) {
	for _, tc := range validExamples {
		y, err1 := os.ReadFile(filepath.Join("testdata", "valid", tc.name+".yaml"))
		j, err2 := os.ReadFile(filepath.Join("testdata", "valid", tc.name+".json"))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		a, _ := Parse(y)
		b, _ := Parse(j)
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("%s: YAML and JSON differ:\n%s", tc.name, diff)
		}
	}
}
