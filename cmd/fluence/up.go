package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/fluence-sched/fluence/internal/up"
	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// upCmd is `fluence up`: a local control plane with fluence and the stock
// kube-scheduler, until Ctrl-C.
func upCmd() *cobra.Command {
	o := up.Defaults()
	var logFile string
	var logVerbosity int
	var levels []string
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a local Kubernetes control plane with fluence and the stock kube-scheduler until Ctrl-C",
		Long: `fluence up runs a Kubernetes control plane on 127.0.0.1 inside this process: etcd,
kube-apiserver, the Job controller, simulated nodes (a pod bound to one runs for the time of
its "sleep N" command, or of its ` + localcluster.RuntimeAnnotation + ` annotation, then
succeeds) and one kube-scheduler with two profiles: kube-scheduler's stock default-scheduler
and fluence (deploy/one-scheduler-config.yaml). It installs the scheduler-plugins PodGroup
CRD, writes a kubeconfig, prints where everything is as "key: value" lines ending with
"ready: true", and runs until interrupted.

On Ctrl-C or SIGTERM it stops everything and removes its work directory (--dir) and the
kubeconfig, also when --kubeconfig put it elsewhere. A second Ctrl-C quits at once and
leaves the files behind.

Kubernetes' alpha APIs need their feature gates, for instance the native PodGroup
(scheduling.k8s.io/v1alpha2) and Jobs that get one from the Job controller:
  fluence up --feature-gates GenericWorkload=true,WorkloadWithJob=true
The API server, the Job controller and the scheduler share this process and its gates.

--with kueue,mpi-operator,jobset also runs Kueue, the MPI Operator and JobSet, each built from
its published Go module (third_party/ of the fluence source tree; the first build takes minutes)
and run as a process of its own against this control plane, with its CRDs (docs/up.md).`,
		Example: `  fluence up
  fluence up --nodes 8 --cpu 3 --memory 8Gi --gpu-nodes 2 --gpus 4 --racks 2
  fluence up --nodes 8 --levels block=2,rack=4
  fluence up --kubeconfig /tmp/fluence.kubeconfig --log /tmp/fluence-up.log
  fluence up --with kueue,mpi-operator --mpi-gang-scheduling fluence
  fluence up --with jobset`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Levels, err = up.ParseLevels(levels); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if logFile != "" {
				f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				if err != nil {
					return fmt.Errorf("--log: %w", err)
				}
				defer f.Close()
				localcluster.LogTo(f, logVerbosity)
			} else {
				localcluster.QuietLogs(cmd.ErrOrStderr())
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// Once the first signal is in, the next one gets Go's default
			// handling: the process ends at once.
			context.AfterFunc(ctx, stop)
			return up.Run(ctx, o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Nodes, "nodes", o.Nodes, "simulated nodes, named node-0, node-1, ...")
	f.StringVar(&o.CPU, "cpu", o.CPU, "CPUs per node (a quantity: 4, 3500m)")
	f.StringVar(&o.Memory, "memory", o.Memory, "memory per node (a quantity: 16Gi)")
	f.IntVar(&o.GPUs, "gpus", o.GPUs, "nvidia.com/gpu per GPU node (0: no GPUs)")
	f.IntVar(&o.GPUNodes, "gpu-nodes", o.GPUNodes, "how many nodes, the last ones, have GPUs; they carry the label "+up.GPULabel+"=true")
	f.BoolVar(&o.DRA, "dra", o.DRA, "publish the GPUs through Dynamic Resource Allocation (a ResourceSlice per GPU node, driver and DeviceClass "+up.DRADriver+", which also serves nvidia.com/gpu) instead of as nvidia.com/gpu")
	f.IntVar(&o.Racks, "racks", o.Racks, "spread the nodes over this many racks (label "+up.RackLabel+"=rack-N, also given to fluence as its rackLabel); 0: no rack level")
	f.StringSliceVar(&levels, "levels", nil, "topology levels, outermost first, as name=domains: block=2,rack=4 spreads the nodes over 2 blocks and 4 racks (labels "+up.LevelLabelPrefix+"<name>=<name>-N, given to fluence as its topologyLevels); not with --racks")
	f.StringToStringVar(&o.NodeLabels, "node-labels", nil, "labels for every node: key=value,key2=value2")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "write the kubeconfig here instead of the work directory; the file must not exist, and is removed on exit")
	f.StringVar(&o.Dir, "dir", "", "work directory (etcd data, certificates, kubeconfig); must be new or empty, and is removed on exit (default: a new one under $TMPDIR)")
	f.Var(cliflag.NewMapStringBool(&o.FeatureGates), "feature-gates", "Kubernetes feature gates for the API server, the Job controller and the scheduler: Name=true,Name2=false")
	f.StringSliceVar(&o.With, "with", nil, "controllers to run beside the control plane, each a process of its own built from its published Go module in third_party/ (needs the fluence source tree and the go command): "+strings.Join(localcluster.Neighbours, ", "))
	f.StringVar(&o.MPIGangScheduling, "mpi-gang-scheduling", "", "the MPI Operator's --gang-scheduling (with --with mpi-operator): fluence makes it create a scheduler-plugins PodGroup for each MPIJob")
	f.StringVar(&logFile, "log", "", "write the whole control plane's log here (kept after exit); without it only errors go to stderr")
	f.IntVar(&logVerbosity, "log-verbosity", 2, "log verbosity with --log")
	return cmd
}
