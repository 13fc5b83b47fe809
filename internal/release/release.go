package release

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/fluence-sched/fluence/internal/image"
)

// ChartDir is the chart's directory in the repository.
const ChartDir = "deploy/helm/fluence"

// The names, in a release directory, of the image's directory (what
// internal/image writes: the OCI layout oci/, its archive fluence.tar and
// a docker-archive per platform) and of the file naming the image by
// digest.
const (
	ImageDir     = "image"
	ImageRefFile = "image/reference.txt"
)

// Config says what to build.
type Config struct {
	ModuleDir string        // the repository's root
	Out       string        // the release directory (replaced)
	Version   string        // the release's version (VERSION)
	Image     name.Tag      // the image's name and tag
	Revision  string        // the source's commit, for the image's labels
	Source    string        // the source's address, for the image's labels
	Created   time.Time     // every time written: the last commit's
	Platforms []v1.Platform // the binaries' platforms; the image has the linux ones
	Logf      func(format string, args ...any)
}

// Result is what Build wrote.
type Result struct {
	Binaries  []Binary
	Image     image.Outputs
	ImageRef  string // the image by digest: REPOSITORY:TAG@sha256:...
	Chart     string // the packaged chart
	SBOMs     []string
	Checksums string
}

// Build builds the release into cfg.Out: the binaries, the image from the
// linux fluence-scheduler binaries (the same files), the chart with that image's
// digest, an SBOM per binary and the checksums over everything.
func Build(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	if err := CheckVersion(cfg.Version); err != nil {
		return res, err
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := os.RemoveAll(cfg.Out); err != nil {
		return res, err
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return res, err
	}
	bins, err := BuildBinaries(ctx, cfg.ModuleDir, cfg.Out, cfg.Version, cfg.Platforms, logf)
	if err != nil {
		return res, err
	}
	res.Binaries = bins

	var imageBins []image.Binary
	for _, b := range bins {
		if b.Command == ImageCommand {
			imageBins = append(imageBins, image.Binary{Platform: b.Platform, Path: b.Path})
		}
	}
	if len(imageBins) == 0 {
		return res, errors.New("no linux platform among the release's: the image needs at least one")
	}
	logf("assembling the image %s", cfg.Image)
	idx, err := image.Assemble(imageBins, image.Metadata{Version: cfg.Version, Revision: cfg.Revision, Source: cfg.Source, Created: cfg.Created})
	if err != nil {
		return res, err
	}
	if res.Image, err = image.Write(filepath.Join(cfg.Out, ImageDir), idx, cfg.Image, cfg.Created); err != nil {
		return res, err
	}
	res.ImageRef = cfg.Image.String() + "@" + res.Image.Index.String()
	if err := os.WriteFile(filepath.Join(cfg.Out, ImageRefFile), []byte(res.ImageRef+"\n"), 0o644); err != nil {
		return res, err
	}

	logf("packaging the chart")
	res.Chart, err = PackageChart(filepath.Join(cfg.ModuleDir, ChartDir), cfg.Out, cfg.Version, ChartImage{
		Repository: Repository(cfg.Image),
		Tag:        cfg.Image.TagStr(),
		Digest:     res.Image.Index.String(),
	}, cfg.Created)
	if err != nil {
		return res, err
	}

	logf("writing the SBOMs")
	graph, err := ReadModGraph(ctx, cfg.ModuleDir)
	if err != nil {
		return res, err
	}
	for _, b := range bins {
		doc, err := SBOM(b.Path, b.Command, cfg.Version, graph, cfg.Created)
		if err != nil {
			return res, err
		}
		path := SBOMName(b.Path)
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			return res, err
		}
		res.SBOMs = append(res.SBOMs, path)
	}

	if res.Checksums, err = WriteChecksums(cfg.Out); err != nil {
		return res, fmt.Errorf("writing the checksums: %w", err)
	}
	return res, nil
}

// Repository is the image's repository as a pod names it: Docker Hub's as
// docker.io/..., not the index.docker.io the library resolves it to.
func Repository(tag name.Tag) string {
	repo := tag.Context()
	if repo.RegistryStr() == name.DefaultRegistry {
		return "docker.io/" + repo.RepositoryStr()
	}
	return repo.Name()
}
