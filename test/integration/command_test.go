package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The shipped binary and configuration, as a user runs them: `fluence
// scheduler --config deploy/scheduler-config.yaml` as a separate process
// against the test API server, placing a group and stopping on SIGTERM.
func TestSchedulerCommand(t *testing.T) {
	c := newCluster(t)
	bin := filepath.Join(t.TempDir(), "fluence")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/fluence")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	c.addNodes("node", 3, "2", "4Gi")
	startNodeSim(c, simOptions{})

	// kube-scheduler ignores --kubeconfig when --config is given: the
	// configuration's clientConnection names the kubeconfig.
	config := filepath.Join(t.TempDir(), "config.yaml")
	shipped := fluenceConfig(t, nil)
	if err := os.WriteFile(config, []byte(shipped+"clientConnection:\n  kubeconfig: "+c.kubeconfigFile()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	cmd := exec.Command(bin, "scheduler", "--config", config, "--secure-port", "0", "-v", "2")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("scheduler output:\n%s", tail(logs.String(), 40))
		}
	})

	g := groupPods("cmd", 3, "2", time.Second, 2*time.Second)
	c.createPods(g...)
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(g)...)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the scheduler did not stop within 30 s of SIGTERM")
	}
	if !strings.Contains(logs.String(), "fluence") {
		t.Errorf("no sign of the fluence plugin in the scheduler's log")
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// syncBuffer is a bytes.Buffer safe for the process's writers and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
