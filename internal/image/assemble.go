package image

import (
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Binary is one platform's static fluence binary.
type Binary struct {
	Platform v1.Platform
	Path     string
}

// Assemble makes the multi-platform image: one image per binary, each the
// binary alone on an empty base, under one OCI index that carries the
// labels as annotations too (registries show an index's, not its images').
func Assemble(binaries []Binary, m Metadata) (v1.ImageIndex, error) {
	if len(binaries) == 0 {
		return nil, fmt.Errorf("assembling the image: no binaries")
	}
	m.Created = m.Created.UTC().Truncate(time.Second)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	seen := map[string]bool{}
	for _, b := range binaries {
		if seen[b.Platform.String()] {
			return nil, fmt.Errorf("assembling the image: platform %s given twice", b.Platform)
		}
		seen[b.Platform.String()] = true
		img, err := platformImage(b, m)
		if err != nil {
			return nil, fmt.Errorf("assembling the image for %s: %w", b.Platform, err)
		}
		p := b.Platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return mutate.Annotations(idx, m.labels()).(v1.ImageIndex), nil
}

// platformImage is one platform's image: its layer, and a configuration with
// the entrypoint, user and labels of the Dockerfile's image.
func platformImage(b Binary, m Metadata) (v1.Image, error) {
	layer, err := binaryLayer(b.Path, m.Created)
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: m.Created},
			CreatedBy: "fluence-image: the static binary at " + BinaryPath,
		},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS = b.Platform.OS
	cfg.Architecture = b.Platform.Architecture
	cfg.Created = v1.Time{Time: m.Created}
	cfg.Config = v1.Config{
		User:       User,
		Entrypoint: []string{BinaryPath},
		Env:        []string{defaultPath},
		Labels:     m.labels(),
	}
	return mutate.ConfigFile(img, cfg)
}
