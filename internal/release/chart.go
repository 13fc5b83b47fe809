package release

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// ChartImage is the image a packaged chart runs by default.
type ChartImage struct {
	Repository string // ghcr.io/fluence-sched/fluence
	Tag        string // 0.1.0
	Digest     string // sha256:...: the pod names the image by it
}

// PackageChart packages the chart in src as Helm does (`helm package`),
// into dir as NAME-VERSION.tgz, the name `helm push` to an OCI registry
// takes, and returns its path. The chart's version and appVersion become
// version, and its values.yaml names img: the chart installs the image it
// was released with unless told otherwise. Every entry is dated mtime, so
// the same chart gives the same bytes.
//
// Helm's own library loads the chart (Chart.yaml's checks, .helmignore),
// checks the new values against the chart's schema and writes the archive;
// only the entries' times are then set, since chartutil.Save dates them by
// the clock.
func PackageChart(src, dir, version string, img ChartImage, mtime time.Time) (string, error) {
	c, err := loader.LoadDir(src)
	if err != nil {
		return "", fmt.Errorf("loading the chart %s: %w", src, err)
	}
	c.Metadata.Version, c.Metadata.AppVersion = version, version
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("the chart %s at version %s: %w", src, version, err)
	}
	if err := setChartImage(c, img); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, ".chart-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	saved, err := chartutil.Save(c, tmp)
	if err != nil {
		return "", fmt.Errorf("packaging the chart: %w", err)
	}
	out := filepath.Join(dir, filepath.Base(saved))
	if err := restamp(saved, out, mtime); err != nil {
		return "", fmt.Errorf("packaging the chart: %w", err)
	}
	return out, nil
}

// setChartImage rewrites the image block of the chart's values.yaml in
// place, keeping every comment, and checks the result against the chart's
// schema and that it reads back as img.
func setChartImage(c *chart.Chart, img ChartImage) error {
	var values *chart.File
	for _, f := range c.Raw {
		if f.Name == chartutil.ValuesfileName {
			values = f
		}
	}
	if values == nil {
		return errors.New("the chart has no values.yaml")
	}
	data, err := setImageBlock(values.Data, map[string]string{
		"repository": img.Repository,
		"tag":        img.Tag,
		"digest":     img.Digest,
	})
	if err != nil {
		return err
	}
	vals, err := chartutil.ReadValues(data)
	if err != nil {
		return fmt.Errorf("values.yaml with the release's image: %w", err)
	}
	if err := chartutil.ValidateAgainstSchema(c, vals); err != nil {
		return fmt.Errorf("values.yaml with the release's image: %w", err)
	}
	got, _ := vals.Table("image")
	for k, want := range map[string]string{"repository": img.Repository, "tag": img.Tag, "digest": img.Digest} {
		if v, _ := got[k].(string); v != want {
			return fmt.Errorf("values.yaml with the release's image reads image.%s %q, want %q", k, v, want)
		}
	}
	values.Data, c.Values = data, vals
	return nil
}

var topLevelKey = regexp.MustCompile(`^[A-Za-z]`)

// setImageBlock sets the keys, each of which must be in the top-level
// image block of values (two spaces in), replacing the line's value and
// comment.
func setImageBlock(values []byte, set map[string]string) ([]byte, error) {
	lines := strings.Split(string(values), "\n")
	in, done := false, map[string]bool{}
	for i, l := range lines {
		if topLevelKey.MatchString(l) {
			in = strings.HasPrefix(l, "image:")
			continue
		}
		if !in {
			continue
		}
		for k, v := range set {
			if strings.HasPrefix(l, "  "+k+":") {
				lines[i] = "  " + k + ": " + strconv.Quote(v) + " # set by make release"
				done[k] = true
			}
		}
	}
	for k := range set {
		if !done[k] {
			return nil, fmt.Errorf("values.yaml has no image.%s line to set", k)
		}
	}
	return []byte(strings.Join(lines, "\n")), nil
}

// restamp copies the gzipped tar at src to dst with every entry dated
// mtime and the gzip header's time left unset.
func restamp(src, dst string, mtime time.Time) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	zw := gzip.NewWriter(out)
	zw.Header.Extra, zw.Header.Comment = zr.Header.Extra, zr.Header.Comment
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		h.ModTime, h.AccessTime, h.ChangeTime = mtime.UTC(), time.Time{}, time.Time{}
		h.Format = tar.FormatUnknown
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}
