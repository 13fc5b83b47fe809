package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/replay"
)

// demoSchedulers is --schedulers with, for --with kueue, the schedulers
// behind Kueue added after them (those not named already).
func demoSchedulers(schedulers, with []string) ([]string, error) {
	out := slices.Clone(schedulers)
	for _, w := range with {
		if w != localcluster.Kueue {
			return nil, fmt.Errorf("--with %q: the demo can add only %s (the MPI Operator runs no replayed Job)", w, localcluster.Kueue)
		}
		for _, name := range replay.KueueSchedulerNames {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out, nil
}

// buildKueueFor builds Kueue before the first run when a scheduler needs
// it, saying so: the first build takes minutes, which would otherwise
// look like a control plane that does not come up, and a build that
// fails should fail before the other rows have run.
func buildKueueFor(ctx context.Context, stderr io.Writer, scheds []replay.Scheduler) error {
	if !slices.ContainsFunc(scheds, func(s replay.Scheduler) bool { return strings.HasSuffix(s.Name(), "+"+localcluster.Kueue) }) {
		return nil
	}
	fmt.Fprintf(stderr, "building Kueue from its module (third_party/kueue; the first time 10-20 min on 2 cores, then cached)\n")
	start := time.Now()
	b, err := localcluster.BuildNeighbour(ctx, localcluster.Kueue)
	if err != nil {
		return fmt.Errorf("building Kueue: %w", err)
	}
	fmt.Fprintf(stderr, "Kueue %s ready in %.1fs: %s\n", b.Version, time.Since(start).Seconds(), b.Bin)
	return nil
}
