package jobspec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseHostlist(t *testing.T) {
	// The RFC 29 test vectors, then our own.
	cases := map[string]string{
		"":                                "",
		"foox,fooy,fooz":                  "foox,fooy,fooz",
		"[1-3,5-6]":                       "1,2,3,5,6",
		"foo[1-5]":                        "foo1,foo2,foo3,foo4,foo5",
		"foo[0-4]-eth2":                   "foo0-eth2,foo1-eth2,foo2-eth2,foo3-eth2,foo4-eth2",
		"foo1,foo1,foo1":                  "foo1,foo1,foo1",
		"[00-02]":                         "00,01,02",
		"[00-2]":                          "00,01,02",
		"foo[1,1,2,1]":                    "foo1,foo1,foo2,foo1",
		"[005,4,11-13]":                   "005,004,011,012,013",
		"node[0-3,5],login[01-02],single": "node0,node1,node2,node3,node5,login01,login02,single",
		"n[8-11]":                         "n8,n9,n10,n11",
		"n[1,02]":                         "n1,n02",
		"a,,b,":                           "a,b",
	}
	for in, want := range cases {
		got, err := ParseHostlist(in)
		if err != nil {
			t.Errorf("ParseHostlist(%q): %v", in, err)
			continue
		}
		if strings.Join(got, ",") != want {
			t.Errorf("ParseHostlist(%q) = %v, want %s", in, got, want)
		}
	}
	bad := map[string]string{
		"node[3-1]":    "descending",
		"node[":        "missing ']'",
		"node]":        "invalid character",
		"node[]":       "empty brackets",
		"node[1-a]":    "invalid character",
		"a b":          "invalid character",
		"n[1]x[2]":     "invalid character",
		"n[1,,2]":      "empty id",
		"n[-1]":        "empty id",
		"héllo":        "invalid character",
		"n[0-1000000]": "more than the limit",
	}
	for in, msg := range bad {
		if _, err := ParseHostlist(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseHostlist(%q) = %v, want an error containing %q", in, err, msg)
		}
	}
}

func TestHostlistContains(t *testing.T) {
	hl, err := CompileHostlist("node[0-3,5],login[01-02],single,[7-8]x,rack1n[0-999999999999]")
	if err != nil {
		t.Fatal(err)
	}
	if n := hl.Len(); n != 5+2+1+2+1000000000000 {
		t.Errorf("Len = %d", n)
	}
	in := []string{"node0", "node3", "node5", "login01", "login02", "single", "7x", "8x", "rack1n0", "rack1n123456789"}
	out := []string{"node4", "node6", "node00", "login1", "login3", "login001", "singl", "singles", "9x", "x", "node", "rack1n", "rack1n01", "node-1", ""}
	for _, name := range in {
		if !hl.Contains(name) {
			t.Errorf("should contain %q", name)
		}
	}
	for _, name := range out {
		if hl.Contains(name) {
			t.Errorf("should not contain %q", name)
		}
	}
	// Every expanded name is contained, and nothing else of the same shape.
	small, _ := CompileHostlist("h[005,4,11-13]")
	names, _ := small.Expand()
	if !cmp.Equal(names, []string{"h005", "h004", "h011", "h012", "h013"}) {
		t.Errorf("expand %v", names)
	}
	for i := 0; i < 20; i++ {
		name := "h" + padID(int64(i), 3)
		want := i == 4 || i == 5 || i >= 11 && i <= 13
		if small.Contains(name) != want {
			t.Errorf("Contains(%q) = %v", name, !want)
		}
	}
}
