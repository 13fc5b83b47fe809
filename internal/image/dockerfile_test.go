package image

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The Dockerfile builds the same image for those who have Docker: the
// same path, entrypoint, user, base and labels as Assemble's. (No test
// builds it: the test machines have no container engine.)
func TestDockerfileMatches(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	final := df[strings.LastIndex(df, "\nFROM "):]
	for _, want := range []string{
		"\nFROM scratch\n",
		"/out/fluence " + BinaryPath + "\n",
		"\nUSER " + User + "\n",
		"\nENTRYPOINT [\"" + BinaryPath + "\"]\n",
	} {
		if !strings.Contains(final, want) {
			t.Errorf("the Dockerfile's final stage lacks %q", strings.TrimSpace(want))
		}
	}
	labels := map[string]bool{}
	for _, match := range regexp.MustCompile(`(org\.opencontainers\.image\.[a-z]+)=`).FindAllStringSubmatch(final, -1) {
		labels[match[1]] = true
	}
	m := testMetadata()
	for key := range m.labels() {
		if !labels[key] {
			t.Errorf("the Dockerfile sets no label %s", key)
		}
	}
	if len(labels) != len(m.labels()) {
		t.Errorf("the Dockerfile sets labels %v, the image %v", labels, m.labels())
	}
	if !strings.Contains(df, `-trimpath -ldflags "`+ldflags("${VERSION}", "${KUBE}", "${MAJOR}", "${MINOR}")+`"`) {
		t.Error("the Dockerfile compiles fluence with other flags than Compile's")
	}
	if !strings.Contains(df, " -o /out/fluence "+Package+"\n") {
		t.Errorf("the Dockerfile does not build %s, the image's package", Package)
	}
}

func TestParseRelease(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want release
		ok   bool
	}{
		{"v1.36.3", release{"v1.36.3", "1", "36"}, true},
		{"v1.37.0-alpha.1", release{"v1.37.0-alpha.1", "1", "37"}, true},
		{"1.36.3", release{}, false},
		{"v1.36", release{}, false},
		{"", release{}, false},
		{"v1..3", release{}, false},
		{"v1.36.3 -X x=y", release{}, false},
	} {
		got, err := parseRelease(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseRelease(%q) = %+v, %v; want %+v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
