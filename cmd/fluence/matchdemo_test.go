package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

// The match demo prints what testdata/match-demo.golden holds: every
// command of the embedded script with the matcher's response. A clock
// that never moves keeps the stat line's match times at zero.
func TestMatchDemoGolden(t *testing.T) {
	var out bytes.Buffer
	if err := runMatchDemo(&out, func() time.Time { return time.Time{} }); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "match-demo.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(want) {
		t.Errorf("output differs from %s (rerun with -update if the change is meant):\n got: %s\nwant: %s", golden, got, want)
	}
}

// `fluence match --demo` runs that demo: the same lines, but for the
// stat line's measured match times.
func TestMatchDemoCommand(t *testing.T) {
	var out bytes.Buffer
	root := rootCmd()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"match", "--demo"})
	if err := root.Execute(); err != nil {
		t.Fatalf("match --demo: %v\n%s", err, out.String())
	}
	want, err := os.ReadFile(filepath.Join("testdata", "match-demo.golden"))
	if err != nil {
		t.Fatal(err)
	}
	wantLines, gotLines := strings.Split(string(want), "\n"), strings.Split(out.String(), "\n")
	if len(gotLines) != len(wantLines) {
		t.Fatalf("match --demo printed %d lines, the golden file has %d:\n%s", len(gotLines), len(wantLines), out.String())
	}
	for i := range wantLines {
		if strings.Contains(wantLines[i], `"cmd":"stat"`) {
			continue
		}
		if gotLines[i] != wantLines[i] {
			t.Errorf("line %d:\n got: %s\nwant: %s", i+1, gotLines[i], wantLines[i])
		}
	}
}

func TestMatchDemoRefusesOtherFlags(t *testing.T) {
	for _, args := range [][]string{
		{"match", "--demo", "--generate", "cluster[1]->node[2]->core[4]"},
		{"match", "--demo", "--policy", "low"},
	} {
		var out bytes.Buffer
		root := rootCmd()
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(args)
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "--demo alone") {
			t.Errorf("%v: err = %v, want one saying to give --demo alone", args, err)
		}
	}
}
