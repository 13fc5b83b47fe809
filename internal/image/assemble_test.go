package image

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Assembly and writing on stand-in binaries: everything checkOutputs reads
// back holds, and each binary comes back byte for byte.
func TestAssembleAndWrite(t *testing.T) {
	m := testMetadata()
	bins := fakeBinaries(t, "not fluence")
	idx, err := Assemble(bins, m)
	if err != nil {
		t.Fatal(err)
	}
	tag := testTag(t, m)
	out, err := Write(t.TempDir(), idx, tag, m.Created)
	if err != nil {
		t.Fatal(err)
	}
	got := checkOutputs(t, out, tag, m, DefaultPlatforms)
	for _, b := range bins {
		want, err := os.ReadFile(b.Path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[b.Platform.Architecture], want) {
			t.Errorf("%s: the layer's binary differs from %s", b.Platform, b.Path)
		}
	}
}

// The same binaries and metadata give the same digest; the digest moves
// with the binary, the creation time and the version, and with nothing else.
func TestAssembleReproducible(t *testing.T) {
	m := testMetadata()
	bins := fakeBinaries(t, "fluence")
	digest := func(bins []Binary, m Metadata) v1.Hash {
		t.Helper()
		idx, err := Assemble(bins, m)
		if err != nil {
			t.Fatal(err)
		}
		h, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	base := digest(bins, m)
	if again := digest(fakeBinaries(t, "fluence"), m); again != base {
		t.Errorf("the same binaries and metadata gave %s, then %s", base, again)
	}
	later := m
	later.Created = m.Created.Add(time.Second)
	newer := m
	newer.Version = "v0.0.1"
	for name, h := range map[string]v1.Hash{
		"another binary":        digest(fakeBinaries(t, "fluence 2"), m),
		"another creation time": digest(bins, later),
		"another version":       digest(bins, newer),
	} {
		if h == base {
			t.Errorf("%s gave the same digest %s", name, h)
		}
	}
}

// Writing again into the same directory replaces the earlier image (the
// layout would otherwise list both) and gives the same archive bytes.
func TestWriteReplaces(t *testing.T) {
	m := testMetadata()
	tag := testTag(t, m)
	dir := t.TempDir()
	var archives [][]byte
	for _, content := range []string{"first", "second", "second"} {
		idx, err := Assemble(fakeBinaries(t, content), m)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Write(dir, idx, tag, m.Created)
		if err != nil {
			t.Fatal(err)
		}
		checkLayout(t, out.Layout, out.Index, tag)
		data, err := os.ReadFile(out.OCIArchive)
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, data)
	}
	if !bytes.Equal(archives[1], archives[2]) {
		t.Error("writing the same image twice gave different OCI archives")
	}
	if bytes.Equal(archives[0], archives[1]) {
		t.Error("writing another image gave the same OCI archive")
	}
}

func TestAssembleRefuses(t *testing.T) {
	good := fakeBinaries(t, "fluence")
	emptyFile := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(emptyFile, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	arm := v1.Platform{OS: "linux", Architecture: "arm64"}
	for _, tc := range []struct {
		name string
		bins []Binary
		want string
	}{
		{"no binaries", nil, "no binaries"},
		{"a platform twice", []Binary{good[0], good[0]}, "platform linux/amd64 given twice"},
		{"a missing binary", []Binary{good[0], {Platform: arm, Path: "/nonexistent/fluence"}}, "for linux/arm64: the image's binary: open /nonexistent/fluence"},
		{"an empty binary", []Binary{{Platform: arm, Path: emptyFile}}, "for linux/arm64: the image's binary " + emptyFile + " is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Assemble(tc.bins, testMetadata())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// containerd and the kubelet name Docker Hub images docker.io/...; the
// library resolves them to index.docker.io.
func TestContainerdName(t *testing.T) {
	for _, tc := range []struct{ ref, want string }{
		{"ghcr.io/fluence-sched/fluence:0.1.0", "ghcr.io/fluence-sched/fluence:0.1.0"},
		{"localhost:5000/fluence:dev", "localhost:5000/fluence:dev"},
		{"fluence:dev", "docker.io/library/fluence:dev"},
		{"docker.io/someone/fluence:1", "docker.io/someone/fluence:1"},
	} {
		tag, err := name.NewTag(tc.ref)
		if err != nil {
			t.Fatal(err)
		}
		if got := containerdName(tag); got != tc.want {
			t.Errorf("containerdName(%s) = %s, want %s", tc.ref, got, tc.want)
		}
	}
}

func testTag(t *testing.T, m Metadata) name.Tag {
	t.Helper()
	tag, err := name.NewTag("registry.example.com/fluence:" + m.Version)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}
