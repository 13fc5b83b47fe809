package release

import (
	"context"
	"fmt"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/fluence-sched/fluence/internal/image"
)

// Commands are the programs a release ships, by name, with their packages.
var Commands = []Command{
	{Name: "fluence", Package: "./cmd/fluence"},
	{Name: "kubectl-fluence", Package: "./cmd/kubectl-fluence"},
	{Name: ImageCommand, Package: image.Package, OS: "linux"},
}

// ImageCommand is the command whose linux binaries the image is made of;
// its SBOMs are the image's.
const ImageCommand = "fluence-scheduler"

// Command is one program of the release.
type Command struct {
	Name, Package string
	// OS, when set, is the only one the command is built for: the image's
	// scheduler runs in a linux container and nowhere else.
	OS string
}

// DefaultPlatforms are the platforms a release has binaries for.
var DefaultPlatforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64"},
	{OS: "darwin", Architecture: "amd64"},
	{OS: "darwin", Architecture: "arm64"},
}

// BinaryName is the file name of a command's binary in a release:
// fluence-0.1.0-linux-amd64.
func BinaryName(command, version string, p v1.Platform) string {
	return fmt.Sprintf("%s-%s-%s-%s", command, version, p.OS, p.Architecture)
}

// Binary is one binary built into the release directory.
type Binary struct {
	Command  string
	Platform v1.Platform
	Path     string
}

// BuildBinaries compiles every command for every platform into dir, with
// the version stamped in (`fluence version` and `kubectl fluence version`
// print it), as internal/image compiles the image's binary: static,
// -trimpath, stripped.
func BuildBinaries(ctx context.Context, moduleDir, dir, version string, platforms []v1.Platform, logf func(string, ...any)) ([]Binary, error) {
	var out []Binary
	for _, c := range Commands {
		for _, p := range platforms {
			if c.OS != "" && p.OS != c.OS {
				continue
			}
			path := filepath.Join(dir, BinaryName(c.Name, version, p))
			logf("building %s", path)
			if err := image.Compile(ctx, image.Build{ModuleDir: moduleDir, Platform: p, Version: version, Out: path, Package: c.Package}); err != nil {
				return nil, fmt.Errorf("%s: %w", c.Name, err)
			}
			out = append(out, Binary{Command: c.Name, Platform: p, Path: path})
		}
	}
	return out, nil
}
