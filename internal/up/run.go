package up

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/fluence-sched/fluence/deploy"
	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// Run starts the cluster the options describe, prints the ready lines and
// how to use it to out, and returns once ctx ends (the caller cancels it on
// SIGINT or SIGTERM) or the API server stops on its own. Either way it
// stops every goroutine it started and removes the work directory and the
// kubeconfig before it returns. A ctx ending while the cluster starts
// aborts the start.
func Run(ctx context.Context, o Options, out io.Writer) (err error) {
	if err := o.Validate(); err != nil {
		return err
	}
	config, err := o.SchedulerConfig()
	if err != nil {
		return err
	}
	// The gates `fluence scheduler` sets; o.FeatureGates come on top.
	if err := plugin.SetFeatureDefaults(); err != nil {
		return err
	}
	// Absolute paths: they are printed for use from any directory.
	dir, kubeconfig := o.Dir, o.Kubeconfig
	if dir == "" {
		dir, err = os.MkdirTemp("", "fluence-up-")
	} else {
		dir, err = filepath.Abs(dir)
	}
	if err != nil {
		return err
	}
	if kubeconfig != "" {
		if kubeconfig, err = filepath.Abs(kubeconfig); err != nil {
			return err
		}
	}

	// The cluster lives in a context of its own, so that on a signal Stop
	// takes it down in order (schedulers first, the API server last)
	// instead of everything at once; until it is up, a signal aborts the
	// start.
	clusterCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	abortStart := context.AfterFunc(ctx, cancel)

	fmt.Fprintf(out, "fluence up: starting etcd, kube-apiserver, the Job controller, the garbage collector, the ResourceClaim controller, the node simulator (%d nodes) and kube-scheduler with the default-scheduler and fluence profiles\n", o.Nodes)
	c, err := localcluster.Start(clusterCtx, localcluster.Options{
		Dir:              dir,
		FeatureGates:     o.FeatureGates,
		JobController:    true,
		GarbageCollector: true,
		ClaimController:  true,
		NodeSim:          &localcluster.NodeSimOptions{},
		Nodes:            o.NodeSpecs(),
	})
	if err != nil {
		os.RemoveAll(dir) // Start removes it too, unless it failed before making it
		return startError(ctx, err)
	}
	defer func() {
		c.Stop()
		removed := []string{dir}
		if kubeconfig != "" && !within(kubeconfig, dir) {
			if rmErr := os.Remove(kubeconfig); rmErr == nil {
				removed = append(removed, kubeconfig)
			} else if !os.IsNotExist(rmErr) {
				err = errors.Join(err, fmt.Errorf("removing the kubeconfig: %w", rmErr))
			}
		}
		fmt.Fprintf(out, "fluence up: stopped; removed %s\n", strings.Join(removed, " and "))
	}()

	if err := InstallCRD(clusterCtx, c.Config, deploy.PodGroupCRD); err != nil {
		return startError(ctx, fmt.Errorf("the scheduler-plugins PodGroup CRD: %w", err))
	}
	if o.DRA {
		if err := publishDRA(clusterCtx, c.Config, o); err != nil {
			return startError(ctx, fmt.Errorf("publishing the GPUs through DRA: %w", err))
		}
	}
	if kubeconfig, err = c.WriteKubeconfig(kubeconfig, c.Kubeconfig("")); err != nil {
		return err
	}
	// The neighbours, before the scheduler: their CRDs are then served
	// when fluence first asks discovery.
	neighbours, err := startNeighbours(clusterCtx, c.Config, o, dir, kubeconfig, out)
	defer func() { // after the scheduler, before the control plane
		for _, p := range neighbours {
			p.Stop()
		}
	}()
	if err != nil {
		return startError(ctx, err)
	}
	schedCtx, schedCancel := context.WithCancel(clusterCtx)
	sched, err := startScheduler(schedCtx, dir, config, kubeconfig)
	if err != nil {
		schedCancel()
		return startError(ctx, err)
	}
	defer func() { // before the control plane stops
		schedCancel()
		<-sched.stopped // its error, when asked to stop, says only that
	}()
	if !abortStart() {
		return startError(ctx, context.Canceled)
	}

	printReady(out, ReadyInfo{
		APIServer:    c.Config.Host,
		Kubeconfig:   kubeconfig,
		WorkDir:      dir,
		Options:      o,
		ExternalFile: !within(kubeconfig, dir),
		Scheduler:    sched.URL,
		SchedulerCA:  sched.CAFile,
	})

	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "fluence up: stopping (a second Ctrl-C quits at once and leaves the files behind)")
		return nil
	case err := <-c.Done():
		if err == nil {
			err = errors.New("it stopped")
		}
		return fmt.Errorf("the API server: %w", err)
	case <-sched.stopped:
		return fmt.Errorf("kube-scheduler stopped: %w", sched.err)
	case p := <-exited(neighbours):
		return fmt.Errorf("%s exited (%v); the end of its log:\n%s", p.Name, p.Err(), p.Tail(20))
	}
}

// startNeighbours starts the controllers of o.With, in that order, each a
// process of its own with its log in dir. On error it returns those it
// started, for the caller to stop.
func startNeighbours(ctx context.Context, cfg *rest.Config, o Options, dir, kubeconfig string, out io.Writer) ([]*localcluster.Process, error) {
	var started []*localcluster.Process
	for _, name := range o.With {
		fmt.Fprintf(out, "fluence up: building and starting %s\n", name)
		var p *localcluster.Process
		var err error
		switch name {
		case localcluster.Kueue:
			p, err = localcluster.StartKueue(ctx, cfg, localcluster.KueueOptions{Dir: dir, Kubeconfig: kubeconfig})
		case localcluster.MPIOperator:
			p, err = localcluster.StartMPIOperator(ctx, cfg, localcluster.MPIOperatorOptions{Dir: dir, Kubeconfig: kubeconfig, GangScheduling: o.MPIGangScheduling})
		case localcluster.JobSet:
			p, err = localcluster.StartJobSet(ctx, cfg, localcluster.JobSetOptions{Dir: dir, Kubeconfig: kubeconfig})
		default:
			err = fmt.Errorf("no controller %q", name) // Validate refuses it
		}
		if err != nil {
			return started, fmt.Errorf("--with %s: %w", name, err)
		}
		started = append(started, p)
	}
	return started, nil
}

// exited delivers the first of the processes to exit.
func exited(ps []*localcluster.Process) <-chan *localcluster.Process {
	ch := make(chan *localcluster.Process, len(ps))
	for _, p := range ps {
		go func() { <-p.Exited(); ch <- p }()
	}
	return ch
}

// startError says a failed start was the user's interrupt, when it was.
func startError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errors.New("interrupted while starting")
	}
	return err
}

// within reports whether the absolute path lies in the absolute dir.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
