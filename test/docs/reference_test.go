// Package docs checks the reference pages under docs/reference against
// the code they describe, so that neither changes without the other.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the repository, from this package's directory.
const root = "../.."

// scheduler are the packages of the scheduler whose keys and events
// users meet.
var scheduler = []string{"pkg/gang", "pkg/k8sadapter", "pkg/groups", "pkg/plugin"}

// literals returns every string constant in the non-test Go files of the
// packages, with the file it is in.
func literals(t *testing.T, pkgs ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, dir := range pkgs {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						out[s] = append(out[s], filepath.Join(dir, filepath.Base(f)))
					}
				}
				return true
			})
		}
	}
	return out
}

// documented returns the first backquoted word of each row of the page's
// tables (several when the first cell lists them, comma-separated).
func documented(t *testing.T, page string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	cell := regexp.MustCompile("^\\| *([^|]+?) *\\|")
	word := regexp.MustCompile("`([^`]+)`")
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		m := cell.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, w := range word.FindAllStringSubmatch(m[1], -1) {
			out = append(out, w[1])
		}
	}
	return out
}

// Every event reason the scheduler records is in docs/reference/events.md,
// and every reason there is still recorded.
func TestEventsDocumented(t *testing.T) {
	reason := regexp.MustCompile(`^Fluence[A-Z][A-Za-z]+$`)
	// Fluence-named strings that are not event reasons.
	notEvents := []string{"FluenceQueueSort", "FluenceGroupWhole"}
	var code []string
	for s := range literals(t, scheduler...) {
		if reason.MatchString(s) && !slices.Contains(notEvents, s) {
			code = append(code, s)
		}
	}
	if len(code) < 10 {
		t.Fatalf("found only %d event reasons in the code (%v): the search is broken", len(code), code)
	}
	docs := documented(t, "docs/reference/events.md")
	for _, r := range code {
		if !slices.Contains(docs, r) {
			t.Errorf("event reason %s is recorded by the code but not listed in docs/reference/events.md", r)
		}
	}
	for _, r := range docs {
		if reason.MatchString(r) && !slices.Contains(code, r) {
			t.Errorf("docs/reference/events.md lists %s, which the code no longer records", r)
		}
	}
}

// Every label or annotation key the scheduler reads or writes is in
// docs/reference/annotations.md.
func TestKeysDocumented(t *testing.T) {
	key := regexp.MustCompile(`^((fluence\.flux-framework\.org|scheduling\.x-k8s\.io|scheduling\.volcano\.sh|kueue\.x-k8s\.io|jobset\.sigs\.k8s\.io)/[a-z0-9.-]+|scheduling\.k8s\.io/group-name|fluence\.group-size)$`)
	apiVersion := regexp.MustCompile(`/v[0-9]+((alpha|beta)[0-9]+)?$`)
	var code []string
	for s := range literals(t, scheduler...) {
		if key.MatchString(s) && !apiVersion.MatchString(s) {
			code = append(code, s)
		}
	}
	if len(code) < 10 {
		t.Fatalf("found only %d keys in the code (%v): the search is broken", len(code), code)
	}
	docs := documented(t, "docs/reference/annotations.md")
	for _, k := range code {
		if !slices.Contains(docs, k) {
			t.Errorf("key %s is used by the code but not listed in docs/reference/annotations.md", k)
		}
	}
}

// Every metric the plugin registers is in the Metrics table of
// docs/scheduler.md.
func TestMetricsDocumented(t *testing.T) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, filepath.Join(root, "pkg/plugin/metrics.go"), nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Inspect(file, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "Name" {
			if lit, ok := kv.Value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, _ := strconv.Unquote(lit.Value)
				names = append(names, "fluence_"+s)
			}
		}
		return true
	})
	if len(names) < 5 {
		t.Fatalf("found only %d metrics in pkg/plugin/metrics.go (%v): the search is broken", len(names), names)
	}
	docs := strings.Join(documented(t, "docs/scheduler.md"), "\n")
	for _, m := range names {
		if !strings.Contains(docs, m) {
			t.Errorf("metric %s is registered but not in the Metrics table of docs/scheduler.md", m)
		}
	}
}
