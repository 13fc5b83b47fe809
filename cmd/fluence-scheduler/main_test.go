package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/fluence-sched/fluence/internal/schedserver"
)

func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := schedserver.NewRoot("fluence-scheduler", "", version)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// The image's binary answers the CLI's scheduler and version commands as
// the CLI does (a Deployment's arguments run either), and nothing of the
// CLI's development commands.
func TestCommands(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if got, err := execute(t, args...); err != nil || got != version+"\n" {
			t.Errorf("fluence-scheduler %s: %q, %v; want %q", strings.Join(args, " "), got, err, version+"\n")
		}
	}
	// kube-scheduler's --version is a global flag: put it back after.
	t.Cleanup(func() { _ = pflag.Lookup("version").Value.Set("false") })
	want := "fluence " + version + " (kube-scheduler " + schedserver.KubeVersion() + ")\n"
	if got, err := execute(t, "scheduler", "--version"); err != nil || got != want {
		t.Errorf("fluence-scheduler scheduler --version: %q, %v; want %q", got, err, want)
	}
	for _, cli := range []string{"up", "demo", "sim", "match"} {
		if got, err := execute(t, cli); err == nil || !strings.Contains(got, "unknown command") {
			t.Errorf("fluence-scheduler %s: %v, output %q; want an unknown command", cli, err, got)
		}
	}
}
