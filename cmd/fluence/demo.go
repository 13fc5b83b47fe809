package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/replay"
	"github.com/fluence-sched/fluence/pkg/sim"
	"github.com/fluence-sched/fluence/pkg/sim/report"
)

type demoFlags struct {
	workload   string
	schedulers []string
	jobs       int
	compress   float64
	stall      time.Duration
	out        string
	noFiles    bool
	logFile    string
	seed       uint
	compareSim bool
	with       []string
}

func demoCmd() *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Replay run8 live: fluence, the stock kube-scheduler and its in-tree gang scheduling on a local control plane",
		Long: `Replays a measured workload live, once per scheduler, each time on a fresh
control plane in this process (etcd, kube-apiserver, the Job controller and 8
simulated nodes on 127.0.0.1; nothing to install, everything removed at the end).

With no arguments it replays run8: 100 LAMMPS jobs of 2-6 pods as Indexed Jobs
on 8 nodes with 3 free CPUs each, their times compressed (--compress 10: fluence's
28 minutes of run8 in under 3). A job computes only once all its pods run,
as an MPI job does; a job with some pods bound and others pending holds its CPUs
and makes no progress. The schedulers:

  fluence   fluence scheduler with deploy/scheduler-config.yaml
  stock     kube-scheduler v1.37, default profile
  gang      kube-scheduler v1.37 with its own gang scheduling (gate
            GenericWorkload on, one v1beta1 PodGroup per Job)

--with kueue adds two rows behind the real Kueue (its manager built from its
published module, third_party/kueue, and run as a process of its own), which
admits each Job whole through one ClusterQueue whose quota is the nodes'
allocatable, as the seed experiment meant to run its Kueue row:

  stock+kueue    Kueue admitting, kube-scheduler's default profile placing
  fluence+kueue  Kueue admitting, fluence placing

Their prediction is the simulator's quota model (quota, and quota+fluence). The
first time, building Kueue takes 10 to 20 minutes on a 2-core machine; it is
cached in the user's cache directory after that. Run it from the fluence source
tree (or set ` + localcluster.ThirdPartyEnv + `).

Not included: the Coscheduling plugin of sigs.k8s.io/scheduler-plugins. It builds
against its own Kubernetes release and the module proxy does not serve it, so it
would need a Go module and a binary of its own; ` + "`fluence sim`" + ` keeps its model.

Progress goes to stderr while it runs. A run in which nothing is bound or
finishes for --stall while pods wait is ended and reported as stalled. At the
end it prints the table of ` + "`fluence sim`" + ` computed from the pod events the API
server sent (times scaled back to the workload's seconds), then the model check:
each live run beside the simulator's prediction for the same compressed workload
and their difference (docs/design/005-live-demo.md). Files and plots go to --out
(the live runs) and --out/sim (the predictions).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLiveDemo(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workload, "workload", "run8", "embedded workload (run8, run10) or a workload YAML file")
	fl.StringSliceVar(&f.schedulers, "schedulers", replay.SchedulerNames, "schedulers to run, in order: "+strings.Join(slices.Concat(replay.SchedulerNames, replay.KueueSchedulerNames), ", "))
	fl.StringSliceVar(&f.with, "with", nil, "kueue: add the rows behind the real Kueue ("+strings.Join(replay.KueueSchedulerNames, ", ")+"); builds Kueue the first time (10-20 min)")
	fl.IntVar(&f.jobs, "jobs", 0, "replay only the first N jobs (0: all)")
	fl.Float64Var(&f.compress, "compress", 10, "divide the workload's times by this factor")
	fl.DurationVar(&f.stall, "stall", 20*time.Second, "end a run as stalled when nothing is bound or finishes for this long (wall time) while pods wait")
	fl.StringVar(&f.out, "out", "demo-results", "directory for CSV, JSON, plots and the comparison")
	fl.BoolVar(&f.noFiles, "no-files", false, "write no files")
	fl.StringVar(&f.logFile, "log", "", "write the control plane's and schedulers' log (klog, verbosity 2) to this file; by default only their errors go to stderr")
	fl.UintVar(&f.seed, "seed", 1, "seed for the workload's sampled release delays")
	fl.BoolVar(&f.compareSim, "compare-sim", true, "run the simulator's prediction of each scheduler and print the model check")
	return cmd
}

func runLiveDemo(ctx context.Context, stdout, stderr io.Writer, f demoFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	names, err := demoSchedulers(f.schedulers, f.with)
	if err != nil {
		return err
	}
	var scheds []replay.Scheduler
	for _, name := range names {
		s, err := replay.NewScheduler(name)
		if err != nil {
			return fmt.Errorf("--schedulers: %w", err)
		}
		scheds = append(scheds, s)
	}
	if len(scheds) == 0 {
		return errors.New("--schedulers: name at least one")
	}
	if f.jobs < 0 {
		return fmt.Errorf("--jobs %d: give a number of jobs, or 0 for all", f.jobs)
	}
	full, err := loadSimWorkload(simFlags{workload: f.workload}, f.seed)
	if err != nil {
		return err
	}
	w, err := replay.First(full, f.jobs)
	if err != nil {
		return err
	}
	replayed, err := replay.Compress(w, f.compress)
	if err != nil {
		return fmt.Errorf("--compress: %w", err)
	}
	if err := replay.CheckStall(replayed, f.stall); err != nil {
		return fmt.Errorf("--stall: %w", err)
	}

	if f.logFile != "" {
		lf, err := os.Create(f.logFile)
		if err != nil {
			return fmt.Errorf("--log: %w", err)
		}
		defer lf.Close()
		localcluster.LogTo(lf, 2)
	} else {
		localcluster.QuietLogs(stderr)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	if err := buildKueueFor(ctx, stderr, scheds); err != nil {
		return err
	}

	pods := 0
	for i := range w.Groups {
		pods += w.Groups[i].Size()
	}
	fmt.Fprintf(stderr, "replaying %s live: %d jobs, %d pods, %d nodes, times compressed %gx\n",
		w.Name, len(w.Groups), pods, len(w.Cluster.Nodes), f.compress)
	var live []*sim.Result
	var outcomes []*replay.Outcome
	for _, s := range scheds {
		fmt.Fprintf(stderr, "%s: %s\n", s.Name(), s.Config())
		o, err := replay.Run(ctx, s, replay.Options{Workload: replayed, Factor: f.compress, Stall: f.stall, Progress: stderr})
		if err != nil {
			if ctx.Err() != nil {
				return errors.New("interrupted; the control plane is stopped and its files removed")
			}
			return err
		}
		fmt.Fprintf(stderr, "  %-8s control plane and scheduler up in %.1fs; run %.1fs\n", s.Name(), o.Setup.Seconds(), o.Wall.Seconds())
		o.Result.LowerBound = sim.LowerBound(replayed)
		live = append(live, replay.Scale(o.Result, f.compress))
		outcomes = append(outcomes, o)
	}

	fmt.Fprintf(stdout, "\nlive on a local control plane, times compressed %gx and scaled back (seconds of the workload)\n", f.compress)
	if err := report.Table(stdout, w, live); err != nil {
		return err
	}
	var comparison strings.Builder
	var predicted []*sim.Result
	if f.compareSim {
		var rows []replay.Comparison
		for i, s := range scheds {
			p, why, err := replay.Predict(s, replayed, f.stall)
			if err != nil {
				return fmt.Errorf("%s: the simulator's prediction: %w", s.Name(), err)
			}
			if p != nil {
				replay.Scale(p, f.compress)
				predicted = append(predicted, p)
			}
			rows = append(rows, replay.Comparison{Scheduler: s.Name(), Live: live[i], Sim: p, NoModel: why})
		}
		title := fmt.Sprintf("model check: live run and the simulator's prediction of %s (%d jobs, compressed %gx)", w.Name, len(w.Groups), f.compress)
		if err := replay.CompareTable(&comparison, title, rows); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\n%s", comparison.String())
	}
	fmt.Fprintln(stdout)
	for _, o := range outcomes {
		fmt.Fprintf(stdout, "%s: control plane and scheduler up in %.1fs, replay %.1fs (wall)\n  %s\n", o.Scheduler.Name(), o.Setup.Seconds(), o.Wall.Seconds(), o.Lags)
	}
	if f.noFiles {
		return nil
	}
	n, err := writeDemoFiles(f.out, w, live, predicted, comparison.String())
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %d files to %s\n", n, f.out)
	return nil
}

// writeDemoFiles writes the live results and plots to dir, the
// predictions to dir/sim, and the model check to dir/compare.txt.
func writeDemoFiles(dir string, w *sim.Workload, live, predicted []*sim.Result, comparison string) (int, error) {
	n := 0
	for _, set := range []struct {
		dir     string
		results []*sim.Result
	}{{dir, live}, {filepath.Join(dir, "sim"), predicted}} {
		if len(set.results) == 0 {
			continue
		}
		files, err := report.WriteFiles(set.dir, w, set.results)
		if err != nil {
			return n, err
		}
		plots, err := report.WritePlots(set.dir, w, set.results)
		if err != nil {
			return n, err
		}
		n += len(files) + len(plots)
	}
	if comparison != "" {
		if err := os.WriteFile(filepath.Join(dir, "compare.txt"), []byte(comparison), 0o644); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
