package release

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteChecksums(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"b": "hello\n", "a/x": "", ChecksumsFile: "old"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path, err := WriteChecksums(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	// sha256sum's own output for these files.
	want := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  a/x\n" +
		"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  b\n"
	if string(got) != want {
		t.Errorf("SHA256SUMS:\n%s\nwant\n%s", got, want)
	}
}
