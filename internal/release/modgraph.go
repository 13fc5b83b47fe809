package release

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// ModGraph is the module graph (`go mod graph`): for each module, by
// path@version (the main module by its path alone), the modules it
// requires, by path@version.
type ModGraph map[string][]string

// ReadModGraph runs `go mod graph` in moduleDir.
func ReadModGraph(ctx context.Context, moduleDir string) (ModGraph, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "graph")
	cmd.Dir = moduleDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go mod graph: %w\n%s", err, stderr.Bytes())
	}
	return ParseModGraph(out)
}

// ParseModGraph reads `go mod graph`'s output: one edge a line.
func ParseModGraph(out []byte) (ModGraph, error) {
	g := ModGraph{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		from, to, ok := strings.Cut(line, " ")
		if !ok || strings.Contains(to, " ") {
			return nil, fmt.Errorf("go mod graph: unexpected line %q", line)
		}
		g[from] = append(g[from], to)
	}
	return g, sc.Err()
}

// splitModule splits path@version; version is empty for the main module.
func splitModule(s string) (path, version string) {
	path, version, _ = strings.Cut(s, "@")
	return path, version
}
