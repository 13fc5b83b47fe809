package schedserver

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

// A 1.37 scheduler emulates an API server one release older than itself,
// runs as itself against its own release or a newer one, and refuses one
// older still with the reason.
func TestEmulationFor(t *testing.T) {
	binary := version.MustParseGeneric("1.37")
	for _, tc := range []struct {
		server, want, err string
	}{
		{server: "v1.36.3", want: "1.36"},
		{server: "v1.37.2"},
		{server: "v1.38.0"},
		{server: "v1.35.4", err: "Kubernetes 1.35, more than one minor release older than this scheduler (Kubernetes 1.37)"},
		{server: "v2.0.0"},
	} {
		got, err := emulationFor(version.MustParseGeneric(tc.server), binary)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("server %s: %q, %v; want %q, error containing %q", tc.server, got, err, tc.want, tc.err)
		}
	}
}
