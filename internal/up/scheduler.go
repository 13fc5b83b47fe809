package up

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/wait"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/fluence-sched/fluence/internal/schedserver"
	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// scheduler is `fluence scheduler` running in this process, as the chart
// runs it but on 127.0.0.1: its secure port serves /healthz, /metrics and
// the inspection API (kubectl fluence --scheduler-url) behind delegated
// authentication and authorisation through the local API server.
type scheduler struct {
	// URL is the secure port's address; CAFile its self-signed certificate.
	URL, CAFile string
	// stopped is closed when the scheduler has returned, with err.
	stopped chan struct{}
	err     error
}

// startScheduler writes configYAML to dir and runs the scheduler with the
// kubeconfig until ctx ends; it returns once /readyz answers.
func startScheduler(ctx context.Context, dir, configYAML, kubeconfig string) (*scheduler, error) {
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		return nil, err
	}
	configFile := filepath.Join(dir, "scheduler-config.yaml")
	if configYAML, err = withKubeconfig(configYAML, kubeconfig); err != nil {
		return nil, err
	}
	if err := os.WriteFile(configFile, []byte(configYAML), 0o600); err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "scheduler-pki")
	opts := options.NewOptions()
	fs := pflag.NewFlagSet("scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{
		"--config=" + configFile,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--cert-dir=" + certDir,
	}); err != nil {
		return nil, fmt.Errorf("scheduler flags: %w", err)
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, err
	}
	gates := opts.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	s := &scheduler{
		URL:     fmt.Sprintf("https://127.0.0.1:%d", ports[0]),
		CAFile:  filepath.Join(certDir, "kube-scheduler.crt"),
		stopped: make(chan struct{}),
	}
	go func() {
		defer close(s.stopped)
		s.err = schedserver.Start(ctx, opts, gates)
	}()

	// The certificate is self-signed and checked by the user's kubectl
	// fluence; here only readiness matters.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-s.stopped:
			return false, fmt.Errorf("the scheduler stopped: %v", s.err)
		default:
		}
		resp, err := client.Get(s.URL + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return nil, fmt.Errorf("kube-scheduler: %w", err)
	}
	return s, nil
}
