package image

import (
	"io"
	"os"

	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// checkOutputs reads back, from disk, everything Write wrote: the layout
// (one entry, the index, named for containerd and podman), the OCI archive
// (the same index), and each docker-archive (tagged, and holding the same
// image configuration as the index's image for its platform). It returns
// the binaries of the layout's images, by architecture.
func checkOutputs(t *testing.T, out Outputs, tag name.Tag, m Metadata, platforms []v1.Platform) map[string][]byte {
	t.Helper()
	idx := checkLayout(t, out.Layout, out.Index, tag)
	binaries := checkIndex(t, idx, m, platforms)

	// The archive is the layout, tarred: the same index digest.
	checkLayout(t, untar(t, out.OCIArchive), out.Index, tag)

	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(out.DockerArchives) != len(platforms) {
		t.Errorf("%d docker archives, want %d", len(out.DockerArchives), len(platforms))
	}
	for _, desc := range manifest.Manifests {
		path := out.DockerArchives[desc.Platform.String()]
		if path == "" {
			t.Errorf("no docker archive for %s", desc.Platform)
			continue
		}
		dm, err := tarball.LoadManifest(func() (rc io.ReadCloser, err error) { return os.Open(path) })
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(dm) != 1 || len(dm[0].RepoTags) != 1 || dm[0].RepoTags[0] != tag.String() {
			t.Errorf("%s: manifest.json %+v, want one image tagged %s", path, dm, tag)
		}
		img, err := tarball.ImageFromPath(path, &tag)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if err := validate.Image(img); err != nil {
			t.Errorf("%s: the image is not valid: %v", path, err)
		}
		want, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		wantCfg, _ := want.ConfigName()
		gotCfg, err := img.ConfigName()
		if err != nil || gotCfg != wantCfg {
			t.Errorf("%s: config %s (%v), want the index's %s", path, gotCfg, err, wantCfg)
		}
	}
	return binaries
}

// checkLayout opens the OCI layout at dir and checks its one entry is the
// index digest, named tag; it returns that index.
func checkLayout(t *testing.T, dir string, digest v1.Hash, tag name.Tag) v1.ImageIndex {
	t.Helper()
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("reading the layout %s: %v", dir, err)
	}
	manifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(manifest.Manifests) != 1 {
		t.Fatalf("%s: index.json has %d entries, want 1 (crane push takes it without --index)", dir, len(manifest.Manifests))
	}
	entry := manifest.Manifests[0]
	if entry.MediaType != types.OCIImageIndex || entry.Digest != digest {
		t.Errorf("%s: entry %s %s, want the index %s", dir, entry.MediaType, entry.Digest, digest)
	}
	for key, want := range map[string]string{
		"io.containerd.image.name":          containerdName(tag),
		"org.opencontainers.image.ref.name": tag.TagStr(),
	} {
		if got := entry.Annotations[key]; got != want {
			t.Errorf("%s: annotation %s = %q, want %q", dir, key, got, want)
		}
	}
	idx, err := top.ImageIndex(entry.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}
