// Package boundary enforces the one architectural rule a build cannot: the
// engine (graph, jobspec, planner, matcher, queue) depends on no Kubernetes
// module, so the simulator, the CLI and the scheduler all drive the same
// pure code.
package boundary

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// enginePackages are the roots of the engine; everything they import,
// directly or not, must stay free of Kubernetes.
// The inspection API's wire types (inspect) are held to the same rule:
// kubectl fluence reads them without the scheduler's dependencies.
var enginePackages = []string{"resource", "jobspec", "planner", "match", "queue", "gang", "inspect"}

var forbidden = []string{"k8s.io/", "sigs.k8s.io/"}

func TestEngineImportsNoKubernetes(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, p := range enginePackages {
		// The queue package arrives with its own issue; a missing package is
		// skipped here, but every present one is checked.
		if _, err := os.Stat(filepath.Join(root, "pkg", p)); err != nil {
			t.Logf("pkg/%s does not exist yet; not checked", p)
			continue
		}
		pkgs = append(pkgs, "./pkg/"+p)
	}
	if len(pkgs) < 4 {
		t.Fatalf("expected at least the resource, jobspec, planner and match packages, found %v", pkgs)
	}
	for _, withTests := range []bool{false, true} {
		args := []string{"list", "-deps"}
		if withTests {
			args = append(args, "-test")
		}
		cmd := exec.Command("go", append(args, pkgs...)...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v", strings.Join(args, " "), err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < len(pkgs) {
			t.Fatalf("go list returned %d packages for %d roots", len(deps), len(pkgs))
		}
		for _, d := range deps {
			for _, f := range forbidden {
				if strings.HasPrefix(d, f) {
					t.Errorf("engine depends on %s (tests included: %v); keep Kubernetes in the adapter packages", d, withTests)
				}
			}
		}
	}
}

// TestForbiddenPrefixesAreDetected guards the check itself: a dependency
// list that contains a Kubernetes module must be flagged.
func TestForbiddenPrefixesAreDetected(t *testing.T) {
	hit := func(d string) bool {
		for _, f := range forbidden {
			if strings.HasPrefix(d, f) {
				return true
			}
		}
		return false
	}
	for _, d := range []string{"k8s.io/client-go/kubernetes", "sigs.k8s.io/yaml"} {
		if !hit(d) {
			t.Errorf("%s not detected as forbidden", d)
		}
	}
	for _, d := range []string{"go.yaml.in/yaml/v3", "github.com/fluence-sched/fluence/pkg/match"} {
		if hit(d) {
			t.Errorf("%s wrongly detected as forbidden", d)
		}
	}
}
