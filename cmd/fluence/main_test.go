package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/fluence-sched/fluence/internal/schedserver"
)

func runRoot(t *testing.T, args ...string) string {
	t.Helper()
	root := rootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		t.Fatalf("fluence %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// kube-scheduler's global --version flag reaches every command through
// cobra; it must print fluence's version on the root and show only where
// it applies.
func TestVersionFlag(t *testing.T) {
	if got := runRoot(t, "--version"); got != version+"\n" {
		t.Errorf("fluence --version printed %q, want %q", got, version+"\n")
	}
	if got := runRoot(t, "version"); got != version+"\n" {
		t.Errorf("fluence version printed %q, want %q", got, version+"\n")
	}
	for _, cmd := range [][]string{{"--help"}, {"sim", "--help"}, {"up", "--help"}} {
		if got := runRoot(t, cmd...); strings.Contains(got, "--version") {
			t.Errorf("fluence %s lists --version:\n%s", strings.Join(cmd, " "), got)
		}
	}
	if got := runRoot(t, "scheduler", "--help"); !strings.Contains(got, "--version") {
		t.Errorf("fluence scheduler --help does not list kube-scheduler's --version:\n%s", got)
	}
	// kube-scheduler's --version is a global flag: put it back after.
	t.Cleanup(func() { _ = pflag.Lookup("version").Value.Set("false") })
	want := "fluence " + version + " (kube-scheduler " + schedserver.KubeVersion() + ")\n"
	if got := runRoot(t, "scheduler", "--version"); got != want {
		t.Errorf("fluence scheduler --version printed %q, want %q", got, want)
	}
}
