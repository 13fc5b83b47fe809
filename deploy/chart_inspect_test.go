package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/strvals"
)

const apiServiceName = "v1alpha1.inspect.fluence.flux-framework.org"

// By default nothing of the cluster depends on fluence being up: no
// APIService, only the inspection Service, which kubectl fluence reaches
// through the API server's Service proxy, and a Role granting that proxy
// for that one Service and nothing else. The APIService is opt-in, and
// inspect.enabled=false leaves everything out.
func TestChartInspectRoutes(t *testing.T) {
	proxyName := "https:" + releaseName + "-inspect:https"
	checkProxyRole := func(t *testing.T, objs []object) {
		t.Helper()
		role := mustFind(t, objs, "Role", releaseName+"-inspect-proxy")
		if ns := get(role, "metadata", "namespace"); ns != releaseNS {
			t.Errorf("the proxy Role is in %v, want the release namespace %s", ns, releaseNS)
		}
		rules, _ := get(role, "rules").([]any)
		if len(rules) != 1 {
			t.Fatalf("the proxy Role has %d rules, want 1: %v", len(rules), rules)
		}
		r := rules[0]
		if g := strs(get(r, "apiGroups")); !slices.Equal(g, []string{""}) {
			t.Errorf("apiGroups %v, want the core group alone", g)
		}
		if res := strs(get(r, "resources")); !slices.Equal(res, []string{"services/proxy"}) {
			t.Errorf("resources %v, want services/proxy alone", res)
		}
		if v := strs(get(r, "verbs")); !slices.Equal(v, []string{"get"}) {
			t.Errorf("verbs %v, want get alone", v)
		}
		if n := get(r, "resourceNames"); n == nil || !slices.Equal(strs(n), []string{proxyName}) {
			t.Errorf("resourceNames %v, want [%s]: the one Service as kubectl fluence names it", n, proxyName)
		}
		// The Service it names exists, with the port named https.
		svc := mustFind(t, objs, "Service", releaseName+"-inspect")
		if get(svc, "spec", "ports", "0", "name") != "https" {
			t.Errorf("the inspection Service's port is %v, want one named https", get(svc, "spec", "ports", "0"))
		}
		// Reading the API itself stays the ClusterRole's.
		cr := mustFind(t, objs, "ClusterRole", releaseName+"-inspect")
		for _, r := range get(cr, "rules").([]any) {
			if slices.Contains(strs(get(r, "resources")), "services/proxy") {
				t.Errorf("the ClusterRole grants services/proxy (in every namespace): %v", r)
			}
		}
	}

	t.Run("default", func(t *testing.T) {
		objs := mustRender(t)
		if n := kinds(objs)["APIService"]; n != 0 {
			t.Errorf("%d APIServices rendered by default: with no replica ready they break discovery and namespace deletion", n)
		}
		checkProxyRole(t, objs)
	})
	t.Run("opt-in APIService", func(t *testing.T) {
		objs := mustRender(t, "inspect.apiService=true")
		api := mustFind(t, objs, "APIService", apiServiceName)
		if get(api, "spec", "service", "name") != releaseName+"-inspect" || get(api, "spec", "service", "namespace") != releaseNS {
			t.Errorf("the APIService names service %v/%v", get(api, "spec", "service", "namespace"), get(api, "spec", "service", "name"))
		}
		checkProxyRole(t, objs)
	})
	t.Run("disabled", func(t *testing.T) {
		objs := mustRender(t, "inspect.enabled=false", "inspect.apiService=true")
		for _, kind := range []string{"APIService", "Role"} {
			for _, o := range objs {
				if o["kind"] == kind && fmt.Sprint(get(o, "metadata", "name")) != releaseName+"-leader-election" {
					t.Errorf("inspect.enabled=false renders %s %v", kind, get(o, "metadata", "name"))
				}
			}
		}
		if find(objs, "Service", releaseName+"-inspect") != nil {
			t.Error("inspect.enabled=false renders the inspection Service")
		}
	})
	refused(t, "/inspect/apiService", "inspect.apiService=yes")
}

// One-scheduler mode cannot strand fluence's own pods: it needs at least
// two replicas, leader election, and a budget that leaves one running; the
// Deployment always rolls a new pod in before an old one goes.
func TestChartOneSchedulerReplicas(t *testing.T) {
	strategy := func(objs []object) string {
		d := mustFind(t, objs, "Deployment", releaseName)
		return fmt.Sprint(get(d, "spec", "strategy", "type"), " ", get(d, "spec", "strategy", "rollingUpdate", "maxUnavailable"), " ", get(d, "spec", "strategy", "rollingUpdate", "maxSurge"))
	}
	for _, sets := range [][]string{nil, {"replicas=3"}, {"oneScheduler=true", "replicas=2"}} {
		if got := strategy(mustRender(t, sets...)); got != "RollingUpdate 0 1" {
			t.Errorf("%v: strategy %s, want RollingUpdate, maxUnavailable 0, maxSurge 1", sets, got)
		}
	}
	objs := mustRender(t, "oneScheduler=true", "replicas=2")
	pdb := mustFind(t, objs, "PodDisruptionBudget", releaseName)
	if got := fmt.Sprint(get(pdb, "spec", "maxUnavailable")); got != "1" {
		t.Errorf("one-scheduler mode: the budget's maxUnavailable %s, want 1 of 2", got)
	}
	pod := get(mustFind(t, objs, "Deployment", releaseName), "spec", "template", "spec")
	// The stock profile of the running leader schedules them, with its
	// scoring (the soft anti-affinity spreads them) and preemption.
	if name := get(pod, "schedulerName"); name != nil && name != "default-scheduler" {
		t.Errorf("one-scheduler mode: fluence's pods name scheduler %v, want default-scheduler", name)
	}
	if get(pod, "affinity", "podAntiAffinity") == nil {
		t.Error("one-scheduler mode: the replicas are not spread across nodes")
	}
	refused(t, "/replicas", "oneScheduler=true")
	refused(t, "/replicas", "oneScheduler=true", "replicas=1")
	// The template refuses it too, for a chart rendered without its schema.
	if err := renderWithoutSchema(t, "oneScheduler=true", "replicas=1"); err == nil || !strings.Contains(err.Error(), "at least 2 replicas") {
		t.Errorf("without the schema, one replica in one-scheduler mode: %v, want the template's refusal", err)
	}
	refused(t, "podDisruptionBudget.enabled is false", "oneScheduler=true", "replicas=2", "podDisruptionBudget.enabled=false")
	refused(t, "is not below replicas", "oneScheduler=true", "replicas=2", "podDisruptionBudget.maxUnavailable=2")
	refused(t, "without leader election", "oneScheduler=true", "replicas=2", "leaderElection.enabled=false")
	mustRender(t, "oneScheduler=true", "replicas=3", "podDisruptionBudget.maxUnavailable=2")
}

// renderWithoutSchema renders the chart as render does but with its
// values.schema.json removed, and returns the templates' error.
func renderWithoutSchema(t *testing.T, sets ...string) error {
	t.Helper()
	chrt, err := loader.LoadDir(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	chrt.Schema = nil
	vals := map[string]any{}
	for _, s := range sets {
		if err := strvals.ParseInto(s, vals); err != nil {
			t.Fatal(err)
		}
	}
	rv, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{Name: releaseName, Namespace: releaseNS, IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	_, err = engine.Engine{Strict: true}.Render(chrt, rv)
	return err
}
