package integration

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The chart's Grafana dashboard as rendered: valid JSON, panel ids unique,
// no two panels on the same place of the grid, and a panel for every
// fluence_ metric the code defines (read from the source, so that a new
// metric without a panel fails here). TestHelmChart checks the other way
// round against a running scheduler's /metrics: every metric the
// dashboard queries is served, and every fluence_ family served has a
// panel.
func TestChartDashboard(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	helm := helmBinary(t)
	queried := dashboardFamilies(dashboardMetrics(t, helm))
	defined := codeMetricNames(t)
	if len(defined) < 10 {
		t.Fatalf("the code defines only %v", defined)
	}
	for _, name := range defined {
		if !slices.Contains(queried, name) {
			t.Errorf("no panel of the dashboard queries %s, which the scheduler exports", name)
		}
	}
	checkDashboardGrid(t, helm)
}

// checkDashboardServed: every fluence_ family a running scheduler serves
// (body, its /metrics page) has a panel of the dashboard.
func checkDashboardServed(t *testing.T, helm, body string) {
	t.Helper()
	queried := dashboardFamilies(dashboardMetrics(t, helm))
	served := regexp.MustCompile(`(?m)^# TYPE (fluence_[a-z_]+) `).FindAllStringSubmatch(body, -1)
	if len(served) == 0 {
		t.Errorf("/metrics serves no fluence_ family")
	}
	for _, m := range served {
		if !slices.Contains(queried, m[1]) {
			t.Errorf("/metrics serves %s, which no panel of the dashboard queries", m[1])
		}
	}
}

// dashboardFamilies turns the series names a dashboard queries into their
// metric families: a histogram's _bucket, _sum and _count are its own.
func dashboardFamilies(names []string) []string {
	var out []string
	for _, n := range names {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if f, ok := strings.CutSuffix(n, suffix); ok && strings.HasPrefix(n, "fluence_") {
				n = f
				break
			}
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// codeMetricNames returns the fluence_ metrics the repository's code
// defines: every k8s.io/component-base/metrics (or Prometheus) options
// literal (HistogramOpts, CounterOpts, GaugeOpts, SummaryOpts...) in the
// non-test Go files under pkg, cmd and internal, its name made of
// Namespace, Subsystem and Name as the registry makes it.
func codeMetricNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, dir := range []string{"../../pkg", "../../cmd", "../../internal"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(file, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				sel, ok := lit.Type.(*ast.SelectorExpr)
				if !ok || !strings.HasSuffix(sel.Sel.Name, "Opts") {
					return true
				}
				parts := map[string]string{}
				for _, e := range lit.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					key, ok := kv.Key.(*ast.Ident)
					val, isLit := kv.Value.(*ast.BasicLit)
					if ok && isLit && val.Kind == token.STRING {
						parts[key.Name], _ = strconv.Unquote(val.Value)
					}
				}
				var fq []string
				for _, k := range []string{"Namespace", "Subsystem", "Name"} {
					if parts[k] != "" {
						fq = append(fq, parts[k])
					}
				}
				if name := strings.Join(fq, "_"); strings.HasPrefix(name, "fluence_") && !slices.Contains(names, name) {
					names = append(names, name)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// checkDashboardGrid: the rendered dashboard's panels each have a place on
// Grafana's 24-column grid, and no two overlap.
func checkDashboardGrid(t *testing.T, helm string) {
	t.Helper()
	cm := findObject(t, renderChart(t, helm, "--set", "dashboard.enabled=true"), "ConfigMap", releaseName+"-dashboard")
	raw, _, _ := unstructured.NestedString(cm.Object, "data", "fluence.json")
	var dash struct {
		Panels []struct {
			Title   string                   `json:"title"`
			GridPos struct{ X, Y, W, H int } `json:"gridPos"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(raw), &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	for i, a := range dash.Panels {
		g := a.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v off the grid", a.Title, g)
		}
		for _, b := range dash.Panels[i+1:] {
			h := b.GridPos
			if g.X < h.X+h.W && h.X < g.X+g.W && g.Y < h.Y+h.H && h.Y < g.Y+g.H {
				t.Errorf("panels %q %+v and %q %+v overlap", a.Title, g, b.Title, h)
			}
		}
	}
}
