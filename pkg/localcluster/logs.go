package localcluster

import (
	"bytes"
	"flag"
	"io"
	"strconv"

	"k8s.io/klog/v2"
)

// harmlessErrors are substrings of errors every API server start logs
// while its bootstrap controllers race the namespaces and the service IP
// they need, the one the "none" endpoint reconciler (which a loopback
// API server wants: Endpoints refuse loopback addresses) always logs, and
// two of kube-scheduler 1.37's: its note on fluence's profile, and its gang
// scheduling's report of each group that must wait.
var harmlessErrors = []string{
	"The manifest file is empty, ignoring.",
	`namespaces \"kube-system\" not found`,
	`namespaces \"default\" not found`,
	// The ClusterIP repair loop's first pass on a fresh etcd.
	"for Service default/kubernetes is not allocated; repairing",
	// Logged at every start with no endpoint reconciler (whose removal
	// of old endpoints always succeeds).
	"Found stale data, removed previous endpoints on kubernetes service",
	// kube-scheduler 1.37 with GenericWorkload on, for a profile without
	// its GangScheduling plugin: fluence's profile leaves it out on
	// purpose, fluence being that profile's gang logic.
	"GenericWorkload is enabled, but GangScheduling plugin is not set",
	// kube-scheduler 1.37's own gang scheduling (the demo's gang row) logs
	// every pod of a group that does not fit yet as an error, once per
	// attempt: that is its way of waiting, not a fault.
	`"Error scheduling pod; retrying" err="minCount (`,
}

// QuietLogs sends klog (the API server's, the controllers' and the
// schedulers' log) to w, keeping only errors, minus harmless ones: a
// terminal running a local cluster shows what needs attention, not the
// thousands of lines a control plane logs while it starts.
func QuietLogs(w io.Writer) {
	LogTo(ErrorsOnly{W: w}, 0)
}

// LogTo sends all of klog at verbosity v to w (a log file, say), and
// nothing to the terminal.
func LogTo(w io.Writer, v int) {
	var fs flag.FlagSet
	klog.InitFlags(&fs) // a private flag set bound to klog's global state
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	_ = fs.Set("one_output", "true")
	_ = fs.Set("v", strconv.Itoa(v))
	klog.SetOutput(w)
}

// ErrorsOnly passes klog's error and fatal lines ("E…" and "F…" headers),
// except harmless ones, to W.
type ErrorsOnly struct{ W io.Writer }

func (e ErrorsOnly) Write(data []byte) (int, error) {
	if len(data) == 0 || (data[0] != 'E' && data[0] != 'F') {
		return len(data), nil
	}
	for _, h := range harmlessErrors {
		if bytes.Contains(data, []byte(h)) {
			return len(data), nil
		}
	}
	return e.W.Write(data)
}
