// Package release builds a fluence release into one directory (`make
// release`, cmd/fluence-release): the fluence and kubectl-fluence binaries
// for each platform, the fluence-scheduler binary for each linux platform
// and the multi-arch image made from those (internal/image), the Helm chart packaged with that image's digest as its
// default, a CycloneDX SBOM per binary and SHA256SUMS over all of it.
//
// One file a step: version.go (the VERSION file), binaries.go, chart.go,
// sbom.go and modgraph.go, checksums.go, and release.go, which runs them in
// order. Every step is reproducible: the binaries are built with -trimpath
// and without cgo, and every time written (tar entries, the image's
// creation, the SBOM's timestamp) is the one given, never the clock's, so
// the same commit built twice gives the same bytes.
package release
