package localcluster

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
)

// MPIOperatorOptions say how to run the MPI Operator.
type MPIOperatorOptions struct {
	// Dir holds its log (mpi-operator.log, or mpi-operator-<gang>.log);
	// it must exist.
	Dir string
	// Kubeconfig is a kubeconfig file for the cluster.
	Kubeconfig string
	// GangScheduling is the operator's --gang-scheduling: a scheduler's
	// name (fluence) makes it create a scheduler-plugins PodGroup for each
	// MPIJob and give its pods that scheduler; "" makes none.
	GangScheduling string
	// Namespace limits it to one namespace's MPIJobs; "" is all.
	Namespace string
}

// StartMPIOperator builds the MPI Operator's v2 controller from
// github.com/kubeflow/mpi-operator (the version
// third_party/mpi-operator/go.mod requires), installs the MPIJob CRD of
// its module (manifests/base/kubeflow.org_mpijobs.yaml), and runs it as a
// process of its own against the cluster. With GangScheduling set, the
// scheduler-plugins PodGroup CRD must be installed already (fluence up and
// the integration suite install deploy/crds). It returns once the
// controller's informers have synced; the process stops when ctx ends.
func StartMPIOperator(ctx context.Context, cfg *rest.Config, opts MPIOperatorOptions) (*Process, error) {
	b, err := BuildNeighbour(ctx, MPIOperator)
	if err != nil {
		return nil, err
	}
	crds, err := readCRDs(b.Dir, "manifests/base/kubeflow.org_mpijobs.yaml")
	if err != nil {
		return nil, fmt.Errorf("the MPIJob CRD in %s: %w", b.Dir, err)
	}
	if err := installCRDs(ctx, cfg, crds); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"--kubeConfig", opts.Kubeconfig, "--healthz-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--kube-api-qps", "50", "--kube-api-burst", "100"}
	log := "mpi-operator.log"
	if opts.GangScheduling != "" {
		args = append(args, "--gang-scheduling", opts.GangScheduling)
		log = "mpi-operator-" + opts.GangScheduling + ".log"
	}
	if opts.Namespace != "" {
		args = append(args, "--namespace", opts.Namespace)
	}
	// KUBECONFIG would override --kubeConfig in the operator's own
	// command; this one reads only the flag, but keep them the same.
	p, err := startProcess(ctx, MPIOperator, b.Bin, "", filepath.Join(opts.Dir, log), []string{"KUBECONFIG=" + opts.Kubeconfig}, args...)
	if err != nil {
		return nil, err
	}
	healthz := fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
	if err := p.waitUntil(ctx, 2*time.Minute, func(ctx context.Context) error { return httpOK(ctx, healthz) }); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}
