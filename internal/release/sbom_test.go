package release

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// The SBOM of a stub binary built from testdata/sbomstub (its build
// information lists what was linked): its hash, the modules in it, the
// graph's edges between them, and the same bytes twice.
func TestSBOM(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "sbomstub")
	build := exec.Command("go", "build", "-trimpath", "-o", exe, "./testdata/sbomstub")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const cyclonedx = "github.com/CycloneDX/cyclonedx-go@v0.12.0"
	graph, err := ParseModGraph([]byte("github.com/fluence-sched/fluence " + cyclonedx + "\n" +
		"github.com/fluence-sched/fluence github.com/blang/semver/v4@v4.0.0\n" +
		cyclonedx + " github.com/blang/semver/v4@v4.0.0\n" +
		cyclonedx + " example.com/not-linked@v1.0.0\n"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := SBOM(exe, "release.test", "0.1.0", graph, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := SBOM(exe, "release.test", "0.1.0", graph, time.Unix(0, 0))
	if !bytes.Equal(doc, again) {
		t.Error("two SBOMs of one binary differ")
	}
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(doc), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatal(err)
	}
	if bom.SpecVersion != cdx.SpecVersion1_6 || bom.Metadata.Timestamp != "1970-01-01T00:00:00Z" {
		t.Errorf("spec %v, timestamp %q", bom.SpecVersion, bom.Metadata.Timestamp)
	}
	sum, _ := fileSHA256(exe)
	if m := bom.Metadata.Component; m.Name != "release.test" || m.Version != "0.1.0" || (*m.Hashes)[0].Value != sum {
		t.Errorf("the binary's component: %+v, want its SHA-256 %s", m, sum)
	}
	refs := map[string]bool{}
	for _, c := range *bom.Components {
		refs[c.BOMRef] = true
	}
	for _, want := range []string{"pkg:golang/github.com/CycloneDX/cyclonedx-go@v0.12.0", "pkg:golang/github.com/blang/semver/v4@v4.0.0", "pkg:golang/std@" + runtime.Version()} {
		if !refs[want] {
			t.Errorf("no component %s", want)
		}
	}
	for ref := range refs {
		if strings.Contains(ref, "not-linked") {
			t.Errorf("%s is listed but not linked", ref)
		}
	}
	for _, d := range *bom.Dependencies {
		if d.Ref == "pkg:golang/github.com/CycloneDX/cyclonedx-go@v0.12.0" && !slices.Equal(*d.Dependencies, []string{"pkg:golang/github.com/blang/semver/v4@v4.0.0"}) {
			t.Errorf("cyclonedx-go depends on %v, want semver alone (the graph's other module is not linked)", *d.Dependencies)
		}
	}
}
