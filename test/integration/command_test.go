package integration

import (
	"bytes"
	"fmt"
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
	bin := buildFluence(t)
	c.addNodes("node", 3, "2", "4Gi")
	startNodeSim(c, simOptions{})

	// kube-scheduler ignores --kubeconfig when --config is given: the
	// configuration's clientConnection names the kubeconfig.
	config := filepath.Join(t.TempDir(), "config.yaml")
	shipped := fluenceConfig(t, nil)
	if err := os.WriteFile(config, []byte(setClient(shipped, "kubeconfig", c.kubeconfigFile())), 0o600); err != nil {
		t.Fatal(err)
	}
	proc := startProcess(t, bin, "scheduler", "--config", config, "--secure-port", "0", "-v", "2")

	g := groupPods("cmd", 3, "2", time.Second, 2*time.Second)
	c.createPods(g...)
	c.waitForPodPhase(time.Minute, corev1.PodSucceeded, names(g)...)

	if err := proc.interrupt(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatalf("the scheduler: %v", err)
	}
	if !strings.Contains(proc.logs.String(), "fluence") {
		t.Errorf("no sign of the fluence plugin in the scheduler's log")
	}
	// A plain go build stamps no Kubernetes release into component-base:
	// --version and the start-up log name the one the module builds against.
	kube := goList(t, "-m", "-f", "{{.Version}}", "k8s.io/kubernetes")
	if !strings.Contains(proc.logs.String(), `kubernetes="`+kube+`"`) {
		t.Errorf("the scheduler's start-up log does not name Kubernetes %s", kube)
	}
	out, err := exec.Command(bin, "scheduler", "--version").Output()
	if want := "fluence dev (kube-scheduler " + kube + ")\n"; err != nil || string(out) != want {
		t.Errorf("fluence scheduler --version: %q, %v; want %q", out, err, want)
	}
}

func goList(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// buildFluence builds cmd/fluence into a temporary directory.
func buildFluence(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "fluence")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/fluence")
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// process is a program the test started; it is killed at cleanup, and its
// output's tail is logged if the test failed.
type process struct {
	cmd    *exec.Cmd
	logs   *syncBuffer
	exited chan struct{}
}

// interrupt sends sig and waits up to d for the process to exit.
func (p *process) interrupt(sig syscall.Signal, d time.Duration) error {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(d):
		return fmt.Errorf("it did not stop within %s of the %v signal", d, sig)
	}
}

func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), logs: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), tail(p.logs.String(), 40))
		}
	})
	return p
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
