package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/fluence-sched/fluence/pkg/inspect"
	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// Replicas of `fluence scheduler` with leader election, as the chart runs
// them with replicas > 1, each a separate process on one Lease. While the
// leader lives the standby writes nothing (no events, no PodGroup status or
// condition) and says it decides nothing (503 from the inspection API, no
// fluence series in /metrics). The leader is killed with SIGKILL while a
// stream of groups is being created: the standby takes over, every group
// binds whole and no node is over-committed. Then a new leader hands over
// on SIGTERM to a third replica, which binds more groups.
//
// Each replica runs the binary under a name of its own: the API server
// names the writer of an object (managedFields) by the program's name, so
// what each replica wrote can be told apart.
func TestReplicas(t *testing.T) {
	c := newCluster(t)
	c.installPodGroupCRD()
	c.addNodes("node", 8, "4", "8Gi")
	inv := startInvariants(c)
	startNodeSim(c, simOptions{})

	bin := buildFluence(t)
	kubeconfig := c.kubeconfigFile()
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte(setClient(fluenceConfig(t, nil), "kubeconfig", kubeconfig)), 0o600); err != nil {
		t.Fatal(err)
	}
	ports, err := localcluster.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	start := func(name string, port int) *replica {
		return startReplica(t, bin, name, config, kubeconfig, port, c.Config.BearerToken)
	}

	a := start("fluence-a", ports[0])
	a.waitLeading(t, time.Minute)
	b := start("fluence-b", ports[1])
	waitReady(t, c.Ctx, b.url)

	// (a) The leader places a labelled group and a PodGroup's; the standby
	// writes nothing.
	c.createPodGroup("pg", 2)
	first := withPhase("a", podGroupMembers("pg", 2, "1"))
	for i := range 3 {
		first = append(first, withPhase("a", groupPods(fmt.Sprintf("a%d", i), 2, "1", time.Second, 5*time.Second))...)
	}
	c.createPods(first...)
	if _, err := c.waitPodsBound(time.Minute, len(first), metav1.ListOptions{LabelSelector: phaseLabel + "=a"}, nil); err != nil {
		t.Fatalf("the first groups are not bound: %v", err)
	}
	c.waitPodGroupWrittenBy("pg", a.name)
	if got := c.podGroupWriters("pg"); slices.Contains(got, b.name) {
		t.Errorf("the standby wrote PodGroup pg (writers %v)", got)
	}
	if n := len(c.eventsBy(b.name, time.Time{})); n > 0 {
		t.Errorf("the standby recorded %d events, first: %s", n, c.eventsBy(b.name, time.Time{})[0])
	}
	if len(c.eventsBy(a.name, time.Time{})) == 0 {
		t.Errorf("the leader recorded no events: the events' writer is not told by its name")
	}
	if code, body := b.get(t, inspect.PathPrefix+"/groups"); code != http.StatusServiceUnavailable || !strings.Contains(body, "standby") {
		t.Errorf("the standby's inspection API: %d %s, want 503 saying it is a standby", code, body)
	}
	if code, body := a.get(t, "/metrics"); code != http.StatusOK || !strings.Contains(body, "\nfluence_groups{") {
		t.Errorf("the leader's /metrics: %d, without fluence_groups:\n%s", code, fluenceLines(body))
	}
	if code, body := b.get(t, "/metrics"); code != http.StatusOK || strings.Contains(body, "\nfluence_") {
		t.Errorf("the standby's /metrics: %d, with fluence series:\n%s", code, fluenceLines(body))
	}

	// (b) The leader dies while groups are being created.
	killed := make(chan time.Time, 1)
	created := make(chan error, 1)
	go func() {
		for i := range 30 {
			g := withPhase("b", groupPods(fmt.Sprintf("b%02d", i), 2+i%2, "1", 3*time.Second, 10*time.Second))
			for _, p := range g {
				if _, err := c.Client.CoreV1().Pods(c.NS).Create(c.Ctx, p, metav1.CreateOptions{}); err != nil {
					created <- fmt.Errorf("creating pod %s: %w", p.Name, err)
					return
				}
			}
			if i == 10 {
				killed <- time.Now()
				_ = a.proc.cmd.Process.Kill()
			}
			time.Sleep(150 * time.Millisecond)
		}
		created <- nil
	}()
	streamPods := 0
	for i := range 30 {
		streamPods += 2 + i%2
	}
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	killedAt := <-killed
	<-a.proc.exited
	b.waitLeading(t, time.Minute)
	// The failover time docs/scheduler.md quotes: bounded by the lease
	// duration (4 s here) and the retry period (1 s).
	t.Logf("failover: the standby leads %.1f s after the leader was killed", time.Since(killedAt).Seconds())
	if _, err := c.waitPodsBound(2*time.Minute, streamPods, metav1.ListOptions{LabelSelector: phaseLabel + "=b"}, nil); err != nil {
		t.Errorf("not every pod of the stream is bound after the takeover: %v", err)
	}
	if evs := c.eventsBefore(b.name, killedAt); len(evs) > 0 {
		t.Errorf("the standby recorded %d events before the leader died, first: %s", len(evs), evs[0])
	}
	if code, body := b.get(t, inspect.PathPrefix+"/groups"); code != http.StatusOK {
		t.Errorf("the new leader's inspection API: %d %s", code, body)
	}

	// (c) A third replica stands by; the leader hands over on SIGTERM.
	third := start("fluence-c", ports[2])
	waitReady(t, c.Ctx, third.url)
	if err := b.proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.proc.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the leader did not stop within 30 s of SIGTERM")
	}
	handedAt := time.Now()
	third.waitLeading(t, time.Minute)
	t.Logf("handover: the standby leads %.1f s after the leader stopped on SIGTERM", time.Since(handedAt).Seconds())
	var last []*corev1.Pod
	for i := range 3 {
		last = append(last, withPhase("c", groupPods(fmt.Sprintf("c%d", i), 3, "1", time.Second, 5*time.Second))...)
	}
	c.createPods(last...)
	if _, err := c.waitPodsBound(time.Minute, len(last), metav1.ListOptions{LabelSelector: phaseLabel + "=c"}, nil); err != nil {
		t.Errorf("the groups created after the handover are not bound: %v", err)
	}
	if evs := c.eventsBefore(third.name, handedAt); len(evs) > 0 {
		t.Errorf("the third replica recorded %d events while it stood by, first: %s", len(evs), evs[0])
	}
	if v := inv.violations(); len(v) > 0 {
		t.Errorf("over-commit or binding to a missing node:\n%s", strings.Join(v, "\n"))
	}
	if p := inv.partialGroups(); len(p) > 0 {
		t.Errorf("groups bound partly:\n%s", strings.Join(p, "\n"))
	}
	// No fault but the leaders' own: a withdrawal means a replica placed a
	// group on room kube-scheduler's cache did not have (cacheorder.go).
	for _, r := range []*replica{a, b, third} {
		if w := withReason(c.eventsBy(r.name, time.Time{}), "FluenceGroupWithdrawn"); len(w) > 0 {
			t.Errorf("%s withdrew %d allocations in a run without faults but the leaders':\n%s", r.name, len(w), strings.Join(w, "\n"))
		}
	}
}

// withReason keeps the events (as eventsBy formats them) of one reason.
func withReason(events []string, reason string) []string {
	return slices.DeleteFunc(slices.Clone(events), func(e string) bool { return !strings.Contains(e, " "+reason+" ") })
}

// phaseLabel marks the pods of each part of TestReplicas.
const phaseLabel = "fluence-it/phase"

func withPhase(phase string, pods []*corev1.Pod) []*corev1.Pod {
	for _, p := range pods {
		p.Labels[phaseLabel] = phase
	}
	return pods
}

// replica is one `fluence scheduler` process with leader election.
type replica struct {
	name  string // the program's name: the writer the API server records
	url   string // its secure port
	token string // credentials its delegated authorization accepts
	proc  *process
}

// startReplica runs bin as name, on the Lease every replica of the test
// shares, with lease times short enough for a takeover within seconds.
func startReplica(t *testing.T, bin, name, config, kubeconfig string, port int, token string) *replica {
	t.Helper()
	link := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	proc := startProcess(t, link, "scheduler", "--config", config, "-v", "2",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
		"--leader-elect=true", "--leader-elect-resource-namespace=kube-system", "--leader-elect-resource-name=fluence-replicas",
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=1s")
	return &replica{name: name, url: fmt.Sprintf("https://127.0.0.1:%d", port), token: token, proc: proc}
}

// waitLeading waits until the replica holds the Lease.
func (r *replica) waitLeading(t *testing.T, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return strings.Contains(r.proc.logs.String(), "Successfully acquired lease"), nil
	})
	if err != nil {
		t.Fatalf("%s does not lead within %v", r.name, timeout)
	}
}

// get asks the replica's secure port, again while it refuses the caller:
// its delegated authentication and authorization ask the API server, and
// a replica just started may not reach it yet.
func (r *replica) get(t *testing.T, path string) (int, string) {
	t.Helper()
	var code int
	var body string
	_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code, body = httpsGet(t, r.url+path, r.token)
		return code != http.StatusUnauthorized && code != http.StatusForbidden, nil
	})
	return code, body
}

func fluenceLines(metrics string) string {
	var out []string
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, "fluence_") {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return tail(metrics, 5)
	}
	return strings.Join(out[:min(len(out), 10)], "\n")
}

// eventsBy returns the events of c.NS the named program created, at or
// after since, as "time reason object: note".
func (c *cluster) eventsBy(manager string, since time.Time) []string {
	return c.events(manager, func(at time.Time) bool { return !at.Before(since) })
}

// eventsBefore returns the events of c.NS the named program created before t.
func (c *cluster) eventsBefore(manager string, t time.Time) []string {
	return c.events(manager, func(at time.Time) bool { return at.Before(t) })
}

func (c *cluster) events(manager string, keep func(time.Time) bool) []string {
	c.t.Helper()
	list, err := c.Client.EventsV1().Events(c.NS).List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		at := e.EventTime.Time
		if at.IsZero() {
			at = e.CreationTimestamp.Time
		}
		if keep(at) && slices.ContainsFunc(e.ManagedFields, func(f metav1.ManagedFieldsEntry) bool { return f.Manager == manager }) {
			out = append(out, fmt.Sprintf("%s %s %s: %s", at.Format(time.RFC3339Nano), e.Reason, e.Regarding.Name, e.Note))
		}
	}
	slices.Sort(out)
	return out
}

// podGroupWriters returns the programs that wrote the PodGroup.
func (c *cluster) podGroupWriters(name string) []string {
	c.t.Helper()
	pg, err := dynamic.NewForConfigOrDie(c.Config).Resource(podGroupGVR).Namespace(c.NS).Get(c.Ctx, name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, f := range pg.GetManagedFields() {
		out = append(out, f.Manager)
	}
	return out
}

// waitPodGroupWrittenBy waits until the named program wrote the PodGroup.
func (c *cluster) waitPodGroupWrittenBy(name, manager string) {
	c.t.Helper()
	var last []string
	err := wait.PollUntilContextTimeout(c.Ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		last = c.podGroupWriters(name)
		return slices.Contains(last, manager), nil
	})
	if err != nil {
		c.t.Fatalf("%s did not write PodGroup %s within 30 s (writers: %v)", manager, name, last)
	}
}
