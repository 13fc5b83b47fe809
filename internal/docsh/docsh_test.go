package docsh

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCommands(t *testing.T) {
	page := "# Page\n\n```sh\nhelm install a  # first\necho no\n```\n\nhelm outside a block\n\n```yaml\nhelm: not sh\n```\n\n```sh\nhelm upgrade b\n```\n"
	path := filepath.Join(t.TempDir(), "page.md")
	if err := os.WriteFile(path, []byte(page), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Commands(path, "helm ")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"helm install a  # first", "helm upgrade b"}; !slices.Equal(got, want) {
		t.Errorf("Commands = %q, want %q", got, want)
	}
	if _, err := Commands(filepath.Join(t.TempDir(), "missing.md"), "helm "); err == nil {
		t.Error("a missing page gave no error")
	}
}
