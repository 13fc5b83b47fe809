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

func TestShell(t *testing.T) {
	page := "# Page\n\n" +
		"```sh\n" +
		"# a comment\n" +
		"kubectl get nodes   # trailing\n" +
		"\n" +
		"helm install a deploy/x \\\n" +
		"  --set b=c\n" +
		"go run ./cmd/x <<'EOF'\n" +
		"one # not a comment of the command\n" +
		"EOF\n" +
		"kubectl get pod p -o jsonpath='{.a#b}'\n" +
		"```\n\n" +
		"```console\n" +
		"$ kubectl fluence groups -A\n" +
		"NAME   STATE\n" +
		"a      placed\n" +
		"\n" +
		"$ kubectl fluence explain a\n" +
		"State:  placed\n" +
		"```\n\n" +
		"```\n" +
		"output of nothing\n" +
		"```\n\n" +
		"```yaml\n" +
		"$ not: a command\n" +
		"```\n"
	path := filepath.Join(t.TempDir(), "page.md")
	if err := os.WriteFile(path, []byte(page), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Shell(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Command{
		{Line: 5, Text: "kubectl get nodes   # trailing"},
		{Line: 7, Text: "helm install a deploy/x \\\n  --set b=c"},
		{Line: 9, Text: "go run ./cmd/x <<'EOF'\none # not a comment of the command\nEOF"},
		{Line: 12, Text: "kubectl get pod p -o jsonpath='{.a#b}'"},
		{Line: 16, Text: "kubectl fluence groups -A", Console: true, Output: "NAME   STATE\na      placed\n"},
		{Line: 20, Text: "kubectl fluence explain a", Console: true, Output: "State:  placed\n"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Shell =\n%+v\nwant\n%+v", got, want)
	}
	keys := []string{"kubectl get nodes", "helm install a deploy/x --set b=c", "go run ./cmd/x <<'EOF'\none # not a comment of the command\nEOF", "kubectl get pod p -o jsonpath='{.a#b}'"}
	for i, k := range keys {
		if g := got[i].Key(); g != k {
			t.Errorf("Key of %q = %q, want %q", got[i].Text, g, k)
		}
	}
}
