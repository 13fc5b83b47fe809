package image

import (
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	cranecmd "github.com/google/go-containerregistry/cmd/crane/cmd"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/fluence-sched/fluence/internal/docsh"
)

// docShellLines returns the lines of doc's sh code blocks that start with
// prefix, comments cut.
func docShellLines(t *testing.T, doc, prefix string) []string {
	t.Helper()
	lines, err := docsh.Commands(doc, prefix)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range lines {
		if c := strings.Index(line, "#"); c >= 0 {
			line = line[:c]
		}
		lines[i] = strings.TrimSpace(line)
	}
	return lines
}

// Each `crane push` of docs/install.md, as written but for the registry (an
// in-memory one), run by crane's own push command on what Write wrote: the
// layout goes up as the multi-platform index, with the digest Write
// reported, and a docker-archive as that platform's image.
func TestCranePushDocs(t *testing.T) {
	cmds := docShellLines(t, "../../docs/install.md", "crane push ")
	if len(cmds) == 0 {
		t.Fatal("docs/install.md shows no crane push")
	}
	m := testMetadata()
	idx, err := Assemble(fakeBinaries(t, "fluence"), m)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := Write(dir, idx, testTag(t, m), m.Created)
	if err != nil {
		t.Fatal(err)
	}
	amd64, err := idx.Image(mustDigestFor(t, idx, "amd64"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	// Beside the page's push of the layout, one of a docker-archive.
	cmds = append(cmds, "crane push _output/image/"+DockerArchive(DefaultPlatforms[0])+" registry.example.com/fluence:amd64")
	for _, line := range cmds {
		fields := strings.Fields(line)
		if len(fields) != 4 || !strings.HasPrefix(fields[2], "_output/image/") {
			t.Fatalf("%q: want crane push _output/image/PATH IMAGE", line)
		}
		src := strings.Replace(fields[2], "_output/image", dir, 1)
		ref, err := name.NewTag(fields[3])
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		dst := host + "/" + ref.RepositoryStr() + ":" + ref.TagStr()
		var stdout bytes.Buffer
		push := cranecmd.NewCmdPush(&[]crane.Option{crane.Insecure})
		push.SetArgs([]string{src, dst})
		push.SetOut(&stdout)
		if err := push.Execute(); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		pushed, err := name.NewTag(dst, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		desc, err := remote.Get(pushed)
		if err != nil {
			t.Fatalf("%q: the registry has no %s: %v", line, dst, err)
		}
		if strings.HasSuffix(src, LayoutDir) {
			if desc.Digest != out.Index || !strings.Contains(stdout.String(), out.Index.String()) {
				t.Errorf("%q pushed %s (crane said %q), want the index %s", line, desc.Digest, stdout.String(), out.Index)
			}
			got, err := desc.ImageIndex()
			if err != nil {
				t.Fatal(err)
			}
			checkIndex(t, got, m, DefaultPlatforms)
			continue
		}
		img, err := desc.Image()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := img.ConfigName()
		want, _ := amd64.ConfigName()
		if got != want {
			t.Errorf("%q pushed config %s, want the amd64 image's %s", line, got, want)
		}
	}
}

// mustDigestFor returns the digest of idx's image for arch.
func mustDigestFor(t *testing.T, idx v1.ImageIndex, arch string) v1.Hash {
	t.Helper()
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, desc := range manifest.Manifests {
		if desc.Platform != nil && desc.Platform.Architecture == arch {
			return desc.Digest
		}
	}
	t.Fatalf("the index has no image for %s", arch)
	return v1.Hash{}
}
