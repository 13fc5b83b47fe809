package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fluence-sched/fluence/internal/docsh"
)

// guideCheck is what a guide's command must print, beyond succeeding.
type guideCheck struct {
	command string // the whole line, as in the guide
	output  string // a regular expression (multi-line mode)
}

// guideChecks are the outputs the guides describe. Each must meet its
// command, so a guide that drops or rewrites one fails here too.
var guideChecks = []guideCheck{
	{"kubectl fluence explain lammps", `^State:\s+placed$`},
	{"kubectl fluence explain pi", `^State:\s+placed$`},
	{"kubectl fluence groups", `^native-podgroup:train\s+placed\s`},
	{"kubectl fluence explain job:flux-sample", `^State:\s+placed$`},
	{"kubectl fluence explain jobset:trainer", `^State:\s+placed$(?s:.*)driver(?s:.*)workers`},
	{"kubectl fluence nodes", `^node-7\s.*default/gpu-train\(2\)`},
	{"kubectl fluence explain partial", `^State:\s+gathering$(?s:.*)waits for its pods: 2 of 3 exist`},
	{"kubectl fluence explain huge", `^State:\s+rejected$`},
	{"kubectl describe pod huge-0", `cannot be placed on this cluster`},
	{"kubectl fluence explain dedicated", `^Nodes:\s+node-[4-7](, node-[4-7])*$`},
	{"kubectl get pod stock -o jsonpath='{.spec.nodeName}'", `^node-[0-3]$`},
	{"kubectl get podgroups.scheduling.x-k8s.io heat", `^heat\s+Running\s+4\s+4\s+4\s`},
	{"kubectl fluence explain heat", `^Source:\s+podgroup$(?s:.*)^State:\s+placed$`},
	{"kubectl fluence explain wide", `^State:\s+rejected$(?s:.*)spec\.minResources for more than all the nodes offer: cpu 64000m, the nodes have 32000m allocatable in all`},
	{"kubectl fluence explain volcano-podgroup:ocean", `^Source:\s+volcano-podgroup$(?s:.*)^State:\s+placed$`},
	{"kubectl get events --field-selector reason=FluenceUnsupported", `pod group default/volcano-podgroup:ocean asks for Volcano's spec\.minResources, spec\.queue`},
	{"kubectl get pods -l job-name=large", `No resources found`},
	{"kubectl fluence explain job:ranks", `^State:\s+placed$`},
	{"kubectl fluence explain job:large", `^State:\s+placed$`},
	{"kubectl fluence explain sweep", `^Source:\s+label$(?s:.*)^State:\s+gated$(?s:.*)Gate kueue\.x-k8s\.io/admission is on 3 pods: sweep-0, sweep-1, sweep-2`},
	{"kubectl fluence groups -n default", `^sweep\s+placed\s+3\s+3\s+3\s+3\s`},
}

// guideSetups give a page what its cluster has and fluence up lacks,
// before the page's commands run; the page says what it needs. Each runs
// with the page's test and undoes itself when the page is done.
var guideSetups = map[string]func(t *testing.T, kubeconfig string){
	// Volcano's PodGroup CRD, which a cluster gets with Volcano: a stand-in
	// of its group, version and kind (volcanoPodGroupCRD), installed after
	// the scheduler started, which finds it through discovery.
	"migrate-from-volcano.md": func(t *testing.T, kubeconfig string) {
		c := upCluster(t, kubeconfig)
		c.installWorkloadCRD(volcanoPodGroupCRD)
		t.Cleanup(func() { deleteCRD(t, c, volcanoPodGroupCRD) })
	},
}

// The task guides as a reader follows them: every kubectl command of
// every page of docs/tasks, as written and in order, run by bash from the
// repository's root against `fluence up` (started as run-workloads.md
// says, with its arguments), with kubectl built from the
// Kubernetes module (go.mod's tool line) and kubectl fluence from this
// repository on PATH, and the environment fluence up says to export. A
// command that fails fails its page; the outputs the pages describe are
// checked (guideChecks).
func TestTaskGuides(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	guides, err := filepath.Glob("../../docs/tasks/*.md")
	if err != nil || len(guides) == 0 {
		t.Fatalf("no task guides in docs/tasks: %v", err)
	}
	bins := t.TempDir()
	if err := os.Symlink(kubectlBinary(t), filepath.Join(bins, "kubectl")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bins, "kubectl-fluence"), "../../cmd/kubectl-fluence").CombinedOutput(); err != nil {
		t.Fatalf("go build kubectl-fluence: %v\n%s", err, out)
	}
	// run-workloads.md starts the control plane for all the guides.
	ups := docCommands(t, "../../docs/tasks/run-workloads.md", "go run ./cmd/fluence up ")
	if len(ups) != 1 {
		t.Fatalf("docs/tasks/run-workloads.md starts fluence up %d times, want once: %q", len(ups), ups)
	}
	proc := startProcess(t, buildFluence(t), fluenceArgs(t, docsh.Command{Text: ups[0]}.Key())...)
	ready := waitUpReady(t, proc)
	env := append(os.Environ(), "KUBECONFIG="+ready["kubeconfig"], "FLUENCE_SCHEDULER_URL="+ready["scheduler-url"],
		"FLUENCE_SCHEDULER_CA_FILE="+ready["scheduler-ca-file"], "PATH="+bins+string(os.PathListSeparator)+os.Getenv("PATH"))

	checked := map[string]bool{}
	for _, guide := range guides {
		cmds := docCommands(t, guide, "kubectl ")
		t.Run(filepath.Base(guide), func(t *testing.T) {
			if len(cmds) == 0 {
				t.Fatalf("%s shows no kubectl command", guide)
			}
			if setup := guideSetups[filepath.Base(guide)]; setup != nil {
				setup(t, ready["kubeconfig"])
			}
			for _, line := range cmds {
				out := runGuideCommand(t, env, line)
				for _, c := range guideChecks {
					if c.command != line {
						continue
					}
					checked[c.command] = true
					if !regexp.MustCompile("(?m)" + c.output).MatchString(out) {
						t.Errorf("%s: the output does not match %q:\n%s", line, c.output, out)
					}
				}
			}
		})
	}
	for _, c := range guideChecks {
		if !checked[c.command] {
			t.Errorf("no guide runs %q any more: its check went unused", c.command)
		}
	}
}

// runGuideCommand runs one line of a guide in bash from the repository's
// root and returns its output; a failure or a command still running after
// 3 minutes fails the page.
func runGuideCommand(t *testing.T, env []string, line string) string {
	t.Helper()
	return runShell(t, env, "../..", line)
}

// kubectlBinary builds kubectl from the Kubernetes module this module
// requires (go.mod's tool line) and returns its path in the build cache.
func kubectlBinary(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "tool", "-n", "kubectl").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go tool -n kubectl: %v\n%s", err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// upCluster is a cluster handle on fluence up's API server, in the
// namespace the guides use; its context ends with t.
func upCluster(t *testing.T, kubeconfig string) *cluster {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("fluence up's kubeconfig: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &cluster{t: t, Ctx: ctx, Client: kubernetes.NewForConfigOrDie(cfg), Config: cfg, NS: metav1.NamespaceDefault}
}

// deleteCRD deletes a CRD installWorkloadCRD installed and waits until it
// is gone, so that the pages after it find the cluster as fluence up made it.
func deleteCRD(t *testing.T, c *cluster, w workloadCRD) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	crds := apiextensionsclient.NewForConfigOrDie(c.Config).ApiextensionsV1().CustomResourceDefinitions()
	name := w.gvr.Resource + "." + w.gvr.Group
	if err := crds.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting the CRD %s: %v", name, err)
		return
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := crds.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("the CRD %s is still there after a minute", name)
	}
}
