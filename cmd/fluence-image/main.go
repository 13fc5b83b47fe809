// Command fluence-image builds fluence's container image without a
// container engine (`make image`): it compiles the static scheduler binary
// (cmd/fluence-scheduler) for each platform, assembles them under one OCI index (internal/image) and writes
// the OCI layout, an OCI archive and a docker-archive per platform.
//
// It is a command of its own so that no binary that goes into the image
// carries the image library.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/fluence-sched/fluence/internal/image"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fluence-image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("fluence-image", flag.ContinueOnError)
	out := fs.String("out", "_output/image", "directory to write the image into (replaced)")
	ref := fs.String("image", "", "the image's name and tag (default ghcr.io/fluence-sched/fluence:VERSION)")
	version := fs.String("version", "dev", "the version `fluence version` prints and the image's version label")
	revision := fs.String("revision", "", "the source's commit, for the revision label")
	source := fs.String("source", "https://github.com/fluence-sched/fluence", "the source's address, for the source label")
	created := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "the creation time, Unix seconds or RFC 3339 (default $SOURCE_DATE_EPOCH, else 0)")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated platforms")
	module := fs.String("module", ".", "the repository's root")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
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
		p, err := image.ParsePlatform(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("--platforms: %w", err)
		}
		plats = append(plats, p)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	binDir := filepath.Join(*out, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	var bins []image.Binary
	for _, p := range plats {
		path := filepath.Join(binDir, "fluence-"+p.OS+"-"+p.Architecture)
		fmt.Fprintf(os.Stderr, "building %s\n", path)
		if err := image.Compile(ctx, image.Build{ModuleDir: *module, Platform: p, Version: *version, Out: path}); err != nil {
			return err
		}
		bins = append(bins, image.Binary{Platform: p, Path: path})
	}
	idx, err := image.Assemble(bins, image.Metadata{Version: *version, Revision: *revision, Source: *source, Created: when})
	if err != nil {
		return err
	}
	res, err := image.Write(*out, idx, tag, when)
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", tag, res.Index)
	fmt.Printf("  OCI layout:  %s\n", res.Layout)
	fmt.Printf("  OCI archive: %s\n", res.OCIArchive)
	keys := make([]string, 0, len(res.DockerArchives))
	for k := range res.DockerArchives {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("  docker-archive %s: %s\n", k, res.DockerArchives[k])
	}
	return nil
}
