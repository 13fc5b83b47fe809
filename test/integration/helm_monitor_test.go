package integration

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The chart's alerts, each with the severity it carries.
var chartAlerts = map[string]string{
	"FluenceSchedulerDown":  "critical",
	"FluenceNoLeader":       "critical",
	"FluenceGroupWaitHigh":  "warning",
	"FluenceQueueStalled":   "warning",
	"FluenceBindFailures":   "warning",
	"FluenceInternalErrors": "warning",
}

// checkChartMonitoring: the ServiceMonitor and the PrometheusRule are off
// by default; on, the ServiceMonitor scrapes the metrics Service's port
// over HTTPS with Prometheus's token, the rules select the series that
// ServiceMonitor gives (job, namespace), carry the thresholds the values
// set and are well-formed PromQL as far as brackets and quotes go, and
// both carry the labels a Prometheus selects them by.
func checkChartMonitoring(t *testing.T, helm string) {
	for _, o := range renderChart(t, helm) {
		if k := o.GetKind(); k == "ServiceMonitor" || k == "PrometheusRule" {
			t.Errorf("%s %s rendered by default", k, o.GetName())
		}
	}
	on := []string{"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true"}
	if out, err := runHelm(helm, append([]string{"lint", "--strict", chartDir}, on...)...); err != nil {
		t.Fatalf("helm lint with monitoring on: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name string
		// args: helm's (--set parses only integers: a quantile is given
		// with --set-json, as a number)
		args   []string
		ns     string            // where both objects go
		labels map[string]string // labels both carry beyond the chart's
		job    string
		// exprs: alert -> what its expression must contain.
		exprs map[string][]string
		fors  map[string]string
	}{
		{
			name: "defaults",
			ns:   releaseNamespace, job: releaseName + "-metrics",
			exprs: map[string][]string{
				"FluenceGroupWaitHigh": {"histogram_quantile(0.9, ", "[1h]", "> 1800"},
				"FluenceQueueStalled":  {`state="queued"`, "[1h]"},
				"FluenceBindFailures":  {"rate(fluence_bind_failures_total", "[5m]"},
			},
			fors: map[string]string{"FluenceSchedulerDown": "5m", "FluenceGroupWaitHigh": "15m", "FluenceBindFailures": "10m", "FluenceInternalErrors": "0m"},
		},
		{
			name: "thresholds, labels, namespace and job of one's own",
			args: []string{"--set", "metrics.serviceMonitor.labels.release=kps", "--set", "metrics.prometheusRule.labels.release=kps",
				"--set", "metrics.serviceMonitor.namespace=monitoring", "--set", "metrics.prometheusRule.namespace=monitoring",
				"--set", "metrics.prometheusRule.job=fluence-scheduler", "--set-json", "metrics.prometheusRule.groupWait.quantile=0.5",
				"--set", "metrics.prometheusRule.groupWait.seconds=600", "--set", "metrics.prometheusRule.groupWait.window=30m",
				"--set", "metrics.prometheusRule.bindFailures.for=20m", "--set", "metrics.prometheusRule.down.for=2m"},
			ns: "monitoring", labels: map[string]string{"release": "kps"}, job: "fluence-scheduler",
			exprs: map[string][]string{"FluenceGroupWaitHigh": {"histogram_quantile(0.5, ", "[30m]", "> 600"}},
			fors:  map[string]string{"FluenceSchedulerDown": "2m", "FluenceNoLeader": "2m", "FluenceBindFailures": "20m"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderChart(t, helm, append(slices.Clone(on), tc.args...)...)
			svc := findObject(t, objs, "Service", releaseName+"-metrics")
			sm := findObject(t, objs, "ServiceMonitor", releaseName)
			rule := findObject(t, objs, "PrometheusRule", releaseName)
			for _, o := range []*unstructured.Unstructured{sm, rule} {
				if o.GetAPIVersion() != "monitoring.coreos.com/v1" || o.GetNamespace() != tc.ns {
					t.Errorf("%s: apiVersion %s, namespace %s; want monitoring.coreos.com/v1 in %s", o.GetKind(), o.GetAPIVersion(), o.GetNamespace(), tc.ns)
				}
				for k, v := range tc.labels {
					if o.GetLabels()[k] != v {
						t.Errorf("%s labels %v lack %s=%s", o.GetKind(), o.GetLabels(), k, v)
					}
				}
			}
			checkServiceMonitor(t, sm, svc)
			checkRules(t, rule, tc.job, tc.exprs, tc.fors)
		})
	}
}

// checkServiceMonitor: it selects the metrics Service in the release
// namespace and scrapes the Service's port over HTTPS with a token.
func checkServiceMonitor(t *testing.T, sm, svc *unstructured.Unstructured) {
	t.Helper()
	svcLabels := svc.GetLabels()
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range selector {
		if svcLabels[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s; the metrics Service's labels are %v", k, v, svcLabels)
		}
	}
	if len(selector) == 0 {
		t.Error("the ServiceMonitor selects every Service")
	}
	if ns, _, _ := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames"); !slices.Equal(ns, []string{svc.GetNamespace()}) {
		t.Errorf("the ServiceMonitor looks in namespaces %v, the Service is in %s", ns, svc.GetNamespace())
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	var portNames []string
	for _, p := range ports {
		portNames = append(portNames, fmt.Sprint(p.(map[string]any)["name"]))
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("the ServiceMonitor has %d endpoints, want 1", len(endpoints))
	}
	ep := endpoints[0].(map[string]any)
	if !slices.Contains(portNames, fmt.Sprint(ep["port"])) || ep["scheme"] != "https" || ep["path"] != "/metrics" {
		t.Errorf("endpoint %v: want one of the Service's ports %v, https, /metrics", ep, portNames)
	}
	// The token comes from a Secret through authorization (the Prometheus
	// Operator deprecates bearerTokenFile): by default the chart's
	// metrics-reader token.
	typ, _, _ := unstructured.NestedString(ep, "authorization", "type")
	secret, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "name")
	key, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "key")
	if typ != "Bearer" || secret != releaseName+"-metrics-reader" || key != "token" {
		t.Errorf("endpoint %v scrapes without a bearer token from the chart's metrics-reader Secret: the scheduler refuses it", ep)
	}
	if _, deprecated := ep["bearerTokenFile"]; deprecated {
		t.Errorf("endpoint %v still names bearerTokenFile, which the Prometheus Operator deprecates", ep)
	}
	if skip, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify"); !skip {
		t.Errorf("endpoint %v verifies kube-scheduler's self-signed certificate", ep)
	}
}

// checkRules checks the PrometheusRule's alerts: every one of chartAlerts,
// with its severity, a description, a `for` (fors: the expected ones), an
// expression that selects job and the release namespace, contains what
// exprs says and balances its brackets and quotes.
func checkRules(t *testing.T, rule *unstructured.Unstructured, job string, exprs map[string][]string, fors map[string]string) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range ruleList(t, rule) {
		name := fmt.Sprint(r["alert"])
		seen[name] = true
		sev, ok := chartAlerts[name]
		if !ok {
			t.Errorf("alert %s is not one the test knows: add it to chartAlerts and to docs/install.md", name)
			continue
		}
		expr := fmt.Sprint(r["expr"])
		if labels, _ := r["labels"].(map[string]any); labels["severity"] != sev {
			t.Errorf("%s: labels %v, want severity %s", name, r["labels"], sev)
		}
		if ann, _ := r["annotations"].(map[string]any); ann["summary"] == nil || ann["description"] == nil {
			t.Errorf("%s: annotations %v lack a summary or a description", name, r["annotations"])
		}
		if want, ok := fors[name]; ok && r["for"] != want {
			t.Errorf("%s: for %v, want %s", name, r["for"], want)
		}
		if sel := fmt.Sprintf(`job=%q, namespace=%q`, job, releaseNamespace); !strings.Contains(expr, sel) {
			t.Errorf("%s: %s does not select %s", name, expr, sel)
		}
		for _, want := range exprs[name] {
			if !strings.Contains(expr, want) {
				t.Errorf("%s: %s does not contain %q", name, expr, want)
			}
		}
		if err := balanced(expr); err != nil {
			t.Errorf("%s: %s: %v", name, expr, err)
		}
	}
	for name := range chartAlerts {
		if !seen[name] {
			t.Errorf("the PrometheusRule has no alert %s", name)
		}
	}
}

// ruleList returns the rules of the PrometheusRule's groups.
func ruleList(t *testing.T, rule *unstructured.Unstructured) []map[string]any {
	t.Helper()
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	var out []map[string]any
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			out = append(out, r.(map[string]any))
		}
	}
	if len(out) == 0 {
		t.Fatal("the PrometheusRule has no rules")
	}
	return out
}

// balanced reports the first bracket or quote of a PromQL expression left
// open or closed out of turn (what a template's spacing most often
// breaks).
func balanced(expr string) error {
	var stack []rune
	closing := map[rune]rune{')': '(', ']': '[', '}': '{'}
	inQuote := false
	for i, r := range expr {
		switch {
		case r == '"':
			inQuote = !inQuote
		case inQuote:
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case closing[r] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != closing[r] {
				return fmt.Errorf("%q at %d closes nothing open", r, i)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if inQuote || len(stack) > 0 {
		return fmt.Errorf("left open: %q, quote %v", string(stack), inQuote)
	}
	return nil
}

// ruleMetrics renders the chart's PrometheusRule and returns the metric
// names its expressions query, as /metrics serves them (a histogram's
// _bucket and _count series), `up` aside: Prometheus makes that itself.
func ruleMetrics(t *testing.T, helm string) []string {
	t.Helper()
	rule := findObject(t, renderChart(t, helm, "--set", "metrics.prometheusRule.enabled=true"), "PrometheusRule", releaseName)
	metricName := regexp.MustCompile(`\b(?:fluence|scheduler)_[a-z_]+`)
	var names []string
	for _, r := range ruleList(t, rule) {
		for _, n := range metricName.FindAllString(fmt.Sprint(r["expr"]), -1) {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	if len(names) < 4 {
		t.Fatalf("the rules query only %v", names)
	}
	return names
}

// servedOnFirstCount are the metrics a scheduler serves only once they
// counted something: they are labelled by more than the profile (an
// internal error's operation; how a topology placement asked and the
// level it got), so no series exists before.
var servedOnFirstCount = []string{"fluence_internal_errors_total", "fluence_topology_placements_total"}

// checkRulesServed: every metric the chart's rules query is one the
// scheduler serves in body (a /metrics page), or, for those it serves
// only from their first count, one the plugin registers.
func checkRulesServed(t *testing.T, helm, body string) {
	t.Helper()
	registered := pluginMetricNames(t)
	for _, name := range ruleMetrics(t, helm) {
		switch {
		case strings.Contains(body, "\n"+name+"{") || strings.Contains(body, "\n"+name+" "):
		case slices.Contains(servedOnFirstCount, name) && slices.Contains(registered, name):
		default:
			t.Errorf("the alerting rules query %s, which /metrics does not serve", name)
		}
	}
}

// pluginMetricNames returns the metrics pkg/plugin/metrics.go registers
// (fluence_ and each Name), read from the source.
func pluginMetricNames(t *testing.T) []string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), "../../pkg/plugin/metrics.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Inspect(file, func(n ast.Node) bool {
		if kv, ok := n.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "Name" {
				if lit, ok := kv.Value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					names = append(names, "fluence_"+s)
				}
			}
		}
		return true
	})
	return names
}
