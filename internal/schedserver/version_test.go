package schedserver

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestKubeVersionFrom(t *testing.T) {
	deps := func(ms ...*debug.Module) *debug.BuildInfo { return &debug.BuildInfo{Deps: ms} }
	for _, tc := range []struct {
		name    string
		stamped string
		bi      *debug.BuildInfo
		want    string
	}{
		{"stamped by ldflags", "v1.36.3", deps(&debug.Module{Path: kubeModule, Version: "v1.35.0"}), "v1.36.3"},
		{"placeholder: the module's version", "v0.0.0-master+$Format:%H$", deps(&debug.Module{Path: "k8s.io/api", Version: "v0.36.3"}, &debug.Module{Path: kubeModule, Version: "v1.36.3"}), "v1.36.3"},
		{"replaced module", "v0.0.0-master+$Format:%H$", deps(&debug.Module{Path: kubeModule, Version: "v1.36.0", Replace: &debug.Module{Path: kubeModule, Version: "v1.36.4"}}), "v1.36.4"},
		{"no build info", "v0.0.0-master+$Format:%H$", nil, "unknown"},
		{"not linked", "", deps(&debug.Module{Path: "k8s.io/api", Version: "v0.36.3"}), "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := kubeVersionFrom(tc.stamped, tc.bi); got != tc.want {
				t.Errorf("kubeVersionFrom(%q) = %q, want %q", tc.stamped, got, tc.want)
			}
		})
	}
}

// The --version flag is component-base's global one: each case sets it
// and puts it back.
func TestPrintVersion(t *testing.T) {
	f := pflag.Lookup("version")
	if f == nil {
		t.Fatal("component-base registered no --version flag")
	}
	t.Cleanup(func() { _ = f.Value.Set("false") })
	for _, tc := range []struct {
		value   string
		printed bool
		want    []string
	}{
		{"false", false, nil},
		{"true", true, []string{"fluence v9.9.9 (kube-scheduler " + KubeVersion() + ")\n"}},
		{"raw", true, []string{"version.Info{", `GitVersion:"` + KubeVersion() + `"`}},
	} {
		t.Run(tc.value, func(t *testing.T) {
			if err := f.Value.Set(tc.value); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if got := printVersion(&out, "v9.9.9"); got != tc.printed {
				t.Fatalf("printVersion with --version=%s reported %v, want %v", tc.value, got, tc.printed)
			}
			if !tc.printed && out.Len() > 0 {
				t.Errorf("printVersion with --version=%s printed %q", tc.value, out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("--version=%s printed %q, want it to contain %q", tc.value, out.String(), w)
				}
			}
			if strings.Contains(out.String(), "$Format") && tc.value == "true" {
				t.Errorf("--version printed component-base's placeholder: %q", out.String())
			}
		})
	}
}
