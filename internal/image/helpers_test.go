package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// testMetadata is the metadata every test builds with.
func testMetadata() Metadata {
	return Metadata{
		Version:  "v0.0.0-imagetest",
		Revision: "0123456789abcdef0123456789abcdef01234567",
		Source:   "https://github.com/fluence-sched/fluence",
		Created:  time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

// fakeBinaries writes one small file per platform, standing in for the
// binaries where a test is about assembly, not about fluence.
func fakeBinaries(t *testing.T, content string) []Binary {
	t.Helper()
	var bins []Binary
	for _, p := range DefaultPlatforms {
		path := filepath.Join(t.TempDir(), "fluence-"+p.Architecture)
		if err := os.WriteFile(path, []byte(content+" "+p.Architecture), 0o755); err != nil {
			t.Fatal(err)
		}
		bins = append(bins, Binary{Platform: p, Path: path})
	}
	return bins
}

// checkIndex checks a multi-platform index as `make image` must make it:
// valid by the library's validator (digests, sizes, diff IDs, each child's
// platform), one image per platform, each with the entrypoint, user,
// labels and creation time, and one layer holding the executable binary.
// It returns each platform's binary, by architecture.
func checkIndex(t *testing.T, idx v1.ImageIndex, m Metadata, platforms []v1.Platform) map[string][]byte {
	t.Helper()
	if err := validate.Index(idx); err != nil {
		t.Fatalf("the index is not valid: %v", err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if manifest.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %q, want %q", manifest.MediaType, types.OCIImageIndex)
	}
	if got := manifest.Annotations["org.opencontainers.image.version"]; got != m.Version {
		t.Errorf("index annotation version %q, want %q", got, m.Version)
	}
	if len(manifest.Manifests) != len(platforms) {
		t.Fatalf("index has %d manifests, want %d (%v)", len(manifest.Manifests), len(platforms), platforms)
	}
	binaries := map[string][]byte{}
	for i, desc := range manifest.Manifests {
		want := platforms[i]
		if desc.Platform == nil || !desc.Platform.Equals(want) {
			t.Errorf("manifest %d has platform %v, want %s", i, desc.Platform, want)
			continue
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate.Image(img); err != nil {
			t.Errorf("%s: the image is not valid: %v", want, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		checkConfig(t, want, cfg, m)
		binaries[want.Architecture] = layerBinary(t, want, img)
	}
	return binaries
}

func checkConfig(t *testing.T, p v1.Platform, cfg *v1.ConfigFile, m Metadata) {
	t.Helper()
	if cfg.OS != p.OS || cfg.Architecture != p.Architecture {
		t.Errorf("%s: config says %s/%s", p, cfg.OS, cfg.Architecture)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("%s: user %q, want 65532:65532", p, cfg.Config.User)
	}
	if len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/fluence" {
		t.Errorf("%s: entrypoint %q, want [/fluence]", p, cfg.Config.Entrypoint)
	}
	if !cfg.Created.Time.Equal(m.Created) {
		t.Errorf("%s: created %s, want %s", p, cfg.Created.Time, m.Created)
	}
	for key, want := range map[string]string{
		"org.opencontainers.image.title":    "fluence",
		"org.opencontainers.image.version":  m.Version,
		"org.opencontainers.image.revision": m.Revision,
		"org.opencontainers.image.source":   m.Source,
	} {
		if got := cfg.Config.Labels[key]; got != want {
			t.Errorf("%s: label %s = %q, want %q", p, key, got, want)
		}
	}
}

// layerBinary returns the binary from img's only layer, checking it is the
// layer's only file and executable.
func layerBinary(t *testing.T, p v1.Platform, img v1.Image) []byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%s: %d layers, want 1", p, len(layers))
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var bin []byte
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Name != "fluence" {
			t.Errorf("%s: unexpected file %s in the layer", p, hdr.Name)
			continue
		}
		if hdr.Mode&0o111 != 0o111 || hdr.Uid != 0 || hdr.Gid != 0 {
			t.Errorf("%s: /fluence has mode %o, owner %d:%d; want executable by all, owned by root", p, hdr.Mode, hdr.Uid, hdr.Gid)
		}
		if bin, err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
	if bin == nil {
		t.Fatalf("%s: no /fluence in the layer", p)
	}
	return bin
}

// checkStaticELF checks bin is a Linux executable for arch that needs no
// dynamic loader (the image has none).
func checkStaticELF(t *testing.T, arch string, bin []byte) {
	t.Helper()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Errorf("%s: the binary is not ELF: %v", arch, err)
		return
	}
	if f.Machine != want || f.Type != elf.ET_EXEC {
		t.Errorf("%s: ELF machine %s, type %s; want %s, ET_EXEC", arch, f.Machine, f.Type, want)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s: the binary asks for a dynamic loader; want a static binary", arch)
		}
	}
}

// untar unpacks the tar at path into a new directory.
func untar(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(hdr.Name, "..") {
			t.Fatalf("%s: entry %q leaves the archive", path, hdr.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(target, data, 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: entry %q of type %c", path, hdr.Name, hdr.Typeflag)
		}
	}
}
