package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
)

var testDigest = "sha256:" + strings.Repeat("ab", 32)

// The packaged chart is the chart at the release's version with the
// release's image by default, and packaging it twice gives the same bytes.
func TestPackageChart(t *testing.T) {
	mtime := time.Unix(1700000000, 0)
	img := ChartImage{Repository: "registry.example.com/fluence", Tag: "9.8.7", Digest: testDigest}
	var first []byte
	for i := range 2 {
		dir := t.TempDir()
		path, err := PackageChart("../../"+ChartDir, dir, "9.8.7", img, mtime)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(path) != "fluence-9.8.7.tgz" {
			t.Errorf("packaged as %s, want fluence-9.8.7.tgz (helm push takes NAME-VERSION.tgz)", filepath.Base(path))
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Errorf("the directory holds %d entries, want the chart alone", len(entries))
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = data
			checkChartArchive(t, data, mtime)
			checkPackagedChart(t, path, img)
		} else if !bytes.Equal(first, data) {
			t.Error("packaging the chart twice gave different bytes")
		}
	}
}

func checkChartArchive(t *testing.T, data []byte, mtime time.Time) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		if !strings.HasPrefix(h.Name, "fluence/") {
			t.Errorf("entry %s is not under fluence/", h.Name)
		}
		if !h.ModTime.Equal(mtime) {
			t.Errorf("entry %s dated %s, want %s", h.Name, h.ModTime, mtime)
		}
	}
	if n < 5 {
		t.Errorf("the archive has %d entries", n)
	}
}

func checkPackagedChart(t *testing.T, path string, img ChartImage) {
	t.Helper()
	c, err := loader.Load(path)
	if err != nil {
		t.Fatalf("helm's loader refuses the packaged chart: %v", err)
	}
	if c.Metadata.Version != "9.8.7" || c.Metadata.AppVersion != "9.8.7" {
		t.Errorf("packaged version %q, appVersion %q; want 9.8.7", c.Metadata.Version, c.Metadata.AppVersion)
	}
	image, _ := c.Values["image"].(map[string]any)
	for k, want := range map[string]string{"repository": img.Repository, "tag": img.Tag, "digest": img.Digest, "pullPolicy": "IfNotPresent"} {
		if image[k] != want {
			t.Errorf("packaged values image.%s = %v, want %q", k, image[k], want)
		}
	}
	src, err := loader.Load("../../" + ChartDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Templates) != len(src.Templates) || len(c.Files) != len(src.Files) || c.Schema == nil {
		t.Errorf("packaged: %d templates, %d files, schema %v; the source has %d, %d", len(c.Templates), len(c.Files), c.Schema != nil, len(src.Templates), len(src.Files))
	}
	for _, f := range c.Raw {
		if f.Name == "values.yaml" {
			// Comments are kept: the values stay documented.
			if !bytes.Contains(f.Data, []byte("# More than one replica needs leader election")) {
				t.Error("the packaged values.yaml lost its comments")
			}
		}
	}
}

func TestPackageChartRefusesBadImage(t *testing.T) {
	_, err := PackageChart("../../"+ChartDir, t.TempDir(), "0.1.0", ChartImage{Repository: "r/fluence", Tag: "0.1.0", Digest: "latest"}, time.Unix(0, 0))
	if err == nil || !strings.Contains(err.Error(), "digest") {
		t.Errorf("a digest the schema refuses: %v", err)
	}
	if _, err := PackageChart("../../"+ChartDir, t.TempDir(), "not-semver", ChartImage{Repository: "r/fluence", Tag: "x", Digest: testDigest}, time.Unix(0, 0)); err == nil {
		t.Error("a chart version that is not semver was packaged")
	}
}

func TestSetImageBlock(t *testing.T) {
	in := "# top\nimage:\n  repository: a # c\n  tag: \"\"\nother:\n  tag: keep\n"
	out, err := setImageBlock([]byte(in), map[string]string{"repository": "r", "tag": "t"})
	if err != nil {
		t.Fatal(err)
	}
	want := "# top\nimage:\n  repository: \"r\" # set by make release\n  tag: \"t\" # set by make release\nother:\n  tag: keep\n"
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if _, err := setImageBlock([]byte(in), map[string]string{"digest": "d"}); err == nil {
		t.Error("a key missing from the image block was not reported")
	}
}
