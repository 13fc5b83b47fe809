// Command fluence-release builds a release of fluence into one directory
// (`make release`, docs/release.md): fluence and kubectl-fluence for each
// platform, the multi-arch image (OCI layout and archive), the Helm chart
// packaged with the image's digest as its default, a CycloneDX SBOM per
// binary and SHA256SUMS. internal/release does the work.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/fluence-sched/fluence/internal/image"
	"github.com/fluence-sched/fluence/internal/release"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fluence-release:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("fluence-release", flag.ContinueOnError)
	out := fs.String("out", "_output/release", "the release directory (replaced)")
	version := fs.String("version", "", "the release's version (default: the VERSION file)")
	ref := fs.String("image", "", "the image's name and tag (default ghcr.io/fluence-sched/fluence:VERSION)")
	revision := fs.String("revision", "", "the source's commit, for the image's revision label")
	source := fs.String("source", "https://github.com/fluence-sched/fluence", "the source's address, for the image's source label")
	created := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "every time the release records, Unix seconds or RFC 3339 (default $SOURCE_DATE_EPOCH, else 0)")
	platforms := fs.String("platforms", platformList(release.DefaultPlatforms), "comma-separated platforms of the binaries; the image has the linux ones")
	module := fs.String("module", ".", "the repository's root")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *version == "" {
		v, err := release.ReadVersion(*module)
		if err != nil {
			return err
		}
		*version = v
	}
	if *ref == "" {
		*ref = "ghcr.io/fluence-sched/fluence:" + *version
	}
	tag, err := name.NewTag(*ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("--image %q: %w (want REGISTRY/REPOSITORY:TAG)", *ref, err)
	}
	if *created == "" {
		*created = "0"
	}
	when, err := image.ParseCreated(*created)
	if err != nil {
		return err
	}
	var plats []v1.Platform
	for _, s := range strings.Split(*platforms, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(s))
		if err != nil || p.OS == "" || p.Architecture == "" {
			return fmt.Errorf("--platforms: %q: want OS/ARCH", s)
		}
		plats = append(plats, *p)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	res, err := release.Build(ctx, release.Config{
		ModuleDir: *module, Out: *out, Version: *version, Image: tag,
		Revision: *revision, Source: *source, Created: when, Platforms: plats,
		Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) },
	})
	if err != nil {
		return err
	}
	fmt.Printf("fluence %s in %s (%s)\n", *version, *out, time.Since(start).Round(time.Second))
	fmt.Printf("  image:     %s\n", res.ImageRef)
	fmt.Printf("  chart:     %s\n", rel(*out, res.Chart))
	fmt.Printf("  binaries:  %d, each with its SBOM\n", len(res.Binaries))
	fmt.Printf("  checksums: %s\n", rel(*out, res.Checksums))
	return nil
}

func platformList(ps []v1.Platform) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.OS + "/" + p.Architecture
	}
	return strings.Join(s, ",")
}

func rel(dir, path string) string {
	if r, err := filepath.Rel(dir, path); err == nil {
		return r
	}
	return path
}
