package main

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
)

// --with kueue adds the two rows behind Kueue after those asked for, once
// each; nothing else can be added.
func TestDemoSchedulers(t *testing.T) {
	for _, tc := range []struct {
		name             string
		schedulers, with []string
		want             []string
		wantErr          string
	}{
		{name: "default", schedulers: []string{"fluence", "stock", "gang"}, want: []string{"fluence", "stock", "gang"}},
		{name: "with kueue", schedulers: []string{"fluence", "stock", "gang"}, with: []string{"kueue"},
			want: []string{"fluence", "stock", "gang", "stock+kueue", "fluence+kueue"}},
		{name: "named and with kueue", schedulers: []string{"fluence+kueue"}, with: []string{"kueue"},
			want: []string{"fluence+kueue", "stock+kueue"}},
		{name: "with the MPI Operator", schedulers: []string{"fluence"}, with: []string{"mpi-operator"}, wantErr: `--with "mpi-operator"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := demoSchedulers(tc.schedulers, tc.with)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// `fluence sim --schedulers quota+fluence` runs the model the demo's
// fluence+kueue row is checked against, labelled a model.
func TestSimQuotaFluence(t *testing.T) {
	cmd := simCmd()
	cmd.SetArgs([]string{"--workload", "backfill", "--schedulers", "quota,quota+fluence", "--queue-policy", "easy", "--no-files"})
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "quota+fluence (model)") || !strings.Contains(s, "then fluence: the fluence gang core") {
		t.Errorf("output lacks the quota+fluence row and its config:\n%s", s)
	}
}
