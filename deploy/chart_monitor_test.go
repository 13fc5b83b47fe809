package deploy

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The ServiceMonitor sends its token through `authorization`, never the
// deprecated bearerTokenFile; by default the token is that of a service
// account of its own, in the ServiceMonitor's namespace, allowed to get
// /metrics and nothing else.
func TestChartServiceMonitorAuthorization(t *testing.T) {
	on := "metrics.serviceMonitor.enabled=true"
	for _, tc := range []struct {
		name   string
		sets   []string
		ns     string
		secret string // the Secret the endpoint names
		reader bool   // the chart makes the reader and its token
	}{
		{"defaults", []string{on}, releaseNS, releaseName + "-metrics-reader", true},
		{"in the monitoring namespace", []string{on, "metrics.serviceMonitor.namespace=monitoring"}, "monitoring", releaseName + "-metrics-reader", true},
		{"a Secret of one's own", []string{on, "metrics.serviceMonitor.authorization.secret=prometheus-token", "metrics.serviceMonitor.authorization.key=jwt"}, releaseNS, "prometheus-token", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := mustRender(t, tc.sets...)
			sm := mustFind(t, objs, "ServiceMonitor", releaseName)
			if get(sm, "metadata", "namespace") != tc.ns {
				t.Errorf("the ServiceMonitor is in %v, want %s", get(sm, "metadata", "namespace"), tc.ns)
			}
			ep := get(sm, "spec", "endpoints", "0").(map[string]any)
			for _, deprecated := range []string{"bearerTokenFile", "bearerTokenSecret"} {
				if _, ok := ep[deprecated]; ok {
					t.Errorf("the endpoint uses the deprecated %s: %v", deprecated, ep)
				}
			}
			key := "token"
			if !tc.reader {
				key = "jwt"
			}
			if got := get(ep, "authorization"); get(got, "type") != "Bearer" || get(got, "credentials", "name") != tc.secret || get(got, "credentials", "key") != key {
				t.Errorf("authorization %v, want Bearer from Secret %s key %s", got, tc.secret, key)
			}
			reader := releaseName + "-metrics-reader"
			sa, secret := find(objs, "ServiceAccount", reader), find(objs, "Secret", reader)
			role, binding := find(objs, "ClusterRole", reader), find(objs, "ClusterRoleBinding", reader)
			if !tc.reader {
				if sa != nil || secret != nil || role != nil || binding != nil {
					t.Error("the chart makes a metrics reader though a Secret is given")
				}
				return
			}
			if sa == nil || secret == nil || role == nil || binding == nil {
				t.Fatalf("the reader: ServiceAccount %v, Secret %v, ClusterRole %v, ClusterRoleBinding %v", sa != nil, secret != nil, role != nil, binding != nil)
			}
			if get(sa, "metadata", "namespace") != tc.ns || get(secret, "metadata", "namespace") != tc.ns {
				t.Errorf("the reader's ServiceAccount and Secret are in %v and %v, want the ServiceMonitor's %s", get(sa, "metadata", "namespace"), get(secret, "metadata", "namespace"), tc.ns)
			}
			if secret["type"] != "kubernetes.io/service-account-token" || get(secret, "metadata", "annotations", "kubernetes.io/service-account.name") != reader {
				t.Errorf("the Secret %v is not a token of %s", secret, reader)
			}
			rules := role["rules"].([]any)
			if len(rules) != 1 || !slices.Equal(strs(get(rules[0], "nonResourceURLs")), []string{"/metrics"}) || !slices.Equal(strs(get(rules[0], "verbs")), []string{"get"}) || get(rules[0], "resources") != nil {
				t.Errorf("the reader's rules %v, want get on /metrics alone", rules)
			}
			if get(binding, "roleRef", "name") != reader || get(binding, "subjects", "0", "name") != reader || get(binding, "subjects", "0", "namespace") != tc.ns {
				t.Errorf("the binding %v does not give the reader's role to its ServiceAccount in %s", binding, tc.ns)
			}
		})
	}
}

// groupWaitBuckets reads the group-wait histogram's buckets from
// pkg/plugin/metrics.go's source.
func groupWaitBuckets(t *testing.T) []float64 {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), "../pkg/plugin/metrics.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var buckets []float64
	ast.Inspect(file, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		var isWait bool
		var list *ast.CompositeLit
		for _, e := range lit.Elts {
			kv, ok := e.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			switch key := kv.Key.(*ast.Ident); {
			case key == nil:
			case key.Name == "Name":
				v, ok := kv.Value.(*ast.BasicLit)
				isWait = ok && v.Value == `"group_wait_seconds"`
			case key.Name == "Buckets":
				list, _ = kv.Value.(*ast.CompositeLit)
			}
		}
		if isWait && list != nil {
			for _, e := range list.Elts {
				v, err := strconv.ParseFloat(e.(*ast.BasicLit).Value, 64)
				if err != nil {
					t.Fatal(err)
				}
				buckets = append(buckets, v)
			}
		}
		return true
	})
	if len(buckets) == 0 {
		t.Fatal("pkg/plugin/metrics.go: no literal buckets for group_wait_seconds")
	}
	return buckets
}

// The group-wait alert can fire at every threshold the chart accepts:
// histogram_quantile reads a quantile beyond the top finite bucket as
// that bucket's bound, so the threshold must lie below it. The schema's
// bound is the histogram's top bucket, and the thresholds the chart and
// docs/install.md give lie below it.
func TestChartGroupWaitAlertCanFire(t *testing.T) {
	buckets := groupWaitBuckets(t)
	top := slices.Max(buckets)
	data, err := os.ReadFile(chartDir + "/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	seconds := get(schema, "properties", "metrics", "properties", "prometheusRule", "properties", "groupWait", "properties", "seconds")
	if max, _ := get(seconds, "exclusiveMaximum").(float64); max != top {
		t.Errorf("the schema bounds groupWait.seconds by %v, the histogram's top bucket is %v", get(seconds, "exclusiveMaximum"), top)
	}
	refused(t, "/metrics/prometheusRule/groupWait/seconds", fmt.Sprintf("metrics.prometheusRule.groupWait.seconds=%d", int(top)))
	doc, err := os.ReadFile("../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := regexp.MustCompile(`groupWait: \{seconds: ([0-9]+)\}`).FindAllSubmatch(doc, -1)
	if len(documented) == 0 {
		t.Fatal("docs/install.md gives no groupWait threshold")
	}
	for _, m := range documented {
		s, _ := strconv.ParseFloat(string(m[1]), 64)
		objs := mustRender(t, "metrics.prometheusRule.enabled=true", "metrics.prometheusRule.groupWait.seconds="+string(m[1]))
		if !strings.Contains(fmt.Sprint(objs), fmt.Sprintf("> %s", m[1])) {
			t.Errorf("the rule does not compare with the documented %s s", m[1])
		}
		// A bucket bound above the threshold, so the quantile can exceed it.
		if !slices.ContainsFunc(buckets, func(b float64) bool { return b > s }) {
			t.Errorf("docs/install.md's threshold %v s is at or past the top bucket %v: the alert never fires", s, top)
		}
	}
}

// Every query of the dashboard selects the fluence scheduler's job, so
// kube-scheduler's own series (scheduler_pending_pods, the attempts),
// which a stock scheduler serves too, are fluence's alone; the job
// variable lists only jobs that serve fluence_ series.
func TestChartDashboardFilteredToFluence(t *testing.T) {
	data, err := os.ReadFile(chartDir + "/dashboards/fluence.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Name       string
				Definition string
			}
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	series := regexp.MustCompile(`\b((?:fluence|scheduler)_[a-z_]+)(\{[^}]*\})?`)
	exprs := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs++
			for _, m := range series.FindAllStringSubmatch(tg.Expr, -1) {
				if !strings.Contains(m[2], `job=~"$job"`) {
					t.Errorf("panel %q: %s does not select the fluence job: %s", p.Title, m[1], tg.Expr)
				}
			}
		}
	}
	if exprs < 10 {
		t.Fatalf("the dashboard has only %d queries", exprs)
	}
	var job string
	for _, v := range dash.Templating.List {
		if v.Name == "job" {
			job = v.Definition
		}
	}
	if !regexp.MustCompile(`^label_values\(fluence_[a-z_]+, job\)$`).MatchString(job) {
		t.Errorf("the job variable is %q, want the jobs of a fluence_ series", job)
	}
}
