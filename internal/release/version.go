package release

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/blang/semver/v4"
)

// VersionFile is the file at the repository's root holding the version of
// the next release: the one source the chart's version, its appVersion and
// the CHANGELOG's top entry are checked against.
const VersionFile = "VERSION"

// ReadVersion returns the version in moduleDir's VERSION file.
func ReadVersion(moduleDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(moduleDir, VersionFile))
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(b))
	if err := CheckVersion(v); err != nil {
		return "", fmt.Errorf("%s: %w", VersionFile, err)
	}
	return v, nil
}

// CheckVersion accepts a semantic version without a leading v (0.1.0,
// 0.2.0-rc.1): what Helm needs of a chart's version, and a word that can
// go into -ldflags and file names.
func CheckVersion(v string) error {
	if _, err := semver.Parse(v); err != nil {
		return fmt.Errorf("version %q is not a semantic version such as 0.1.0: %w", v, err)
	}
	return nil
}
