package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/fluence-sched/fluence/deploy"
	"github.com/fluence-sched/fluence/pkg/groups"
	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// Helm itself, built from its Go module the first time (about two minutes on
// two cores) and kept in the user's cache directory; $HELM names another.
const (
	helmPackage = "helm.sh/helm/v3/cmd/helm"
	helmVersion = "v3.22.0"
)

const (
	chartDir         = "../../deploy/helm/fluence"
	releaseName      = "fluence"
	releaseNamespace = "fluence-system"
)

// The Helm chart as a user installs it: rendered by real helm, applied to an
// API server that enforces RBAC, and run under the chart's own service
// account with the chart's own arguments and configuration. Groups of every
// kind the plugin reads (labels, a PodGroup, a Job, an MPIJob, a JobSet) must bind, a PodGroup
// that can never fit must get its condition, and the scheduler must never be
// refused by the API server: the chart's RBAC is then what it needs.
func TestHelmChart(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	helm := helmBinary(t)
	if out, err := runHelm(helm, "lint", "--strict", chartDir); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
	t.Run("bad values are refused", func(t *testing.T) {
		for _, tc := range []struct {
			set  []string
			want string
		}{
			{[]string{"plugin.queuePolicy=fifo"}, "/plugin/queuePolicy"},
			{[]string{"plugin.matchPolicy=best"}, "/plugin/matchPolicy"},
			{[]string{"plugin.queueDeth=3"}, "queueDeth"},
			{[]string{"plugin.permitTimeout=soon"}, "/plugin/permitTimeout"},
			{[]string{"plugin.topologyLevels={example.com/rack,example.com/rack}"}, "/plugin/topologyLevels"},
			{[]string{"plugin.topologyLevels={example.com/rack}", "plugin.rackLabel=example.com/rack"}, "rackLabel and plugin.topologyLevels are both set"},
			{[]string{"replicas=0"}, "/replicas"},
			{[]string{"clientConnection.qps=0"}, "/clientConnection/qps"},
			{[]string{"clientConnection.qsp=10"}, "qsp"},
			{[]string{"replicas=2", "leaderElection.enabled=false"}, "without leader election"},
			{[]string{"schedulerName=default-scheduler"}, "must not be default-scheduler"},
			{[]string{"oneScheduler=yes"}, "/oneScheduler"},
			{[]string{"inspect.enabled=maybe"}, "/inspect/enabled"},
			{[]string{"podGroupCRD.install=maybe"}, "/podGroupCRD/install"},
			// Misspelt at every level: the top, and each block.
			{[]string{"replica=3"}, "replica"},
			{[]string{"image.tagg=v1"}, "tagg"},
			{[]string{"image.digest=latest"}, "/image/digest"},
			{[]string{"leaderElection.leaseNam=x"}, "leaseNam"},
			{[]string{"serviceAccount.creat=false"}, "creat"},
			{[]string{"metrics.servic=false"}, "servic"},
			{[]string{"resources.request.cpu=1"}, "request"},
			{[]string{"affinity.podAntiAfinity.x=1"}, "podAntiAfinity"},
			{[]string{"podDisruptionBudget.maxUnavailable=0"}, "/podDisruptionBudget/maxUnavailable"},
			{[]string{"antiAffinity=always"}, "/antiAffinity"},
			{[]string{"metrics.serviceMonitor.enabled=true", "metrics.service=false"}, "the ServiceMonitor scrapes the metrics Service"},
			{[]string{"metrics.serviceMonitor.intervall=1m"}, "intervall"},
			{[]string{"metrics.serviceMonitor.interval=often"}, "/metrics/serviceMonitor/interval"},
			{[]string{"metrics.prometheusRule.enabled=maybe"}, "/metrics/prometheusRule/enabled"},
			{[]string{"metrics.prometheusRule.groupWait.quantile=2"}, "/metrics/prometheusRule/groupWait/quantile"},
			{[]string{"metrics.prometheusRule.groupWait.seconds=0"}, "/metrics/prometheusRule/groupWait/seconds"},
			{[]string{"metrics.prometheusRule.bindFailures.for=soon"}, "/metrics/prometheusRule/bindFailures/for"},
			{[]string{"metrics.prometheusRule.down.after=5m"}, "after"},
		} {
			args := []string{"template", releaseName, chartDir}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			out, err := runHelm(helm, args...)
			if err == nil || !strings.Contains(out, tc.want) {
				t.Errorf("helm template --set %v: err %v, want an error naming %q; output:\n%s", tc.set, err, tc.want, tail(out, 5))
			}
		}
	})

	t.Run("replicas", func(t *testing.T) { checkChartReplicas(t, helm) })
	t.Run("monitoring", func(t *testing.T) { checkChartMonitoring(t, helm) })
	objs := renderChart(t, helm)
	deployment := findObject(t, objs, "Deployment", releaseName)
	configMap := findObject(t, objs, "ConfigMap", releaseName+"-config")
	config, _, _ := unstructured.NestedString(configMap.Object, "data", "config.yaml")

	// The chart's profile is the shipped one, and kube-scheduler accepts it.
	if _, err := decodeSchedulerConfig(config); err != nil {
		t.Fatalf("the chart's scheduler configuration: %v", err)
	}
	if diff := cmp.Diff(yamlField(t, fluenceConfig(t, nil), "profiles"), yamlField(t, config, "profiles")); diff != "" {
		t.Errorf("the chart's profile differs from deploy/scheduler-config.yaml (-file +chart):\n%s", diff)
	}
	args := containerArgs(t, deployment, configMap)

	// One-scheduler mode renders deploy/one-scheduler-config.yaml's profiles.
	oneConfig, _, _ := unstructured.NestedString(findObject(t, renderChart(t, helm, "--set", "oneScheduler=true", "--set", "replicas=2"), "ConfigMap", releaseName+"-config").Object, "data", "config.yaml")
	if _, err := decodeSchedulerConfig(oneConfig); err != nil {
		t.Fatalf("the chart's one-scheduler configuration: %v", err)
	}
	if diff := cmp.Diff(yamlField(t, oneSchedulerConfig(t), "profiles"), yamlField(t, oneConfig, "profiles")); diff != "" {
		t.Errorf("the chart's one-scheduler profiles differ from deploy/one-scheduler-config.yaml (-file +chart):\n%s", diff)
	}

	// The PodGroup CRD: deploy/crds' file, kept on uninstall; rendered
	// unless podGroupCRD.install is false (helm template has no cluster for
	// auto's lookup to find one in).
	checkChartCRD(t, objs)
	for _, tc := range []struct {
		value string
		want  int
	}{{"false", 0}, {"true", 1}, {"auto", 1}} {
		if n := renderedCRDs(t, helm, "--set", "podGroupCRD.install="+tc.value); n != tc.want {
			t.Errorf("podGroupCRD.install=%s: %d CRDs rendered, want %d", tc.value, n, tc.want)
		}
	}

	c := newFullCluster(t, "--authorization-mode=Node,RBAC")
	c.installWorkloadCRD(mpiJobCRD)
	c.installWorkloadCRD(jobSetCRD)
	if _, err := c.Client.CoreV1().Namespaces().Create(c.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.apply(objs) // the chart's own PodGroup CRD among them
	c.waitServed(podGroupGVR)
	checkCRDLookup(t, c, helm)

	// Run the binary as the pod would.
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	proc := c.startChartScheduler(t, deployment, config, args, ports[0])

	c.addNodes("node", 6, "2", "8Gi")
	startNodeSim(c, simOptions{})

	labelled := groupPods("labelled", 3, "1", time.Second, 0)
	c.createPodGroup("pg", 2)
	c.createPodGroup("huge", 50)
	var pg []*corev1.Pod
	for i := range 2 {
		pg = append(pg, newTestPod(fmt.Sprintf("pg-%d", i), "fluence", "1", "", time.Second,
			map[string]string{"scheduling.x-k8s.io/pod-group": "pg"}))
	}
	huge := newTestPod("huge-0", "fluence", "1", "", time.Second, map[string]string{"scheduling.x-k8s.io/pod-group": "huge"})
	jobPods := c.jobPods("job", 2)
	mpi := c.createCR(mpiJobCRD, "mpi", map[string]any{"mpiReplicaSpecs": map[string]any{
		"Launcher": map[string]any{"replicas": int64(1)},
		"Worker":   map[string]any{"replicas": int64(1)},
	}})
	mpiPods := []*corev1.Pod{ownedPod("mpi-worker-0", mpi), ownedPod("mpi-launcher-0", c.createOwnedJob("mpi-launcher", 1, mpi, nil))}
	js := c.createCR(jobSetCRD, "js", map[string]any{"replicatedJobs": []any{map[string]any{"name": "workers", "replicas": int64(1)}}})
	jsJob := c.createOwnedJob("js-workers-0", 2, js, map[string]string{groups.JobSetReplicatedJobLabel: "workers"})
	jsPods := []*corev1.Pod{ownedPod("js-workers-0-0", jsJob), ownedPod("js-workers-0-1", jsJob)}
	placed := slices.Concat(labelled, pg, jobPods, mpiPods, jsPods)
	c.createPods(append(placed, huge)...)

	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(placed)...)
	if cond := c.podGroupCondition("huge", "False"); !strings.Contains(cond, "needs 50") {
		t.Errorf("huge's condition does not say what is short: %s", cond)
	}

	lease, err := c.Client.CoordinationV1().Leases(releaseNamespace).Get(c.Ctx, "fluence-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Errorf("leader election Lease: %v", err)
	} else if ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
		t.Errorf("Lease %s/%s has no holder", releaseNamespace, lease.Name)
	}

	// The probes' paths answer without credentials; /metrics answers a
	// scraper allowed to get it, and no one else.
	base := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	for _, path := range []string{"/livez", "/readyz"} {
		if code, body := httpsGet(t, base+path, ""); code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
	scraper := c.metricsScraperToken()
	code, body := httpsGet(t, base+"/metrics", scraper)
	if code != http.StatusOK || !strings.Contains(body, `fluence_groups{profile="fluence"`) {
		t.Errorf("GET /metrics as a scraper: %d, fluence_groups of profile fluence present: %v", code, strings.Contains(body, `fluence_groups{profile="fluence"`))
	}
	// Every metric the chart's Grafana dashboard queries is one the
	// scheduler serves, or, for those it serves only from their first
	// count, one the code defines; and every fluence_ family served has a
	// panel.
	defined := codeMetricNames(t)
	for _, name := range dashboardMetrics(t, helm) {
		switch {
		case strings.Contains(body, "\n"+name+"{") || strings.Contains(body, "\n"+name+" "):
		case slices.Contains(servedOnFirstCount, name) && slices.Contains(defined, name):
		default:
			t.Errorf("the dashboard queries %s, which /metrics does not serve", name)
		}
	}
	checkDashboardServed(t, helm, body)
	// And every metric its alerting rules query.
	checkRulesServed(t, helm, body)
	if code, _ := httpsGet(t, base+"/metrics", ""); code == http.StatusOK {
		t.Errorf("GET /metrics without credentials: %d, want it refused", code)
	}

	var refused []string
	for _, l := range strings.Split(proc.logs.String(), "\n") {
		if strings.Contains(l, "forbidden") {
			refused = append(refused, l)
		}
	}
	if len(refused) > 0 {
		t.Errorf("the API server refused the chart's service account %d times, first:\n%s", len(refused), strings.Join(refused[:min(3, len(refused))], "\n"))
	}
}

// checkChartCRD checks the chart's PodGroup CRD against deploy/crds.
func checkChartCRD(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	crd := findObject(t, objs, "CustomResourceDefinition", "podgroups.scheduling.x-k8s.io")
	var shipped map[string]any
	if err := yaml.Unmarshal([]byte(deploy.PodGroupCRD), &shipped); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(shipped["spec"], crd.Object["spec"]); diff != "" {
		t.Errorf("the chart's PodGroup CRD differs from deploy/crds (-file +chart):\n%s", diff)
	}
	if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
		t.Errorf("the chart's PodGroup CRD has annotations %v, want helm.sh/resource-policy: keep", crd.GetAnnotations())
	}
}

// renderedCRDs renders the chart with the extra helm arguments and counts
// the CustomResourceDefinitions in it.
func renderedCRDs(t *testing.T, helm string, extra ...string) int {
	t.Helper()
	n := 0
	for _, o := range renderChart(t, helm, extra...) {
		if o.GetKind() == "CustomResourceDefinition" {
			n++
		}
	}
	return n
}

// checkCRDLookup renders the chart against the cluster, whose PodGroup
// CRD was created without Helm: podGroupCRD.install=auto must leave it
// alone, unless it carries this release's ownership annotations (as after
// a helm install of this chart), when the release keeps managing it.
func checkCRDLookup(t *testing.T, c *cluster, helm string) {
	t.Helper()
	server := []string{"--dry-run=server", "--kubeconfig", c.kubeconfigFile()}
	if n := renderedCRDs(t, helm, server...); n != 0 {
		t.Errorf("auto, with a PodGroup CRD installed by someone else: %d CRDs rendered, want 0", n)
	}
	if n := renderedCRDs(t, helm, append(server, "--set", "podGroupCRD.install=true")...); n != 1 {
		t.Errorf("true, with a PodGroup CRD installed by someone else: %d CRDs rendered, want 1", n)
	}
	crds := apiextensionsclient.NewForConfigOrDie(c.Config).ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(c.Ctx, "podgroups.scheduling.x-k8s.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ann := crd.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["meta.helm.sh/release-name"], ann["meta.helm.sh/release-namespace"] = releaseName, releaseNamespace
	crd.SetAnnotations(ann)
	if _, err := crds.Update(c.Ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := renderedCRDs(t, helm, server...); n != 1 {
		t.Errorf("auto, with the PodGroup CRD this release installed: %d CRDs rendered, want 1 (an upgrade would drop it)", n)
	}
}

// dashboardMetrics renders the chart's dashboard ConfigMap and returns the
// metric names its panels query (a histogram's _bucket series as served).
func dashboardMetrics(t *testing.T, helm string) []string {
	t.Helper()
	cm := findObject(t, renderChart(t, helm, "--set", "dashboard.enabled=true"), "ConfigMap", releaseName+"-dashboard")
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v lack grafana_dashboard=1", cm.GetLabels())
	}
	raw, _, _ := unstructured.NestedString(cm.Object, "data", "fluence.json")
	var dash struct {
		Panels []struct {
			ID      int `json:"id"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(raw), &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	seen := map[string]bool{}
	ids := map[int]bool{}
	var names []string
	metricName := regexp.MustCompile(`\b(?:fluence|scheduler)_[a-z_]+`)
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("dashboard panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		for _, target := range p.Targets {
			for _, n := range metricName.FindAllString(target.Expr, -1) {
				if !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
		}
	}
	if len(names) < 5 {
		t.Fatalf("the dashboard queries only %v", names)
	}
	return names
}

// helmBinary returns $HELM, or helm built from its module into the user's
// cache directory.
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "fluence-test", "helm-"+helmVersion)
	bin := filepath.Join(dir, "helm")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	install := exec.Command("go", "install", helmPackage+"@"+helmVersion)
	install.Dir = t.TempDir() // outside this module: helm has its own dependencies
	install.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=", "GOWORK=off")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install %s@%s: %v\n%s", helmPackage, helmVersion, err, out)
	}
	return bin
}

// runHelm runs helm and returns its combined output.
func runHelm(helm string, args ...string) (string, error) {
	cmd := exec.Command(helm, args...)
	// Keep helm away from the user's repositories, plugins and caches.
	home, err := os.MkdirTemp("", "helm-home")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// renderChart runs helm template on the chart with the extra helm
// arguments and returns the objects it renders.
func renderChart(t *testing.T, helm string, extra ...string) []*unstructured.Unstructured {
	t.Helper()
	args := append([]string{"template", releaseName, chartDir, "--namespace", releaseNamespace}, extra...)
	manifest, err := runHelm(helm, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, manifest)
	}
	return decodeManifest(t, manifest)
}

// decodeManifest splits a multi-document manifest into objects.
func decodeManifest(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("decoding the rendered chart: %v", err)
		}
		if m != nil {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

func findObject(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("the rendered chart has no %s %s", kind, name)
	return nil
}

// yamlField returns one top-level field of a YAML document.
func yamlField(t *testing.T, doc, field string) any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return m[field]
}

// containerArgs returns the scheduler container's arguments after checking
// that its --config names the key of the ConfigMap the pod mounts.
func containerArgs(t *testing.T, deployment, configMap *unstructured.Unstructured) []string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	volumes, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "volumes")
	if len(containers) != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", len(containers))
	}
	container := containers[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(container, "args")
	mounts, _, _ := unstructured.NestedSlice(container, "volumeMounts")
	var configPath string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			configPath = v
		}
	}
	var mounted string
	for _, m := range mounts {
		m := m.(map[string]any)
		for _, v := range volumes {
			v := v.(map[string]any)
			cmName, _, _ := unstructured.NestedString(v, "configMap", "name")
			if v["name"] == m["name"] && cmName == configMap.GetName() {
				mounted = fmt.Sprint(m["mountPath"]) + "/config.yaml"
			}
		}
	}
	if configPath == "" || configPath != mounted {
		t.Fatalf("the scheduler reads --config=%q, but the ConfigMap's config.yaml is mounted at %q", configPath, mounted)
	}
	return args
}

// apply creates the objects, as `helm install` would.
func (c *cluster) apply(objs []*unstructured.Unstructured) {
	c.t.Helper()
	c.eachResource(objs, func(ri dynamic.ResourceInterface, o *unstructured.Unstructured) {
		if _, err := ri.Create(c.Ctx, o, metav1.CreateOptions{}); err != nil {
			c.t.Fatalf("creating %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	})
}

// eachResource calls fn with each object and the dynamic client of its
// resource (in its namespace when namespaced), found through discovery.
func (c *cluster) eachResource(objs []*unstructured.Unstructured, fn func(dynamic.ResourceInterface, *unstructured.Unstructured)) {
	c.t.Helper()
	groups, err := restmapper.GetAPIGroupResources(discovery.NewDiscoveryClientForConfigOrDie(c.Config))
	if err != nil {
		c.t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	dyn := dynamic.NewForConfigOrDie(c.Config)
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			c.t.Fatalf("%s %s: %v", gvk.Kind, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		fn(ri, o)
	}
}

// waitForRBAC waits until the API server's authorizer has seen the chart's
// bindings (it learns of them through its own informers): a refusal in the
// scheduler's first seconds would otherwise be the test's doing.
func (c *cluster) waitForRBAC(ns, sa string) {
	c.t.Helper()
	user := "system:serviceaccount:" + ns + ":" + sa
	checks := []authorizationv1.ResourceAttributes{
		{Verb: "list", Group: "", Resource: "pods"},                                                                  // system:kube-scheduler
		{Verb: "list", Group: "storage.k8s.io", Resource: "storageclasses"},                                          // system:volume-scheduler
		{Verb: "list", Group: "batch", Resource: "jobs"},                                                             // the chart's ClusterRole
		{Verb: "watch", Group: "scheduling.k8s.io", Resource: "podgroups"},                                           // Kubernetes PodGroups (not served here:
		{Verb: "update", Group: "scheduling.k8s.io", Resource: "podgroups", Subresource: "status", Namespace: ns},    // the bootstrap role grants them only with GenericWorkload)
		{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: ns, Name: "fluence-scheduler"}, // its Role
		// The secure port's authentication reads it once at start.
		{Verb: "get", Group: "", Resource: "configmaps", Namespace: "kube-system", Name: "extension-apiserver-authentication"},
	}
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, attrs := range checks {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
				ResourceAttributes: &attrs,
			}}
			got, err := c.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			if err != nil || !got.Status.Allowed {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		c.t.Fatalf("the chart's service account %s was not authorized within 30 s", user)
	}
}

// serviceAccountToken returns a bound token for the service account.
func (c *cluster) serviceAccountToken(ns, name string) string {
	c.t.Helper()
	tr, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(c.Ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("token for service account %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// metricsScraperToken makes a service account allowed to get /metrics, as
// a Prometheus installation has, and returns its token.
func (c *cluster) metricsScraperToken() string {
	c.t.Helper()
	const name = "metrics-scraper"
	rbac := c.Client.RbacV1()
	if _, err := c.Client.CoreV1().ServiceAccounts(releaseNamespace).Create(c.Ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	if _, err := rbac.ClusterRoles().Create(c.Ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(c.Ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: releaseNamespace}},
	}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	return c.serviceAccountToken(releaseNamespace, name)
}

// jobPods creates a suspended Job of the given parallelism and returns (not
// created) its pods, as the Job controller would make them.
func (c *cluster) jobPods(name string, parallelism int32) []*corev1.Pod {
	c.t.Helper()
	job := c.createOwnedJob(name, parallelism, nil, nil)
	var pods []*corev1.Pod
	for i := range parallelism {
		pods = append(pods, ownedPod(fmt.Sprintf("%s-%d", name, i), job))
	}
	return pods
}

// httpsGet polls url until it answers (the server may still be starting)
// and returns the status and body; the server's certificate is self-signed.
func httpsGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}
	var code int
	var body string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		code, body = resp.StatusCode, string(b)
		return true, nil
	})
	if err != nil {
		t.Fatalf("GET %s: no answer within 30 s", url)
	}
	return code, body
}

// startChartScheduler runs the fluence binary as the chart's Deployment
// runs it (its arguments, the ConfigMap's configuration, its service
// account's token), except for the configuration's path and the secure
// port. Outside a pod the secure port's delegated authentication and
// authorization need the kubeconfig named; in a pod they use the
// in-cluster credentials.
func (c *cluster) startChartScheduler(t *testing.T, deployment *unstructured.Unstructured, config string, args []string, port int) *process {
	t.Helper()
	return c.startChartSchedulerBinary(t, buildFluence(t), deployment, config, args, port)
}

// startChartSchedulerBinary is startChartScheduler with a binary of the
// caller's (the one from a release's image).
func (c *cluster) startChartSchedulerBinary(t *testing.T, bin string, deployment *unstructured.Unstructured, config string, args []string, port int) *process {
	t.Helper()
	sa, _, _ := unstructured.NestedString(deployment.Object, "spec", "template", "spec", "serviceAccountName")
	c.waitForRBAC(releaseNamespace, sa)
	kubeconfig := c.kubeconfigWithToken(c.serviceAccountToken(releaseNamespace, sa))
	configFile := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(configFile, []byte(setClient(config, "kubeconfig", kubeconfig)), 0o600); err != nil {
		t.Fatal(err)
	}
	args = slices.Clone(args)
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "--config="):
			args[i] = "--config=" + configFile
		case strings.HasPrefix(a, "--secure-port="):
			args[i] = fmt.Sprintf("--secure-port=%d", port)
		}
	}
	args = append(args, "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig)
	return startProcess(t, bin, args...)
}
