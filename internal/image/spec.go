package image

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// What the image runs and as whom; the Dockerfile and the Helm chart
// (runAsUser, runAsGroup) say the same.
const (
	// Package is the main package the image's binary is built from: the
	// scheduler alone, without the CLI's `fluence up`, whose control plane
	// (kube-apiserver, the etcd server) would triple the binary.
	Package = "./cmd/fluence-scheduler"
	// BinaryPath is where the binary lies in the image, and its entrypoint.
	// It keeps the CLI's name: the binary takes the CLI's arguments
	// (`scheduler --config ...`), so commands written for /fluence run.
	BinaryPath = "/fluence"
	// User is distroless's "nonroot": no account of the host, no root.
	User = "65532:65532"
	// defaultPath is the PATH a Dockerfile build gives an image from scratch,
	// kept so both builds have the same configuration.
	defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// DefaultPlatforms are the platforms `make image` builds.
var DefaultPlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// Metadata describes the build; it becomes the image's OCI labels and times.
type Metadata struct {
	Version  string    // fluence's version, as `fluence version` prints it
	Revision string    // the source's commit
	Source   string    // where the source lives
	Created  time.Time // the image's creation time: the commit's, for reproducible digests
}

// labels returns the OCI annotation keys the image carries as labels (and
// its index as annotations). Empty values are left out. The creation time
// is the configuration's own field, not a label, as in a Dockerfile build.
func (m Metadata) labels() map[string]string {
	l := map[string]string{"org.opencontainers.image.title": "fluence"}
	for key, value := range map[string]string{
		"org.opencontainers.image.version":  m.Version,
		"org.opencontainers.image.revision": m.Revision,
		"org.opencontainers.image.source":   m.Source,
	} {
		if value != "" {
			l[key] = value
		}
	}
	return l
}

// ParsePlatform reads "os/arch" (as in linux/arm64); fluence's image is
// built for Linux only, from a static binary.
func ParsePlatform(s string) (v1.Platform, error) {
	p, err := v1.ParsePlatform(s)
	if err != nil {
		return v1.Platform{}, fmt.Errorf("platform %q: %w", s, err)
	}
	if p.OS != "linux" || p.Architecture == "" || p.Variant != "" {
		return v1.Platform{}, fmt.Errorf("platform %q: want linux/ARCH (for instance linux/amd64)", s)
	}
	return *p, nil
}

// ParseCreated reads a creation time given as Unix seconds (as
// SOURCE_DATE_EPOCH and `git log --format=%ct` give it) or RFC 3339.
func ParseCreated(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if secs, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(secs, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("creation time %q: want Unix seconds or RFC 3339", s)
	}
	return t.UTC(), nil
}
