package image

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Build says how to compile one platform's binary.
type Build struct {
	Go        string // the go command; "go" if empty
	ModuleDir string // the repository's root (where go.mod is)
	Platform  v1.Platform
	Version   string // stamped into main.version, printed by `fluence version`
	Out       string // the binary's path
	Package   string // the main package to build; Package (the image's) if empty
}

// Compile builds the image's binary (or b.Package) as a static binary for
// b.Platform, the way the Dockerfile does: no cgo (so no libc to bring along on an empty base),
// -trimpath (no build paths in the binary, so builds on different
// machines agree), symbols stripped.
func Compile(ctx context.Context, b Build) error {
	if b.Version == "" || strings.ContainsAny(b.Version, " \t\n'\"") {
		return fmt.Errorf("building fluence for %s: version %q: want a non-empty word (it goes into -ldflags)", b.Platform, b.Version)
	}
	goCmd := b.Go
	if goCmd == "" {
		goCmd = "go"
	}
	kube, err := kubeRelease(ctx, goCmd, b.ModuleDir)
	if err != nil {
		return fmt.Errorf("building fluence for %s: %w", b.Platform, err)
	}
	pkg := b.Package
	if pkg == "" {
		pkg = Package
	}
	flags := ldflags(b.Version, kube.version, kube.major, kube.minor)
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-ldflags", flags, "-o", b.Out, pkg)
	cmd.Dir = b.ModuleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+b.Platform.OS, "GOARCH="+b.Platform.Architecture)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building fluence for %s: %w\n%s", b.Platform, err, out.Bytes())
	}
	return nil
}

// componentBase is the package kube-scheduler reads its version from.
const componentBase = "k8s.io/component-base/version"

// ldflags are the linker flags of a release build: symbols stripped, and
// the versions stamped in, fluence's for `fluence version` and the
// Kubernetes release for kube-scheduler's --version, its logs and its
// build-info metric (unstamped, component-base reports a placeholder).
// The Dockerfile passes the same flags, from shell variables.
func ldflags(version, kube, major, minor string) string {
	return "-s -w -X main.version=" + version +
		" -X " + componentBase + ".gitVersion=" + kube +
		" -X " + componentBase + ".gitMajor=" + major +
		" -X " + componentBase + ".gitMinor=" + minor
}

// release is a Kubernetes release: v1.36.3, 1, 36.
type release struct{ version, major, minor string }

// kubeRelease asks go which k8s.io/kubernetes the module builds against.
func kubeRelease(ctx context.Context, goCmd, dir string) (release, error) {
	cmd := exec.CommandContext(ctx, goCmd, "list", "-m", "-f", "{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}", "k8s.io/kubernetes")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return release{}, fmt.Errorf("finding the Kubernetes release: go list -m k8s.io/kubernetes: %w", err)
	}
	return parseRelease(strings.TrimSpace(string(out)))
}

func parseRelease(v string) (release, error) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if !strings.HasPrefix(v, "v") || len(parts) < 3 || parts[0] == "" || parts[1] == "" || strings.ContainsAny(v, " \t\n'\"") {
		return release{}, fmt.Errorf("k8s.io/kubernetes version %q is not vMAJOR.MINOR.PATCH", v)
	}
	return release{version: v, major: parts[0], minor: parts[1]}, nil
}
