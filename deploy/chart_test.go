package deploy

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/strvals"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/fluence-sched/fluence/internal/image"
)

// The chart is rendered here by Helm's own library, as `helm template`
// renders it (values checked against values.schema.json, then the
// templates), without a helm binary or a cluster; test/integration
// renders it with the helm binary and applies it to an API server.
const (
	chartDir    = "helm/fluence"
	releaseName = "fluence"
	releaseNS   = "fluence-system"
)

// object is one rendered manifest.
type object map[string]any

// render renders the chart with sets given as `helm --set` takes them
// (a=b,c.d=e); a value in a set beginning with json: is given as
// `--set-json` takes it.
func render(t *testing.T, sets ...string) ([]object, error) {
	t.Helper()
	chrt, err := loader.LoadDir(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{}
	for _, s := range sets {
		if j, ok := strings.CutPrefix(s, "json:"); ok {
			err = strvals.ParseJSON(j, vals)
		} else {
			err = strvals.ParseInto(s, vals)
		}
		if err != nil {
			t.Fatalf("--set %s: %v", s, err)
		}
	}
	rv, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{Name: releaseName, Namespace: releaseNS, IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	// Strict, as `helm lint --strict` renders: a template that reads a
	// value the chart does not define fails.
	files, err := engine.Engine{Strict: true}.Render(chrt, rv)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		// As helm template: manifests only, not NOTES.txt.
		if strings.HasSuffix(name, ".yaml") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var objs []object
	for _, name := range names {
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(files[name]), 4096)
		for {
			var o object
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v\n%s", name, err, files[name])
			}
			if o != nil {
				objs = append(objs, o)
			}
		}
	}
	return objs, nil
}

// mustRender renders the chart, which must accept the values.
func mustRender(t *testing.T, sets ...string) []object {
	t.Helper()
	objs, err := render(t, sets...)
	if err != nil {
		t.Fatalf("rendering the chart with %v: %v", sets, err)
	}
	return objs
}

// refused checks that the chart refuses the values with an error naming want.
func refused(t *testing.T, want string, sets ...string) {
	t.Helper()
	if _, err := render(t, sets...); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("rendering with %v: error %v, want one naming %q", sets, err, want)
	}
}

// find returns the object of that kind and name, or nil.
func find(objs []object, kind, name string) object {
	for _, o := range objs {
		if o["kind"] == kind && get(o, "metadata", "name") == name {
			return o
		}
	}
	return nil
}

func mustFind(t *testing.T, objs []object, kind, name string) object {
	t.Helper()
	o := find(objs, kind, name)
	if o == nil {
		t.Fatalf("the chart renders no %s %s", kind, name)
	}
	return o
}

// kinds counts the rendered objects by kind.
func kinds(objs []object) map[string]int {
	n := map[string]int{}
	for _, o := range objs {
		n[fmt.Sprint(o["kind"])]++
	}
	return n
}

// get walks maps by key and lists by index ("0"); nil when absent.
func get(v any, path ...string) any {
	for _, p := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[p]
		case object:
			v = c[p]
		case []any:
			var i int
			if _, err := fmt.Sscan(p, &i); err != nil || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// container is the Deployment's one container.
func container(t *testing.T, objs []object) map[string]any {
	t.Helper()
	cs, _ := get(mustFind(t, objs, "Deployment", releaseName), "spec", "template", "spec", "containers").([]any)
	if len(cs) != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", len(cs))
	}
	return cs[0].(map[string]any)
}

// suggestedRequests reads the sizing table of docs/install.md: the
// suggested requests of the row for that many nodes ("5,000").
func suggestedRequests(t *testing.T, nodes string) (cpu, memory string) {
	t.Helper()
	doc, err := os.ReadFile("../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(nodes) + ` \|.*\| ` + "`cpu: ([^`]+)`, `memory: ([^`]+)`" + ` \|$`).FindSubmatch(doc)
	if row == nil {
		t.Fatalf("docs/install.md's sizing table has no suggested requests for %s nodes", nodes)
	}
	return string(row[1]), string(row[2])
}

// The defaults follow the measurements: the requests are the sizing
// table's for 5,000 nodes with a memory limit of twice the request and no
// CPU limit, and the pod ranks with the cluster's own components.
func TestChartDefaultsFromSizing(t *testing.T) {
	objs := mustRender(t)
	c := container(t, objs)
	cpu, memory := suggestedRequests(t, "5,000")
	if got := get(c, "resources", "requests"); fmt.Sprint(get(got, "cpu")) != cpu || fmt.Sprint(get(got, "memory")) != memory {
		t.Errorf("requests %v, want the sizing table's for 5,000 nodes: cpu %s, memory %s", got, cpu, memory)
	}
	if !strings.HasSuffix(memory, "Mi") {
		t.Fatalf("the table's memory %q is not in Mi", memory)
	}
	var mi int
	fmt.Sscanf(memory, "%dMi", &mi)
	if got, want := fmt.Sprint(get(c, "resources", "limits", "memory")), fmt.Sprintf("%dGi", 2*mi/1024); got != want || 2*mi%1024 != 0 {
		t.Errorf("memory limit %s, want twice the request, %s", got, want)
	}
	if got := get(c, "resources", "limits", "cpu"); got != nil {
		t.Errorf("CPU limit %v: a throttled scheduler holds every waiting pod", got)
	}
	pod := get(mustFind(t, objs, "Deployment", releaseName), "spec", "template", "spec")
	if got := get(pod, "priorityClassName"); got != "system-cluster-critical" {
		t.Errorf("priorityClassName %v, want system-cluster-critical", got)
	}
	for _, o := range mustRender(t, "priorityClassName=") {
		if o["kind"] == "Deployment" && get(o, "spec", "template", "spec", "priorityClassName") != nil {
			t.Error("priorityClassName empty still names a class")
		}
	}
	refused(t, "/priorityClassName", "priorityClassName=Critical")
	// Off by default: they need CRDs or a CNI the cluster may lack.
	for _, kind := range []string{"NetworkPolicy", "Certificate", "ServiceMonitor", "PrometheusRule"} {
		if n := kinds(objs)[kind]; n > 0 {
			t.Errorf("%d %s rendered by default", n, kind)
		}
	}
}

// The container runs the image's binary with the CLI's arguments, the
// chart's flags first and extraArgs after them, in their order; a flag the
// chart sets from another value cannot be given twice.
func TestChartArgs(t *testing.T) {
	c := container(t, mustRender(t))
	if got := strs(get(c, "command")); !slices.Equal(got, []string{image.BinaryPath}) {
		t.Errorf("command %v, want the image's binary %s", got, image.BinaryPath)
	}
	base := strs(get(c, "args"))
	if len(base) == 0 || base[0] != "scheduler" {
		t.Fatalf("args %v: want the scheduler command first", base)
	}
	c = container(t, mustRender(t, "extraArgs={--logging-format=json,--feature-gates=GenericWorkload=true}"))
	want := append(slices.Clone(base), "--logging-format=json", "--feature-gates=GenericWorkload=true")
	if got := strs(get(c, "args")); !slices.Equal(got, want) {
		t.Errorf("args %v, want %v", got, want)
	}
	refused(t, "/extraArgs", "extraArgs={json}")
	for _, flag := range []string{"--config=/x.yaml", "--secure-port=1", "--v=5", "--tls-cert-file=/c"} {
		refused(t, "which the chart sets itself", "extraArgs={"+flag+"}")
	}
}

// The lease settings reach kube-scheduler's configuration, and settings it
// would refuse at start are refused at install.
func TestChartLease(t *testing.T) {
	lease := func(sets ...string) map[string]any {
		t.Helper()
		var config map[string]any
		data := fmt.Sprint(get(mustFind(t, mustRender(t, sets...), "ConfigMap", releaseName+"-config"), "data", "config.yaml"))
		if err := yaml.Unmarshal([]byte(data), &config); err != nil {
			t.Fatal(err)
		}
		le, _ := config["leaderElection"].(map[string]any)
		return le
	}
	for _, tc := range []struct {
		sets []string
		want [3]string // leaseDuration, renewDeadline, retryPeriod
	}{
		{nil, [3]string{"15s", "10s", "2s"}},
		{[]string{"leaderElection.leaseDuration=1m", "leaderElection.renewDeadline=45s", "leaderElection.retryPeriod=5s"}, [3]string{"1m", "45s", "5s"}},
		{[]string{"leaderElection.leaseDuration=1m30s", "leaderElection.renewDeadline=1m"}, [3]string{"1m30s", "1m", "2s"}},
	} {
		le := lease(tc.sets...)
		if got := [3]string{fmt.Sprint(le["leaseDuration"]), fmt.Sprint(le["renewDeadline"]), fmt.Sprint(le["retryPeriod"])}; got != tc.want {
			t.Errorf("with %v leaderElection has lease, renew, retry %v, want %v", tc.sets, got, tc.want)
		}
		if le["leaderElect"] != true || le["resourceName"] != "fluence-scheduler" {
			t.Errorf("with %v leaderElection is %v", tc.sets, le)
		}
	}
	refused(t, "must be shorter than leaseDuration", "leaderElection.renewDeadline=15s")
	refused(t, "must be shorter than leaseDuration", "leaderElection.leaseDuration=30s", "leaderElection.renewDeadline=1m")
	refused(t, "divided by 1.2", "leaderElection.retryPeriod=9s")
	refused(t, "/leaderElection/leaseDuration", "leaderElection.leaseDuration=soon")
	// Without leader election the lease settings are unused: nothing to check.
	mustRender(t, "leaderElection.enabled=false", "leaderElection.renewDeadline=1m")
}

// The pod meets the Pod Security Standards' restricted profile, which
// SECURITY.md states: checked field by field, as the profile lists them.
func TestChartPodSecurityRestricted(t *testing.T) {
	for _, sets := range [][]string{nil, {"inspect.tlsSecret=fluence-tls"}, {"inspect.certManager.enabled=true", "inspect.certManager.issuerRef.name=ca"}} {
		pod := get(mustFind(t, mustRender(t, sets...), "Deployment", releaseName), "spec", "template", "spec").(map[string]any)
		for _, f := range []string{"hostNetwork", "hostPID", "hostIPC"} {
			if v, ok := pod[f]; ok && v != false {
				t.Errorf("%v: %s is %v", sets, f, v)
			}
		}
		if get(pod, "securityContext", "runAsNonRoot") != true || get(pod, "securityContext", "seccompProfile", "type") != "RuntimeDefault" {
			t.Errorf("%v: pod securityContext %v: want runAsNonRoot and the RuntimeDefault seccomp profile", sets, pod["securityContext"])
		}
		if uid, _ := get(pod, "securityContext", "runAsUser").(float64); uid == 0 {
			t.Errorf("%v: runAsUser %v", sets, get(pod, "securityContext", "runAsUser"))
		}
		for _, v := range pod["volumes"].([]any) {
			for k := range v.(map[string]any) {
				if k != "name" && !slices.Contains([]string{"configMap", "secret", "projected", "emptyDir", "downwardAPI", "persistentVolumeClaim", "ephemeral", "csi"}, k) {
					t.Errorf("%v: volume %v of type %s, which the restricted profile forbids", sets, v, k)
				}
			}
		}
		for _, c := range pod["containers"].([]any) {
			sc := get(c, "securityContext")
			if get(sc, "allowPrivilegeEscalation") != false || get(sc, "privileged") == true {
				t.Errorf("%v: container securityContext %v allows privilege escalation", sets, sc)
			}
			if drop := strs(get(sc, "capabilities", "drop")); !slices.Contains(drop, "ALL") || get(sc, "capabilities", "add") != nil {
				t.Errorf("%v: capabilities %v: want ALL dropped, none added", sets, get(sc, "capabilities"))
			}
			for _, p := range get(c, "ports").([]any) {
				if get(p, "hostPort") != nil {
					t.Errorf("%v: host port %v", sets, p)
				}
			}
		}
	}
}
