package up

import (
	"fmt"
	"io"
	"strings"
)

// ReadyInfo is what the ready lines say.
type ReadyInfo struct {
	APIServer  string // https://127.0.0.1:port
	Kubeconfig string
	WorkDir    string
	Options    Options
	// ExternalFile: the kubeconfig is outside the work directory (and is
	// removed on exit all the same).
	ExternalFile bool
	// Scheduler is the scheduler's secure port (https://127.0.0.1:port);
	// SchedulerCA its self-signed serving certificate.
	Scheduler, SchedulerCA string
}

// printReady writes the "key: value" lines (one "node:" line per node,
// "ready: true" last), then a blank line and how to use the cluster.
func printReady(w io.Writer, r ReadyInfo) {
	o := r.Options
	fmt.Fprintf(w, "api-server: %s\n", r.APIServer)
	fmt.Fprintf(w, "kubeconfig: %s\n", r.Kubeconfig)
	fmt.Fprintf(w, "work-dir: %s\n", r.WorkDir)
	fmt.Fprintf(w, "nodes: %d\n", o.Nodes)
	for _, n := range o.NodeSpecs() {
		line := fmt.Sprintf("node: %s cpu=%s memory=%s", n.Name, n.CPU, n.Memory)
		if n.GPUs > 0 {
			line += fmt.Sprintf(" nvidia.com/gpu=%d", n.GPUs)
		}
		for _, k := range sortedKeys(n.Labels) {
			line += fmt.Sprintf(" %s=%s", k, n.Labels[k])
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w, "schedulers: default-scheduler fluence")
	fmt.Fprintf(w, "scheduler-url: %s\n", r.Scheduler)
	fmt.Fprintf(w, "scheduler-ca-file: %s\n", r.SchedulerCA)
	if len(o.FeatureGates) > 0 {
		var gates []string
		for _, k := range sortedKeys(o.FeatureGates) {
			gates = append(gates, fmt.Sprintf("%s=%t", k, o.FeatureGates[k]))
		}
		fmt.Fprintf(w, "feature-gates: %s\n", strings.Join(gates, ","))
	}
	if len(o.With) > 0 {
		fmt.Fprintf(w, "with: %s\n", strings.Join(o.With, " "))
	}
	fmt.Fprintln(w, "ready: true")

	// With the native API served, "podgroups" names scheduling.k8s.io's.
	podgroups := "podgroups"
	if o.FeatureGates["GenericWorkload"] {
		podgroups = "podgroups.scheduling.x-k8s.io"
	}
	removed := "the work directory"
	if r.ExternalFile {
		removed = "the work directory and " + r.Kubeconfig
	}
	fmt.Fprintf(w, `
One kube-scheduler process runs two profiles: fluence, for pods with schedulerName: fluence
(placed as whole groups), and kube-scheduler's stock default-scheduler for all other pods.
Both share one queue and one cache, so they never give the same resources away twice.
Simulated nodes run each pod for its "sleep N" command, then mark it Succeeded.

Try it (from the repository's root):
  export KUBECONFIG=%s
  export FLUENCE_SCHEDULER_URL=%s FLUENCE_SCHEDULER_CA_FILE=%s
  kubectl get nodes
  kubectl apply -f docs/examples/fluence-labels.yaml
  kubectl get pods -o wide --watch
  kubectl apply -f docs/examples/scheduler-plugins-podgroup.yaml && kubectl get %s
  go run ./cmd/kubectl-fluence groups -A
docs/examples/README.md lists every example and what it needs; docs/tasks/ has guides
whose commands run here as written (FLUENCE_SCHEDULER_URL points kubectl fluence at this
scheduler, as the chart's APIService does on a cluster).

Ctrl-C (or SIGTERM) stops everything and removes %s.
`, r.Kubeconfig, r.Scheduler, r.SchedulerCA, podgroups, removed)
}
