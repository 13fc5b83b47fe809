package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
	from := upgradeFrom
	if v := os.Getenv("FLUENCE_UPGRADE_FROM"); v != "" {
		from = v
	}
	have := exec.Command("git", "cat-file", "-e", from+"^{commit}")
	have.Dir = "../.."
	if err := have.Run(); err != nil {
		// A shallow clone, or a source tree without its history.
		t.Skipf("revision %s is not in this repository's history (%v): fetch it, or name another with FLUENCE_UPGRADE_FROM", from, err)
	}
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
	for _, r := range replicas {
		if w := withReason(c.eventsBy(r.name, time.Time{}), "FluenceGroupWithdrawn"); len(w) > 0 {
			t.Errorf("%s withdrew %d allocations:\n%s", r.name, len(w), strings.Join(w, "\n"))
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
	src := t.TempDir()
	archive := exec.Command("git", "archive", "--format=tar", rev)
	archive.Dir = "../.."
	var tarball, stderr bytes.Buffer
	archive.Stdout, archive.Stderr = &tarball, &stderr
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s (the revision the upgrade starts from; FLUENCE_UPGRADE_FROM names another): %v\n%s", rev, err, stderr.String())
	}
	untar := exec.Command("tar", "-x", "-C", src)
	untar.Stdin = &tarball
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("unpacking %s: %v\n%s", rev, err, out)
	}
	bin := filepath.Join(t.TempDir(), "fluence-"+rev)
	build := exec.Command("go", "build", "-o", bin, "./cmd/fluence")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building fluence at %s: %v\n%s", rev, err, out)
	}
	return bin
}
