package experiments

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The embedded copies must stay identical to the shared workloads they
// were taken from.
func TestEmbeddedCopiesMatchShared(t *testing.T) {
	for short, file := range Names {
		got, err := Read(short)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "shared", "workloads", file))
		if err != nil {
			t.Fatalf("shared workload: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from ../shared/workloads/%s: copy it again", file, file)
		}
	}
	if _, err := Read("run99"); err == nil {
		t.Error("unknown workload accepted")
	}
}
