package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fluence-sched/fluence/internal/docsh"
)

// docCommands returns the lines of doc's sh code blocks that start with
// prefix, in order.
func docCommands(t *testing.T, doc, prefix string) []string {
	t.Helper()
	cmds, err := docsh.Commands(doc, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return cmds
}

// Every helm command of docs/install.md, as written, against a real API
// server: install creates the chart's objects, each upgrade changes the
// configuration as the page says, uninstall removes them.
func TestInstallDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	helm := helmBinary(t)
	cmds := docCommands(t, "../../docs/install.md", "helm ")
	if len(cmds) < 5 {
		t.Fatalf("docs/install.md has %d helm commands, want install, two upgrades, a rollback and uninstall: %q", len(cmds), cmds)
	}
	c := newFullCluster(t)
	kubeconfig := c.kubeconfigFile()
	home := t.TempDir()
	run := func(line string) string {
		t.Helper()
		fields := strings.Fields(line)
		cmd := exec.Command(helm, append(fields[1:], "--kubeconfig", kubeconfig)...)
		cmd.Dir = "../.." // the page's paths are from the repository's root
		cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
			"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		return string(out)
	}
	config := func() string {
		t.Helper()
		cm, err := c.Client.CoreV1().ConfigMaps(releaseNamespace).Get(c.Ctx, releaseName+"-config", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the chart's ConfigMap: %v", err)
		}
		return cm.Data["config.yaml"]
	}

	// The chart installs the PodGroup CRD (podGroupCRD.install: auto, and
	// the cluster has none), keeps it through upgrades as this release's,
	// and leaves it behind on uninstall.
	crdOwner := func(line string) string {
		t.Helper()
		crd, err := apiextensionsclient.NewForConfigOrDie(c.Config).ApiextensionsV1().CustomResourceDefinitions().Get(c.Ctx, "podgroups.scheduling.x-k8s.io", metav1.GetOptions{})
		if err != nil {
			t.Errorf("after %q: PodGroup CRD: %v", line, err)
			return ""
		}
		return crd.Annotations["meta.helm.sh/release-name"]
	}

	for _, line := range cmds {
		fields := strings.Fields(line)
		switch fields[1] {
		case "install":
			run(line)
			if _, err := c.Client.AppsV1().Deployments(releaseNamespace).Get(c.Ctx, releaseName, metav1.GetOptions{}); err != nil {
				t.Errorf("after %q: Deployment: %v", line, err)
			}
			if _, err := decodeSchedulerConfig(config()); err != nil {
				t.Errorf("after %q: %v", line, err)
			}
			if owner := crdOwner(line); owner != releaseName {
				t.Errorf("after %q: the PodGroup CRD belongs to release %q, want %q", line, owner, releaseName)
			}
		case "upgrade":
			run(line)
			if owner := crdOwner(line); owner != releaseName {
				t.Errorf("after %q: the PodGroup CRD belongs to release %q, want %q", line, owner, releaseName)
			}
			cfg := config()
			if _, err := decodeSchedulerConfig(cfg); err != nil {
				t.Errorf("after %q: %v", line, err)
			}
			// Each upgrade on the page sets one value; the configuration shows it.
			switch {
			case strings.Contains(line, "plugin.queuePolicy=hybrid"):
				if !strings.Contains(cfg, "queuePolicy: hybrid") {
					t.Errorf("after %q the configuration has no queuePolicy: hybrid:\n%s", line, cfg)
				}
			case strings.Contains(line, "oneScheduler=true"):
				if !strings.Contains(cfg, "schedulerName: default-scheduler") || !strings.Contains(cfg, "queuePolicy: hybrid") {
					t.Errorf("after %q the configuration lacks the default-scheduler profile or lost the earlier value (--reuse-values):\n%s", line, cfg)
				}
				if d, err := c.Client.AppsV1().Deployments(releaseNamespace).Get(c.Ctx, releaseName, metav1.GetOptions{}); err != nil || *d.Spec.Replicas < 2 {
					t.Errorf("after %q the Deployment has fewer than 2 replicas (%v)", line, err)
				}
			case strings.Contains(line, "oneScheduler=false"):
				if strings.Contains(cfg, "schedulerName: default-scheduler") || !strings.Contains(cfg, "queuePolicy: hybrid") {
					t.Errorf("after %q the configuration still has the default-scheduler profile or lost the earlier value (--reuse-values):\n%s", line, cfg)
				}
			default:
				t.Errorf("the test does not know what %q should change", line)
			}
		case "rollback":
			// Back to the install: the upgrades' values are gone.
			run(line)
			cfg := config()
			if _, err := decodeSchedulerConfig(cfg); err != nil {
				t.Errorf("after %q: %v", line, err)
			}
			if strings.Contains(cfg, "queuePolicy: hybrid") || strings.Contains(cfg, "schedulerName: default-scheduler") {
				t.Errorf("after %q the configuration still has an upgrade's values:\n%s", line, cfg)
			}
			if owner := crdOwner(line); owner != releaseName {
				t.Errorf("after %q: the PodGroup CRD belongs to release %q, want %q", line, owner, releaseName)
			}
		case "uninstall":
			run(line)
			if _, err := c.Client.AppsV1().Deployments(releaseNamespace).Get(c.Ctx, releaseName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("after %q: Deployment still there (%v)", line, err)
			}
			if _, err := c.Client.RbacV1().ClusterRoles().Get(c.Ctx, releaseName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("after %q: ClusterRole still there (%v)", line, err)
			}
			crdOwner(line) // kept: deleting it would delete every PodGroup
		default:
			t.Errorf("docs/install.md runs helm %s, which the test does not check", fields[1])
		}
	}
}
