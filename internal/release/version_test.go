package release

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// VERSION is the one source of the version: the chart's version and
// appVersion and the CHANGELOG's top entry say the same.
func TestVersionsAgree(t *testing.T) {
	v, err := ReadVersion("../..")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../" + ChartDir + "/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(raw, &chart); err != nil {
		t.Fatal(err)
	}
	if chart.Version != v || chart.AppVersion != v {
		t.Errorf("Chart.yaml has version %q, appVersion %q; VERSION says %q", chart.Version, chart.AppVersion, v)
	}
	log, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	if got := changelogTop(string(log)); got != v {
		t.Errorf("the CHANGELOG's top entry is for version %q; VERSION says %q", got, v)
	}
}

var semverInHeading = regexp.MustCompile(`\b\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?\b`)

// changelogTop is the version the first "## " heading names: "## 0.1.0",
// "## [0.1.0] - 2026-11-27" or "## Unreleased (0.1.0)".
func changelogTop(log string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "## ") {
			return semverInHeading.FindString(l)
		}
	}
	return ""
}

func TestCheckVersion(t *testing.T) {
	for _, v := range []string{"0.1.0", "1.2.3-rc.1"} {
		if err := CheckVersion(v); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	for _, v := range []string{"", "v0.1.0", "0.1", "a522d8e-dirty", "0.1.0 x"} {
		if CheckVersion(v) == nil {
			t.Errorf("%q accepted", v)
		}
	}
	if got := changelogTop("# Changelog\n\n## Unreleased (0.2.0)\n\n## 0.1.0\n"); got != "0.2.0" {
		t.Errorf("changelogTop: %q", got)
	}
}
