package release

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ChecksumsFile lists the SHA-256 of every other file of a release, in
// the format `sha256sum --check` reads.
const ChecksumsFile = "SHA256SUMS"

// WriteChecksums writes dir/SHA256SUMS over every regular file under dir
// (the OCI layout's files among them), by path relative to dir, sorted.
func WriteChecksums(dir string) (string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && p != filepath.Join(dir, ChecksumsFile) {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	slices.Sort(files)
	var b strings.Builder
	for _, f := range files {
		sum, err := fileSHA256(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, f)
	}
	path := filepath.Join(dir, ChecksumsFile)
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}
