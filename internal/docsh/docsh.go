// Package docsh reads the shell commands a Markdown page shows, so that
// tests can run the commands of the docs exactly as a reader would copy
// them.
package docsh

import (
	"os"
	"regexp"
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

// A Command is one command a page shows in a shell block.
type Command struct {
	Line int // the line of the page it starts on, from 1
	// Text is the command as written: with the lines a trailing backslash
	// or a here-document carries it onto, joined by newlines; a console
	// block's "$ " prompt cut.
	Text string
	// Console: the command is a "$ " line of a ```console block (or of a
	// block without a language), and Output is what the block shows it
	// printing: the lines up to the next "$ " line or the block's end,
	// trailing blank lines cut.
	Console bool
	Output  string
}

// Key is the command as a shell reads it, to compare commands across
// pages: comments cut, continued lines joined and runs of blanks made one;
// a here-document's lines kept as they are.
func (c Command) Key() string {
	var out []string
	cur := ""
	lines := strings.Split(c.Text, "\n")
	for i, l := range lines {
		l = cutComment(l)
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		out = append(out, strings.Join(strings.Fields(cur+l), " "))
		cur = ""
		if hereDoc.MatchString(l) {
			out = append(out, lines[i+1:]...)
			break
		}
	}
	return strings.Join(out, "\n")
}

// cutComment cuts a shell comment off a line: a # that starts a word,
// outside quotes.
func cutComment(line string) string {
	var quote byte
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\':
			i++
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

// hereDoc matches a here-document's operator and delimiter.
var hereDoc = regexp.MustCompile(`<<(-?)\s*(?:'(\w+)'|"(\w+)"|(\w+))`)

// Shell returns, in order, every command of the page's shell blocks: each
// line of a ```sh, ```bash or ```shell block that is not blank or a
// comment, with the lines a trailing backslash or a here-document carries
// it onto; and each "$ " line of a ```console block or of a block without
// a language, with the output shown under it.
func Shell(path string) ([]Command, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	var (
		out     []Command
		inBlock bool
		kind    string // "sh", "console" or "" (anything else)
		first   int    // the index in out of the block's first command
	)
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if fence := strings.TrimLeft(line, " "); strings.HasPrefix(fence, "```") {
			if inBlock {
				inBlock = false
				continue
			}
			inBlock, first = true, len(out)
			switch info := strings.TrimSpace(strings.TrimLeft(fence, "`")); info {
			case "sh", "bash", "shell":
				kind = "sh"
			case "console", "":
				kind = "console"
			default:
				kind = ""
			}
			continue
		}
		if !inBlock || kind == "" {
			continue
		}
		text := line
		if kind == "console" {
			if !strings.HasPrefix(line, "$ ") {
				if n := len(out); n > first {
					out[n-1].Output += line + "\n"
				}
				continue
			}
			text = strings.TrimPrefix(line, "$ ")
		} else if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		c := Command{Line: i + 1, Console: kind == "console"}
		// A trailing backslash carries the command onto the next line; a
		// here-document onto the lines up to its delimiter.
		for strings.HasSuffix(text, "\\") && i+1 < len(lines) {
			i++
			text += "\n" + lines[i]
		}
		if m := hereDoc.FindStringSubmatch(cutComment(text)); m != nil {
			delim := m[2] + m[3] + m[4]
			for i+1 < len(lines) {
				i++
				text += "\n" + lines[i]
				if l := lines[i]; l == delim || (m[1] == "-" && strings.TrimLeft(l, "\t") == delim) {
					break
				}
			}
		}
		c.Text = text
		out = append(out, c)
	}
	for i := range out {
		out[i].Output = strings.TrimRight(out[i].Output, "\n")
		if out[i].Output != "" {
			out[i].Output += "\n"
		}
	}
	return out, nil
}
