// Package integration runs the scheduler against a real, in-process
// kube-apiserver (pkg/localcluster) backed by one embedded etcd per test
// binary. No kubelet
// exists: a node simulator (localcluster.NodeSim) plays the kubelets' part, and an
// invariant checker (invariant_test.go) watches for over-committed nodes and
// partially bound pod groups.
//
// The tests are skipped with -short. Logging from the apiserver and the
// scheduler (klog) is reduced to errors unless klog flags are given on the
// command line (go test ./test/integration -args -v=4) or
// FLUENCE_IT_LOG=<verbosity> is set in the environment.
package integration

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"k8s.io/klog/v2"

	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// sharedEtcdURL is the test binary's etcd; every cluster keeps its objects
// under a prefix of its own there.
var sharedEtcdURL string

func TestMain(m *testing.M) {
	if flag.Lookup("v") == nil {
		klog.InitFlags(nil) // -args -v=4 and the other klog flags
	}
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

	dir, err := os.MkdirTemp("", "fluence-integration-etcd")
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		os.Exit(1)
	}
	etcd, err := localcluster.StartEtcd(dir)
	if err != nil {
		os.RemoveAll(dir)
		fmt.Fprintf(os.Stderr, "integration: cannot start etcd: %v\n", err)
		os.Exit(1)
	}
	sharedEtcdURL = etcd.URL
	code := m.Run()
	etcd.Close() // not deferred: os.Exit skips deferred calls
	os.RemoveAll(dir)
	klog.Flush()
	os.Exit(code)
}

// quietKlog limits klog to errors, minus known harmless ones, unless the user
// set klog flags (registered on flag.CommandLine by TestMain) or FLUENCE_IT_LOG=<verbosity>, which keep everything.
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
	klogQuiet = true
	localcluster.QuietLogs(os.Stderr)
}

// klogQuiet: quietKlog sent klog's output to localcluster.QuietLogs.
var klogQuiet bool
