package image

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The names of what Write leaves in its directory.
const (
	LayoutDir  = "oci"         // OCI layout: crane push (the whole index), skopeo
	OCIArchive = "fluence.tar" // the layout as one tar: kind load image-archive, podman load, docker load with the containerd image store
)

// DockerArchive is the name of one platform's docker-archive (a tar with
// manifest.json, as `docker save` wrote it before Docker 25), which every
// Docker's `docker load` reads, and podman load, kind load image-archive
// and crane push too.
func DockerArchive(p v1.Platform) string {
	return fmt.Sprintf("fluence-%s-%s.docker.tar", p.OS, p.Architecture)
}

// Outputs are the paths Write wrote.
type Outputs struct {
	Layout         string
	OCIArchive     string
	DockerArchives map[string]string // by platform, as in linux/amd64
	Index          v1.Hash           // the index's digest: what a registry serves for the tag
}

// Write writes idx, named tag, into dir (replacing what an earlier run left
// there): the OCI layout, its archive, and a docker-archive per platform.
// created dates the archive's entries, so rewriting gives the same bytes.
func Write(dir string, idx v1.ImageIndex, tag name.Tag, created time.Time) (Outputs, error) {
	digest, err := idx.Digest()
	if err != nil {
		return Outputs{}, err
	}
	out := Outputs{
		Layout:         filepath.Join(dir, LayoutDir),
		OCIArchive:     filepath.Join(dir, OCIArchive),
		DockerArchives: map[string]string{},
		Index:          digest,
	}
	if err := os.RemoveAll(out.Layout); err != nil {
		return Outputs{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Outputs{}, err
	}
	lp, err := layout.Write(out.Layout, empty.Index)
	if err != nil {
		return Outputs{}, fmt.Errorf("writing the OCI layout %s: %w", out.Layout, err)
	}
	// Tools name what they load from these annotations: containerd (kind,
	// Docker's containerd store) the first, podman and skopeo the second.
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          containerdName(tag),
		"org.opencontainers.image.ref.name": tag.TagStr(),
	})); err != nil {
		return Outputs{}, fmt.Errorf("writing the OCI layout %s: %w", out.Layout, err)
	}
	if err := tarDir(out.Layout, out.OCIArchive, created); err != nil {
		return Outputs{}, fmt.Errorf("writing the OCI archive %s: %w", out.OCIArchive, err)
	}

	manifest, err := idx.IndexManifest()
	if err != nil {
		return Outputs{}, err
	}
	for _, desc := range manifest.Manifests {
		if desc.Platform == nil {
			return Outputs{}, fmt.Errorf("the index's manifest %s has no platform", desc.Digest)
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return Outputs{}, err
		}
		path := filepath.Join(dir, DockerArchive(*desc.Platform))
		if err := tarball.WriteToFile(path, tag, img); err != nil {
			return Outputs{}, fmt.Errorf("writing the docker archive %s: %w", path, err)
		}
		out.DockerArchives[desc.Platform.String()] = path
	}
	return out, nil
}

// containerdName is tag as containerd and the kubelet spell it: Docker Hub
// as docker.io, not the index.docker.io the library resolves it to.
func containerdName(tag name.Tag) string {
	repo := tag.Context()
	if repo.RegistryStr() == name.DefaultRegistry {
		return "docker.io/" + repo.RepositoryStr() + ":" + tag.TagStr()
	}
	return tag.Name()
}
