package jobspec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseIDSet(t *testing.T) {
	good := []struct {
		in   string
		str  string
		n    int64
		in1  []int64
		out1 []int64
	}{
		{"", "", 0, nil, []int64{0}},
		{"[]", "", 0, nil, []int64{0}},
		{"0-3,5,7-9", "0-3,5,7-9", 8, []int64{0, 3, 5, 9}, []int64{4, 6, 10, -1}},
		{"[1-3,5-6,42]", "1-3,5-6,42", 6, []int64{1, 42}, []int64{0, 4, 43}},
		{"5,1,2,3,2", "1-3,5", 4, []int64{1, 5}, []int64{4}},
		{"0-1,2-3", "0-3", 4, []int64{0, 3}, []int64{4}},
		{"007", "7", 1, []int64{7}, []int64{0}},
		{"0-999999999999999999", "0-999999999999999999", 1e18, []int64{123456789}, []int64{-1}},
	}
	for _, tc := range good {
		s, err := ParseIDSet(tc.in)
		if err != nil {
			t.Errorf("ParseIDSet(%q): %v", tc.in, err)
			continue
		}
		if s.String() != tc.str || s.Count() != tc.n {
			t.Errorf("ParseIDSet(%q) = %q (%d ids), want %q (%d)", tc.in, s, s.Count(), tc.str, tc.n)
		}
		for _, id := range tc.in1 {
			if !s.Contains(id) {
				t.Errorf("%q should contain %d", tc.in, id)
			}
		}
		for _, id := range tc.out1 {
			if s.Contains(id) {
				t.Errorf("%q should not contain %d", tc.in, id)
			}
		}
	}
	bad := map[string]string{
		"3-1":                 "descending",
		"1,,2":                "empty id",
		"1-":                  "empty id",
		"-1":                  "empty id",
		"a":                   "invalid character",
		"1 2":                 "invalid character",
		"[1-2":                "unbalanced",
		"1-2-3":               "invalid character",
		"1234567890123456789": "too large",
	}
	for in, msg := range bad {
		if _, err := ParseIDSet(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseIDSet(%q) = %v, want an error containing %q", in, err, msg)
		}
	}
}

func TestIDSetIDs(t *testing.T) {
	s, _ := ParseIDSet("3,0-1")
	ids, err := s.IDs()
	if err != nil || !cmp.Equal(ids, []int64{0, 1, 3}) {
		t.Errorf("IDs = %v, %v", ids, err)
	}
	big, _ := ParseIDSet("0-1000000")
	if _, err := big.IDs(); err == nil {
		t.Error("expanding 1,000,001 ids should fail")
	}
	var nilSet *IDSet
	if nilSet.Contains(0) || nilSet.Count() != 0 || nilSet.String() != "" {
		t.Error("nil set")
	}
}
