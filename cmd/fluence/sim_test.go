package main

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestSeedsFlag(t *testing.T) {
	tests := []struct {
		in   string
		want []uint
		err  string
	}{
		{in: "7", want: []uint{7}},
		{in: "1-10", want: []uint{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{in: "1,3,5-7", want: []uint{1, 3, 5, 6, 7}},
		{in: " 2 , 4-4 ", want: []uint{2, 4}},
		{in: "1,1", err: "seed 1 is given twice"},
		{in: "1-3,2", err: "seed 2 is given twice"},
		{in: "5-3", err: `"5-3": a range is lo-hi with lo <= hi`},
		{in: "x", err: `"x": a seed is a whole number`},
		{in: "-3", err: `"-3": a seed is a whole number`},
		{in: "1-20000", err: "more than 10,000 seeds"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			s := seedsFlag{1}
			err := s.Set(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(s, tc.want) {
				t.Fatalf("seeds %v (error %v), want %v", s, err, tc.want)
			}
		})
	}
}

// Several seeds print one table with mean (min-max) per scheduler;
// --per-seed adds each seed's own table before it.
func TestSimSeveralSeeds(t *testing.T) {
	run := func(perSeed bool) string {
		cmd := simCmd()
		args := []string{"--workload", "backfill", "--schedulers", "fluence,stock", "--queue-policy", "easy,fcfs", "--seeds", "1-3", "--no-files"}
		if perSeed {
			args = append(args, "--per-seed")
		}
		cmd.SetArgs(args)
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	plain := run(false)
	for _, s := range []string{"seeds 1-3: 3 runs per scheduler", "COMPLETE", "3 of 3", "fluence:fcfs", "stock (model)", "MAKESPAN/BEST"} {
		if !strings.Contains(plain, s) {
			t.Errorf("output lacks %q:\n%s", s, plain)
		}
	}
	if strings.Contains(plain, "seed 1\n") {
		t.Errorf("per-seed tables printed without --per-seed:\n%s", plain)
	}
	per := run(true)
	for _, s := range []string{"seed 1\n", "seed 2\n", "seed 3\n", "seeds 1-3: 3 runs per scheduler"} {
		if !strings.Contains(per, s) {
			t.Errorf("--per-seed output lacks %q", s)
		}
	}
	t.Logf("\n%s", plain)
}

// The built-in topology workload is listed in --help and, run, prints the
// comparison and then the topology table.
func TestSimTopologyWorkload(t *testing.T) {
	cmd := simCmd()
	if u := cmd.Flags().Lookup("workload").Usage; !strings.Contains(u, "topology-fragmented") {
		t.Errorf("--workload usage %q does not list topology-fragmented", u)
	}
	cmd.SetArgs([]string{"--workload", "topology-fragmented", "--schedulers", "fluence,stock", "--queue-policy", "easy", "--no-files"})
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"workload topology-fragmented: 92 jobs", "topology of workload topology-fragmented: levels",
		"WITHIN REQUIRED DOMAIN", "required rack", "required block", "preferred rack", "/44 (100%)", "stock (model)"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if i, j := strings.Index(s, "SCHEDULER "), strings.Index(s, "topology of workload"); i < 0 || j < i {
		t.Errorf("the topology table does not follow the comparison:\n%s", s)
	}
}

func TestSimRackScaleDRAWorkload(t *testing.T) {
	cmd := simCmd()
	if u := cmd.Flags().Lookup("workload").Usage; !strings.Contains(u, "rackscale-dra") {
		t.Errorf("--workload usage %q does not list rackscale-dra", u)
	}
	cmd.SetArgs([]string{"--workload", "rackscale-dra", "--schedulers", "fluence,stock", "--queue-policy", "easy", "--no-files"})
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"workload rackscale-dra: 120 jobs", "GPUs of workload rackscale-dra: 1152 GPUs as DRA devices on 288 nodes",
		"STRANDED (GPU-H)", "PARTIAL GANGS", "120/120 (100%)  0", "DRA GPUs counted as a number per node"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if i, j := strings.Index(s, "topology of workload"), strings.Index(s, "GPUs of workload"); i < 0 || j < i {
		t.Errorf("the GPU table does not follow the topology table:\n%s", s)
	}
}
