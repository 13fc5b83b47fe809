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
}

// Compile builds cmd/fluence as a static binary for b.Platform, the way the
// Dockerfile does: no cgo (so no libc to bring along on an empty base),
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
	ldflags := "-s -w -X main.version=" + b.Version
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-ldflags", ldflags, "-o", b.Out, "./cmd/fluence")
	cmd.Dir = b.ModuleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+b.Platform.OS, "GOARCH="+b.Platform.Architecture)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building fluence for %s: %w\n%s", b.Platform, err, out.Bytes())
	}
	return nil
}
