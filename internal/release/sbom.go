package release

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// SBOMName is the file name of a binary's SBOM: its own name with
// .cdx.json.
func SBOMName(binary string) string { return binary + ".cdx.json" }

// SBOM describes the binary at path as a CycloneDX (1.6, JSON) bill of
// materials: the binary itself (its SHA-256, version, platform and build
// settings), the Go standard library it was built with and every module
// linked into it, as its build information records them (the exact truth
// of what went in: a module the graph requires but no linked package uses
// is not listed), with the requirements between them taken from graph.
// name and version name the binary; created is the SBOM's timestamp.
func SBOM(path, name, version string, graph ModGraph, created time.Time) ([]byte, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the build information of %s: %w", path, err)
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return nil, err
	}
	main := cdx.Component{
		BOMRef:     purl(info.Main.Path, "v"+version),
		Type:       cdx.ComponentTypeApplication,
		Name:       name,
		Version:    version,
		PackageURL: purl(info.Main.Path, "v"+version),
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: sum}},
		Properties: buildProperties(info),
	}
	std := cdx.Component{
		BOMRef:      purl("std", info.GoVersion),
		Type:        cdx.ComponentTypeLibrary,
		Name:        "std",
		Version:     info.GoVersion,
		PackageURL:  purl("std", info.GoVersion),
		Description: "the Go standard library and runtime",
	}
	components := []cdx.Component{std}
	// The modules in the binary, by path, as the graph names them (the
	// required version, before any replacement).
	inBinary := map[string]string{info.Main.Path: main.BOMRef}
	graphVersion := map[string]string{info.Main.Path: ""}
	for _, d := range info.Deps {
		c := moduleComponent(d)
		components = append(components, c)
		inBinary[d.Path] = c.BOMRef
		graphVersion[d.Path] = d.Version
	}
	var deps []cdx.Dependency
	for _, path := range slices.Sorted(maps.Keys(inBinary)) {
		ref := inBinary[path]
		node := path
		if v := graphVersion[path]; v != "" {
			node += "@" + v
		}
		var on []string
		for _, to := range graph[node] {
			p, _ := splitModule(to)
			if r, ok := inBinary[p]; ok && !slices.Contains(on, r) {
				on = append(on, r)
			}
		}
		if path == info.Main.Path {
			on = append(on, std.BOMRef)
		}
		slices.Sort(on)
		deps = append(deps, cdx.Dependency{Ref: ref, Dependencies: &on})
	}

	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{
		Timestamp: created.UTC().Format(time.RFC3339),
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Name: "fluence-release", Version: version,
			Description: "cmd/fluence-release of github.com/fluence-sched/fluence",
		}}},
		Component: &main,
	}
	bom.Components = &components
	bom.Dependencies = &deps
	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	if err := enc.EncodeVersion(bom, cdx.SpecVersion1_6); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// moduleComponent is one linked module. A replaced module is listed as
// its replacement, which is what was compiled, with what it replaces as a
// property.
func moduleComponent(d *debug.Module) cdx.Component {
	m := d
	var props []cdx.Property
	if d.Replace != nil {
		m = d.Replace
		props = append(props, cdx.Property{Name: "fluence:go:module:replaces", Value: d.Path + "@" + d.Version})
	}
	if m.Sum != "" {
		props = append(props, cdx.Property{Name: "fluence:go:module:sum", Value: m.Sum})
	}
	c := cdx.Component{
		BOMRef:     purl(m.Path, m.Version),
		Type:       cdx.ComponentTypeLibrary,
		Name:       m.Path,
		Version:    m.Version,
		PackageURL: purl(m.Path, m.Version),
	}
	if len(props) > 0 {
		c.Properties = &props
	}
	return c
}

// buildProperties are the binary's build settings (GOOS, GOARCH,
// -ldflags, vcs.revision...) and its Go version.
func buildProperties(info *buildinfo.BuildInfo) *[]cdx.Property {
	props := []cdx.Property{{Name: "fluence:go:version", Value: info.GoVersion}}
	for _, s := range info.Settings {
		props = append(props, cdx.Property{Name: "fluence:go:build:" + s.Key, Value: s.Value})
	}
	return &props
}

// purl is a Go module's package URL: pkg:golang/PATH@VERSION. The path
// stays as it is (its slashes part the purl's namespace and name); a +
// in the version (+incompatible) is escaped.
func purl(path, version string) string {
	if version == "" {
		return "pkg:golang/" + path
	}
	return "pkg:golang/" + path + "@" + strings.ReplaceAll(version, "+", "%2B")
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
