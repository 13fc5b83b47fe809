package matchcli

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// Golden scenarios: testdata/scenarios/NAME.txt holds a header (graph and
// policy) and a command script; NAME.golden holds each command followed by
// the JSON line it printed. Run with -update to rewrite the golden files,
// and read the diff before committing it.
var update = flag.Bool("update", false, "rewrite golden files")

type scenario struct {
	graph, graphFile, policy string
	script                   []string
}

func readScenario(t *testing.T, path string) scenario {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := scenario{policy: "first"}
	header := true
	for _, line := range strings.Split(string(data), "\n") {
		if header {
			switch {
			case line == "---":
				header = false
			case strings.HasPrefix(line, "graph:"):
				sc.graph = strings.TrimSpace(strings.TrimPrefix(line, "graph:"))
			case strings.HasPrefix(line, "graph-file:"):
				sc.graphFile = strings.TrimSpace(strings.TrimPrefix(line, "graph-file:"))
			case strings.HasPrefix(line, "policy:"):
				sc.policy = strings.TrimSpace(strings.TrimPrefix(line, "policy:"))
			case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
			default:
				t.Fatalf("%s: unknown header line %q", path, line)
			}
			continue
		}
		sc.script = append(sc.script, line)
	}
	if header || (sc.graph == "") == (sc.graphFile == "") {
		t.Fatalf("%s: need a header with exactly one of graph: or graph-file:, then ---", path)
	}
	return sc
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		t.Run(name, func(t *testing.T) {
			sc := readScenario(t, f)
			var g *resource.Graph
			var err error
			if sc.graph != "" {
				g, err = resource.Generate(sc.graph)
			} else {
				g, err = resource.ReadJGFFile(filepath.Join("testdata", sc.graphFile))
			}
			if err != nil {
				t.Fatal(err)
			}
			m, err := match.New(g, match.Options{Policy: sc.policy})
			if err != nil {
				t.Fatal(err)
			}
			s := NewSession(m)
			s.Dir = "testdata"
			s.Clock = func() time.Time { return time.Time{} }
			var out strings.Builder
			for _, line := range sc.script {
				resp, quit := s.Exec(line)
				if quit {
					break
				}
				if resp == nil {
					if strings.HasPrefix(strings.TrimSpace(line), "#") {
						out.WriteString(line + "\n")
					}
					continue
				}
				b, err := json.Marshal(resp)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&out, "> %s\n%s\n", line, b)
			}
			golden := strings.TrimSuffix(f, ".txt") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/matchcli -run TestScenarios -update)", err)
			}
			if got := out.String(); got != string(want) {
				t.Errorf("output differs from %s:\n%s", golden, lineDiff(string(want), got))
			}
		})
	}
}

// lineDiff shows the first differing lines with some context.
func lineDiff(want, got string) string {
	w := strings.Split(want, "\n")
	g := strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want: %s\n  got:  %s\n", i+1, wl, gl)
			if b.Len() > 4000 {
				break
			}
		}
	}
	return b.String()
}

// TestRunOutputContract checks the stdin/stdout contract on one script:
// one JSON object per command, none for comments, blank lines and quit, and
// nothing after quit.
func TestRunOutputContract(t *testing.T) {
	g := resource.MustGenerate("cluster[1]->node[2]->core[4]")
	m, err := match.New(g, match.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := NewSession(m)
	s.Dir = "testdata"
	var out, diag strings.Builder
	s.Diag = &diag
	in := "# comment\n\nmatch allocate jobspecs/core1.yaml\nbogus\nmatch allocate jobspecs/missing.yaml\nquit\nmatch allocate jobspecs/core1.yaml\n"
	if err := s.Run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var obj map[string]any
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			t.Fatalf("not one JSON object per line: %q: %v", sc.Text(), err)
		}
		lines = append(lines, obj)
	}
	if len(lines) != 3 {
		t.Fatalf("got %d objects, want 3:\n%s", len(lines), out.String())
	}
	wantStatus := []string{"ALLOCATED", "INVALID", "INVALID"}
	for i, l := range lines {
		if l["status"] != wantStatus[i] {
			t.Errorf("object %d: status %v, want %s", i, l["status"], wantStatus[i])
		}
	}
	if lines[0]["jobid"] != float64(1) || lines[2]["jobid"] != nil {
		t.Errorf("job ids: %v and %v, want 1 and null", lines[0]["jobid"], lines[2]["jobid"])
	}
	if !strings.Contains(diag.String(), "missing.yaml") || !strings.Contains(diag.String(), "bogus") {
		t.Errorf("diagnostics should name the bad file and command, got %q", diag.String())
	}
}
