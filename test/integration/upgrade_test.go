package integration

import (
	"bytes"
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// upgradeFrom is the revision TestUpgradeAndRollback upgrades from and
// rolls back to: the last commit of the previous round of work, whose
// fresh-clone CI passed. FLUENCE_UPGRADE_FROM names another (a tag, once
// releases are tagged).
const upgradeFrom = "35b7f89"

// TestUpgradeAndRollback replaces the scheduler binary under running,
// reserved and waiting groups: the previous version's, then this one's,
// then the previous one's again (a rollback), each a separate process on
// one Lease, stopped on SIGTERM as a rolling update stops it. Four 4-CPU
// nodes: "run" (two whole-node pods, 40 s) runs; "wait" (four whole-node
// pods) is reserved behind it; "mid" (one, 15 s), backfilled by this
// version, must be read by the previous one after the rollback (the allocation annotation, read
// in both directions). Nothing running is moved or evicted, no group is
// bound in part, no allocation withdrawn, and "wait" binds whole once
// "run" has ended, under the rolled-back version.
//
// The previous version is built from the repository's own history (git
// archive of upgradeFrom, go build), with the same module cache.
func TestUpgradeAndRollback(t *testing.T) {
	from := cmp.Or(os.Getenv("FLUENCE_UPGRADE_FROM"), upgradeFrom)
	oldBin := buildFluenceAt(t, from)
	newBin := buildFluence(t)

	c := newCluster(t)
	c.addNodes("node", 4, "4", "8Gi")
	inv := startInvariants(c)
	startNodeSim(c, simOptions{})
	kubeconfig := c.kubeconfigFile()
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte(setClient(fluenceConfig(t, nil), "kubeconfig", kubeconfig)), 0o600); err != nil {
		t.Fatal(err)
	}
	ports, err := localcluster.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	var replicas []*replica
	start := func(bin, name string, port int) *replica {
		r := startReplica(t, bin, name, config, kubeconfig, port, c.Config.BearerToken)
		r.waitLeading(t, time.Minute)
		replicas = append(replicas, r)
		return r
	}
	stop := func(r *replica) {
		if err := r.proc.interrupt(syscall.SIGTERM, 30*time.Second); err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
	}
	byGroup := func(g string) metav1.ListOptions {
		return metav1.ListOptions{LabelSelector: "fluence.flux-framework.org/pod-group=" + g}
	}

	// The previous version places "run" and reserves "wait".
	old := start(oldBin, "fluence-previous", ports[0])
	c.createPods(groupPods("run", 2, "4", 40*time.Second, 50*time.Second)...)
	run, err := c.waitPodsBound(time.Minute, 2, byGroup("run"), nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	c.createPods(groupPods("wait", 4, "4", 5*time.Second, 10*time.Second)...)
	c.waitForEvent(30*time.Second, "wait-0", "FluenceGroupReserved", "reserved to start")

	// Upgrade: this version takes over.
	stop(old)
	cur := start(newBin, "fluence-current", ports[1])
	// It fits before wait's reserved start (backfill), and still runs when
	// the previous version comes back.
	c.createPods(groupPods("mid", 1, "4", 15*time.Second, 20*time.Second)...)
	if _, err := c.waitPodsBound(time.Minute, 1, byGroup("mid"), nil); err != nil {
		t.Fatalf("mid, under this version: %v", err)
	}
	if n := c.boundCount(names(groupPodsNamed("wait", 4))...); n != 0 {
		t.Fatalf("%d of wait's pods bound while run holds half the nodes and mid a third of the rest", n)
	}

	// Rollback: the previous version again.
	stop(cur)
	start(oldBin, "fluence-rolled-back", ports[2])
	wait4, err := c.waitPodsBound(2*time.Minute, 4, byGroup("wait"), nil)
	if err != nil {
		t.Fatalf("wait did not bind whole after run ended, under the rolled-back version: %s", describePods(c.listPods(t)))
	}
	for _, p := range wait4 {
		if p.Spec.NodeName == "" {
			t.Errorf("wait's pod %s unbound", p.Name)
		}
	}

	// run ran where it was placed, to its end, untouched.
	ended := map[types.UID]corev1.Pod{}
	for _, p := range c.listPods(t) {
		ended[p.UID] = p
	}
	for _, p := range run {
		if cur, ok := ended[p.UID]; ok && (cur.Spec.NodeName != p.Spec.NodeName || cur.Status.Phase == corev1.PodFailed) {
			t.Errorf("run's pod %s: %s on %s, was bound to %s", p.Name, cur.Status.Phase, cur.Spec.NodeName, p.Spec.NodeName)
		}
	}
	// The previous version may withdraw a group placed on a node whose
	// ended pod kube-scheduler's cache still counts (the race this
	// version closes); this one must not.
	for _, r := range replicas {
		w := withReason(c.eventsBy(r.name, time.Time{}), "FluenceGroupWithdrawn")
		switch {
		case len(w) > 0 && r.name == "fluence-current":
			t.Errorf("%s withdrew %d allocations:\n%s", r.name, len(w), strings.Join(w, "\n"))
		case len(w) > 0:
			t.Logf("%s (the previous version) withdrew %d allocations:\n%s", r.name, len(w), strings.Join(w, "\n"))
		}
	}
	if v := inv.violations(); len(v) > 0 {
		t.Errorf("over-commit or binding to a missing node:\n%s", strings.Join(v, "\n"))
	}
	if p := inv.partialGroups(); len(p) > 0 {
		t.Errorf("groups bound partly:\n%s", strings.Join(p, "\n"))
	}
}

// groupPodsNamed are the names groupPods gives a group's pods, as pods.
func groupPodsNamed(group string, n int) []*corev1.Pod {
	return groupPods(group, n, "1", 0, 0)
}

// buildFluenceAt builds cmd/fluence as it was at rev, from the
// repository's history, into a temporary directory.
func buildFluenceAt(t *testing.T, rev string) string {
	t.Helper()
	src := sourceAt(t, rev)
	bin := filepath.Join(t.TempDir(), "fluence-"+rev)
	build := exec.Command("go", "build", "-o", bin, "./cmd/fluence")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building fluence at %s: %v\n%s", rev, err, out)
	}
	return bin
}

// TestChartUpgradeAndRollback installs the previous version's chart (from
// the repository's history, as TestUpgradeAndRollback builds its binary),
// upgrades to this chart and rolls back, with real helm on a real API
// server: each step applies (no immutable field changed, no object left
// over that the other version does not render), and after each the
// release's objects are the ones that version renders.
func TestChartUpgradeAndRollback(t *testing.T) {
	from := cmp.Or(os.Getenv("FLUENCE_UPGRADE_FROM"), upgradeFrom)
	src := sourceAt(t, from)
	helm := helmBinary(t)
	c := newFullCluster(t)
	kubeconfig := c.kubeconfigFile()
	home := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(helm, append(args, "--kubeconfig", kubeconfig)...)
		cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
			"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// The objects a chart renders, as kind/name, and its ConfigMap's text.
	rendered := func(chart string) (map[string]bool, string) {
		t.Helper()
		out, err := runHelm(helm, "template", releaseName, chart, "--namespace", releaseNamespace)
		if err != nil {
			t.Fatalf("helm template %s: %v\n%s", chart, err, out)
		}
		names, cfg := map[string]bool{}, ""
		for _, o := range decodeManifest(t, out) {
			names[o.GetKind()+"/"+o.GetName()] = true
			if o.GetKind() == "ConfigMap" && o.GetName() == releaseName+"-config" {
				cfg, _, _ = unstructured.NestedString(o.Object, "data", "config.yaml")
			}
		}
		return names, cfg
	}
	check := func(step, chart string) {
		t.Helper()
		names, want := rendered(chart)
		cm, err := c.Client.CoreV1().ConfigMaps(releaseNamespace).Get(c.Ctx, releaseName+"-config", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("after %s: the ConfigMap: %v", step, err)
		}
		if got := cm.Data["config.yaml"]; got != want {
			t.Errorf("after %s: the scheduler's configuration is not the one its chart renders", step)
		}
		d, err := c.Client.AppsV1().Deployments(releaseNamespace).Get(c.Ctx, releaseName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("after %s: the Deployment: %v", step, err)
		}
		if !names["Deployment/"+d.Name] {
			t.Errorf("after %s: Deployment %s is not one its chart renders", step, d.Name)
		}
		// An object of the other version's left behind.
		apiSvc := c.apiServiceExists("v1alpha1.inspect.fluence.flux-framework.org")
		if apiSvc != names["APIService/v1alpha1.inspect.fluence.flux-framework.org"] {
			t.Errorf("after %s: the APIService exists: %v, rendered: %v", step, apiSvc, !apiSvc)
		}
	}
	previous := filepath.Join(src, "deploy", "helm", "fluence")
	run("install", releaseName, previous, "--namespace", releaseNamespace, "--create-namespace")
	check("installing "+from+"'s chart", previous)
	run("upgrade", releaseName, chartDir, "--namespace", releaseNamespace)
	check("upgrading to this chart", chartDir)
	run("rollback", releaseName, "1", "--namespace", releaseNamespace)
	check("rolling back to "+from+"'s chart", previous)
}

// sourceAt unpacks the repository as it was at rev into a temporary
// directory; the test is skipped where rev is not in the history (a
// shallow clone).
func sourceAt(t *testing.T, rev string) string {
	t.Helper()
	have := exec.Command("git", "cat-file", "-e", rev+"^{commit}")
	have.Dir = "../.."
	if err := have.Run(); err != nil {
		t.Skipf("revision %s is not in this repository's history (%v): fetch it, or name another with FLUENCE_UPGRADE_FROM", rev, err)
	}
	src := t.TempDir()
	archive := exec.Command("git", "archive", "--format=tar", rev)
	archive.Dir = "../.."
	var tarball, stderr bytes.Buffer
	archive.Stdout, archive.Stderr = &tarball, &stderr
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", rev, err, stderr.String())
	}
	untar := exec.Command("tar", "-x", "-C", src)
	untar.Stdin = &tarball
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("unpacking %s: %v\n%s", rev, err, out)
	}
	return src
}

// apiServiceExists reports whether the API server has the APIService.
func (c *cluster) apiServiceExists(name string) bool {
	c.t.Helper()
	gvr := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	_, err := dynamic.NewForConfigOrDie(c.Config).Resource(gvr).Get(c.Ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		c.t.Fatalf("APIService %s: %v", name, err)
	}
	return err == nil
}
