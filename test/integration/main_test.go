// Package integration runs the scheduler against a real, in-process
// kube-apiserver backed by one embedded etcd per test binary. No kubelet
// exists: a node simulator (nodesim_test.go) plays the kubelets' part, and an
// invariant checker (invariant_test.go) watches for over-committed nodes and
// partially bound pod groups.
//
// The tests are skipped with -short. Logging from the apiserver and the
// scheduler (klog) is reduced to errors unless klog flags are given on the
// command line (go test ./test/integration -args -v=4) or
// FLUENCE_IT_LOG=<verbosity> is set in the environment.
package integration

import (
	"bytes"
	"flag"
	"fmt"
	"github.com/fluence-sched/fluence/pkg/plugin"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// etcdURLEnv is read by k8s.io/kubernetes/test/integration/framework
// (GetEtcdURL) when StartTestServer picks its storage backend.
const etcdURLEnv = "KUBE_INTEGRATION_ETCD_URL"

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// newCluster skips every integration test; no etcd is needed.
		os.Exit(m.Run())
	}
	quietKlog()
	// The schedulers here run in this process: give them the feature
	// gates `fluence scheduler` sets.
	if err := plugin.SetFeatureDefaults(); err != nil {
		fmt.Fprintf(os.Stderr, "integration: feature gates: %v\n", err)
		os.Exit(1)
	}

	stop, clientURL, err := startEtcd()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: cannot start etcd: %v\n", err)
		os.Exit(1)
	}
	os.Setenv(etcdURLEnv, clientURL)
	code := m.Run()
	stop() // not deferred: os.Exit skips deferred calls
	klog.Flush()
	os.Exit(code)
}

// quietKlog limits klog to errors, minus known harmless ones, unless the user
// set klog flags (the integration framework registers them on
// flag.CommandLine) or FLUENCE_IT_LOG=<verbosity>, which keep everything.
func quietKlog() {
	userSet := false
	flag.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "v", "vmodule", "logtostderr", "alsologtostderr", "stderrthreshold", "log_file", "log_dir":
			userSet = true
		}
	})
	var fs flag.FlagSet
	klog.InitFlags(&fs) // a private flag set bound to klog's global state
	if v := os.Getenv("FLUENCE_IT_LOG"); v != "" {
		_ = fs.Set("v", v)
		return
	}
	if userSet {
		return
	}
	// Everything goes to SetOutput's writer, which passes on errors only.
	klogQuiet = true
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	_ = fs.Set("one_output", "true")
	klog.SetOutput(errorsOnly{os.Stderr})
}

// klogQuiet: quietKlog sent klog's output to errorsOnly{os.Stderr}.
var klogQuiet bool

// harmlessErrors are substrings of klog errors every apiserver start logs.
var harmlessErrors = []string{
	"The manifest file is empty, ignoring.",
	`namespaces \"kube-system\" not found`,
	`namespaces \"default\" not found`,
	// local clusters (pkg/localcluster) of the demo tests
	"for Service default/kubernetes is not allocated; repairing",
	"Found stale data, removed previous endpoints on kubernetes service",
}

// errorsOnly passes klog's error and fatal lines ("E…", "F…" headers), except
// harmless ones, to w.
type errorsOnly struct{ w io.Writer }

func (e errorsOnly) Write(data []byte) (int, error) {
	if len(data) == 0 || (data[0] != 'E' && data[0] != 'F') {
		return len(data), nil
	}
	for _, h := range harmlessErrors {
		if bytes.Contains(data, []byte(h)) {
			return len(data), nil
		}
	}
	return e.w.Write(data)
}

// startEtcd runs an embedded etcd on 127.0.0.1 with free ports and a temporary
// data directory, configured like k8s.io/apiserver's testserver.NewTestConfig
// (no fsync, errors-only logging). It retries when a chosen port was taken in
// the meantime.
func startEtcd() (stop func(), clientURL string, err error) {
	for attempt := 0; attempt < 5; attempt++ {
		stop, clientURL, err = startEtcdOnce()
		if err == nil {
			return stop, clientURL, nil
		}
	}
	return nil, "", err
}

func startEtcdOnce() (func(), string, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "fluence-integration-etcd")
	if err != nil {
		return nil, "", err
	}
	cfg := embed.NewConfig()
	cfg.Name = "fluence-integration"
	cfg.Dir = dir
	cfg.UnsafeNoFsync = true
	clientU := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	peerU := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}
	cfg.ListenClientUrls = []url.URL{clientU}
	cfg.AdvertiseClientUrls = []url.URL{clientU}
	cfg.ListenPeerUrls = []url.URL{peerU}
	cfg.AdvertisePeerUrls = []url.URL{peerU}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.QuotaBackendBytes = 8 << 30
	zcfg := zap.NewProductionConfig()
	level := zap.NewAtomicLevelAt(zapcore.ErrorLevel)
	zcfg.Level = level
	zcfg.OutputPaths = []string{"stderr"}
	zcfg.ErrorOutputPaths = []string{"stderr"}
	lg, err := zcfg.Build()
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg.Named("etcd"))

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("etcd took too long to start")
	}
	stop := func() {
		// Closing logs "server closed" errors for every listener.
		level.SetLevel(zapcore.FatalLevel)
		e.Close()
		os.RemoveAll(dir)
	}
	return stop, clientU.String(), nil
}

// freePorts returns n distinct TCP ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
