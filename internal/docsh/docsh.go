// Package docsh reads the shell commands a Markdown page shows, so that
// tests can run the commands of the docs exactly as a reader would copy
// them.
package docsh

import (
	"os"
	"strings"
)

// Commands returns, in order, the lines of the file's ```sh code blocks
// that start with prefix, as written.
func Commands(path, prefix string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	inBlock := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "```sh"):
			inBlock = true
		case strings.HasPrefix(line, "```"):
			inBlock = false
		case inBlock && strings.HasPrefix(line, prefix):
			out = append(out, line)
		}
	}
	return out, nil
}
