package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/queue"
	"github.com/fluence-sched/fluence/pkg/resource"
	"github.com/fluence-sched/fluence/pkg/sim"
	"github.com/fluence-sched/fluence/pkg/sim/experiments"
	"github.com/fluence-sched/fluence/pkg/sim/report"
	"github.com/spf13/pflag"
)

// seedsFlag is --seeds: a list of seeds given as numbers and ranges,
// "1-10" or "1,3,5-7", in the order given.
type seedsFlag []uint

var _ pflag.Value = (*seedsFlag)(nil)

func (s *seedsFlag) String() string {
	parts := make([]string, len(*s))
	for i, v := range *s {
		parts[i] = strconv.FormatUint(uint64(v), 10)
	}
	return strings.Join(parts, ",")
}

func (s *seedsFlag) Type() string { return "seeds" }

// Set replaces the default with the seeds given; a range lo-hi holds
// both ends. Repeated seeds are refused: they would count one run twice.
func (s *seedsFlag) Set(v string) error {
	var out seedsFlag
	seen := map[uint]bool{}
	add := func(n uint) error {
		if seen[n] {
			return fmt.Errorf("seed %d is given twice", n)
		}
		seen[n] = true
		out = append(out, n)
		return nil
	}
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 32)
		if err != nil {
			return fmt.Errorf("%q: a seed is a whole number, a range is lo-hi", part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 32); err != nil || b < a {
				return fmt.Errorf("%q: a range is lo-hi with lo <= hi", part)
			}
			if b-a >= 10000 {
				return fmt.Errorf("%q: more than 10,000 seeds", part)
			}
		}
		for n := a; n <= b; n++ {
			if err := add(uint(n)); err != nil {
				return err
			}
		}
	}
	if len(out) == 0 {
		return fmt.Errorf("give at least one seed")
	}
	*s = out
	return nil
}

type simFlags struct {
	workload      string
	synthetic     string
	cluster       string
	schedulers    []string
	matchPolicy   string
	queuePolicies []string
	queueDepth    int
	resDepth      int
	seeds         seedsFlag
	perSeed       bool
	out           string
	json          bool
	noFiles       bool
	stallWindow   float64
	podGap        float64
	permitTimeout float64
	quotaCPU      float64
	quotaPods     int
	attempt       float64
	oracle        bool
	defaultDur    float64
	packing       bool
	// The preemption table's settings (simPreemption).
	preemptAfter, preemptMinRun, preemptTimeout int64
	evictionGrace                               float64
}

// batchGCPercent is the garbage collector's target for a simulation: its
// heap is mostly short-lived (decisions, explanations, events), so fewer
// collections save more time than the larger heap costs.
const batchGCPercent = 400

func simCmd() *cobra.Command {
	var f simFlags
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Replay a workload under fluence and models of its peers; compare",
		Long: `Replays a pod-group workload on a simulated cluster under the real fluence
engine and under models of the stock kube-scheduler, the Coscheduling plugin
and Kueue-style quota admission, and prints one comparison table.

With no arguments it replays run8 (100 LAMMPS MiniClusters of 2-6 pods on 8
nodes with 3 free CPUs each) and shows the measured outcomes beside the
simulated ones. --workload picks another built-in workload (run10, backfill,
topology-fragmented, urgent, rackscale-dra, packed-rack) or a workload file. topology-fragmented is 64
nodes in zones, blocks and racks, unevenly loaded, and groups that require or
prefer a rack or a block; for it (and any workload with topology) a second
table says where each scheduler's groups ran, by topology level. urgent is
run8's cluster kept full by long low-priority groups, into which six groups
of priority 1000 arrive; for it (and any workload whose groups have more than
one priority) a second table compares fluence without and with preemption
(--preempt-after and the flags after it) and the stock model without and
with its pod-by-pod preemption: the urgent groups' waits, the evictions and
the work they lost. packed-rack (drawn from each --seeds seed) is 4 racks of
8 nodes packed with low-priority groups, some checkpointing, some movable,
into which 8 gangs of priority 1000 arrive that each require one rack; for it
(and any workload whose most urgent groups require a domain) that table
compares fluence's topology-aware preemption, the same with checkpoints and
moves hidden from the core, and two preemptions without topology (fluence's
with the rack requirement dropped, the stock model's pod by pod), adding the
urgent gangs kept within one rack and the groups moved. rackscale-dra is 16 NVLink domains of 18 nodes with 4 GPUs
each, published as DRA devices, and GPU gangs of 2 to 18 pods each required
within one domain; for it (and any workload whose nodes publish GPUs as
devices) a further table gives each scheduler's stranded GPUs, gangs kept
within one domain and gangs bound in part.

Makespans are compared with the best of three lower bounds (runtime, hold
time and, on identical nodes, packing). With several seeds (--seeds 1-10)
it prints mean, min and max per scheduler instead; --per-seed adds each
seed's table. Files (CSV and JSON per job and scheduler, plots) go to --out.

A simulation is a batch run: unless GOGC is set, it collects garbage a
quarter as often as Go's default (GOGC=400), which takes 5-30% off a large
run for about twice the peak memory (about 620 MB instead of 320 MB on
--synthetic nodes=1000,groups=10000).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Getenv("GOGC") == "" {
				debug.SetGCPercent(batchGCPercent)
			}
			return runSim(cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workload, "workload", "run8", "built-in workload (run8, run10, backfill, topology-fragmented, urgent, rackscale-dra, packed-rack) or a workload YAML file")
	fl.StringVar(&f.synthetic, "synthetic", "", `synthesize a workload instead, e.g. "nodes=1000,groups=10000" (docs/sim-workload.md); "default" for the defaults`)
	fl.StringVar(&f.cluster, "cluster", "", `replace the workload's cluster with a generated one, e.g. "cluster[1]->node[8]->{core[3],memory[1]:29}" (memory in GiB)`)
	fl.StringSliceVar(&f.schedulers, "schedulers", []string{"fluence", "stock", "coscheduling", "quota"}, "schedulers to run (also quota+fluence: the quota model's admission in front of fluence)")
	fl.StringVar(&f.matchPolicy, "policy", "lonode", "fluence match policy: "+strings.Join(match.PolicyNames(), ", "))
	fl.StringSliceVar(&f.queuePolicies, "queue-policy", []string{"easy", "fcfs", "hybrid", "conservative"}, "fluence queue policies; the first is reported as \"fluence\", others as \"fluence:<policy>\"")
	fl.IntVar(&f.queueDepth, "queue-depth", queue.DefaultQueueDepth, "groups considered per scheduling loop")
	fl.IntVar(&f.resDepth, "reservation-depth", queue.DefaultReservationDepth, "reservations per loop (hybrid)")
	fl.BoolVar(&f.packing, "packing", true, "packing-aware backfill: of the groups a loop may only start now, start the set that fills the most of the cluster, not the first that fit (the scheduler's packing argument; on by default in both)")
	f.seeds = seedsFlag{1}
	fl.Var(&f.seeds, "seeds", `seeds for sampled release delays and synthetic workloads, e.g. "1-10" or "1,3,5"; each seed is a separate run, and with several a table gives mean, min and max per scheduler`)
	fl.BoolVar(&f.perSeed, "per-seed", false, "with several seeds, also print each seed's own table")
	fl.StringVar(&f.out, "out", "sim-results", "directory for CSV, JSON and plots")
	fl.BoolVar(&f.noFiles, "no-files", false, "write no files")
	fl.BoolVar(&f.json, "json", false, "print one JSON summary on stdout instead of the table")
	fl.Float64Var(&f.podGap, "pod-release-gap", sim.DefaultPodReleaseGap, "seconds between the releases of one finished group's pods (0: all at once)")
	fl.Float64Var(&f.stallWindow, "stall-window", 300, "seconds without any start or completion, with pods pending, that count as a stall")
	fl.Float64Var(&f.permitTimeout, "permit-timeout", 0, "coscheduling Permit wait in seconds (default: the workload's, else 60)")
	fl.Float64Var(&f.quotaCPU, "quota-cpu", 0, "quota model CPU quota in cores (default: the workload's, else the cluster's)")
	fl.IntVar(&f.quotaPods, "quota-pods", 0, "quota model pod quota (default: the workload's, else unlimited)")
	fl.BoolVar(&f.oracle, "oracle-durations", false, "plan fluence's groups with their true runtimes, which no scheduler knows (default: their declared durations, else --default-duration, as the scheduler does)")
	fl.Float64Var(&f.defaultDur, "default-duration", 3600, "seconds fluence plans for a group that declares no duration (the scheduler's defaultDuration)")
	fl.Float64Var(&f.attempt, "attempt-time", sim.DefaultAttemptSeconds, "seconds per scheduling attempt in the stock and quota models (0: instantaneous, every waiting pod tried at each event)")
	fl.Int64Var(&f.preemptAfter, "preempt-after", sim.DefaultPreemption.After, "preemption table: a waiting group preempts when its reserved start is more than this many seconds away (0: only a group with no reservation)")
	fl.Int64Var(&f.preemptMinRun, "preempt-min-runtime", sim.DefaultPreemption.MinRuntime, "preemption table: seconds a group runs before it may be preempted")
	fl.Int64Var(&f.preemptTimeout, "preempt-timeout", sim.DefaultPreemption.Timeout, "preemption table: seconds the victims have to go before the preemptor's hold on their nodes ends")
	fl.Float64Var(&f.evictionGrace, "eviction-grace", sim.DefaultEvictionGrace, "preemption table: seconds from a pod's eviction until it is gone and its node free")
	return cmd
}

func loadSimWorkload(f simFlags, seed64 uint) (*sim.Workload, error) {
	seed := uint64(seed64)
	var w *sim.Workload
	var err error
	switch {
	case f.synthetic != "":
		spec := f.synthetic
		if spec == "default" {
			spec = ""
		}
		s, perr := sim.ParseSynthSpec(spec)
		if perr != nil {
			return nil, perr
		}
		if !strings.Contains(spec, "seed=") {
			s.Seed = seed
		}
		w, err = sim.Synthesize(s)
	case f.workload == "backfill":
		w = sim.BackfillWorkload()
	case f.workload == "topology-fragmented":
		w = sim.TopologyFragmentedWorkload()
	case f.workload == "urgent":
		w = sim.UrgentWorkload()
	case f.workload == "rackscale-dra":
		w = sim.RackScaleDRAWorkload()
	case f.workload == "packed-rack":
		w = sim.PackedRackWorkload(seed)
	default:
		data, rerr := experiments.Read(f.workload)
		if rerr != nil {
			if _, statErr := os.Stat(f.workload); statErr != nil {
				return nil, rerr
			}
			return sim.LoadWorkload(f.workload, sim.LoadOptions{Seed: seed})
		}
		w, err = sim.ParseWorkload(data, sim.LoadOptions{Seed: seed})
	}
	if err != nil {
		return nil, err
	}
	if f.cluster != "" {
		c, err := clusterFromSpec(f.cluster)
		if err != nil {
			return nil, fmt.Errorf("--cluster: %w", err)
		}
		w.Cluster = c
	}
	return w, nil
}

// clusterFromSpec generates a graph and reads it back as nodes: cores are
// CPUs, memory vertices are GiB, gpu vertices are GPUs.
func clusterFromSpec(spec string) (sim.Cluster, error) {
	g, err := resource.Generate(spec)
	if err != nil {
		return sim.Cluster{}, err
	}
	var c sim.Cluster
	for _, n := range g.ByTypeName("node") {
		ns := sim.NodeSpec{Name: g.Vertex(n).DisplayName(), Labels: g.Vertex(n).Properties}
		for v := n; v < g.SubtreeEnd(n); v++ {
			vx := g.Vertex(v)
			switch g.TypeName(vx.Type) {
			case "core":
				ns.CPU += 1000
			case "gpu":
				ns.GPU++
			case "memory":
				ns.Memory += vx.Size << 30
			}
		}
		if ns.Memory == 0 {
			ns.Memory = math.MaxInt64 / 4 // not modelled: never binds
		}
		c.Nodes = append(c.Nodes, ns)
	}
	if len(c.Nodes) == 0 {
		return c, errors.New("the spec has no node vertices")
	}
	return c, nil
}

func newFluence(f simFlags, pol string) (sim.Scheduler, error) {
	if !(f.defaultDur >= 1) || math.IsInf(f.defaultDur, 0) {
		return nil, fmt.Errorf("--default-duration %v: give a number of seconds, 1 or more", f.defaultDur)
	}
	return sim.NewFluence(sim.FluenceConfig{MatchPolicy: f.matchPolicy, Oracle: f.oracle, DefaultDuration: int64(math.Ceil(f.defaultDur)),
		Queue: queue.Config{Policy: queue.Policy(pol), QueueDepth: f.queueDepth, ReservationDepth: f.resDepth, Packing: f.packing}})
}

// namedScheduler renames extra fluence variants so every result has a
// distinct scheduler name.
type namedScheduler struct {
	sim.Scheduler
	name string
}

func (n namedScheduler) Name() string { return n.name }

// quotaOf is the quota models' quota: the flags', else the workload's.
func quotaOf(f simFlags, w *sim.Workload) (cpu int64, pods int) {
	cpu, pods = int64(f.quotaCPU*1000), f.quotaPods
	if cpu == 0 {
		cpu = w.Params.QuotaCPU
	}
	if pods == 0 {
		pods = w.Params.QuotaPods
	}
	return cpu, pods
}

func buildSchedulers(f simFlags, w *sim.Workload) ([]sim.Scheduler, error) {
	var out []sim.Scheduler
	for _, name := range f.schedulers {
		switch name {
		case "fluence":
			for i, pol := range f.queuePolicies {
				s, err := newFluence(f, pol)
				if err != nil {
					return nil, err
				}
				if i > 0 {
					s = namedScheduler{s, "fluence:" + pol}
				}
				out = append(out, s)
			}
		case "stock":
			out = append(out, sim.NewStockWith(sim.StockOptions{Backoff: sim.DefaultBackoff, AttemptSeconds: f.attempt}))
		case "coscheduling":
			t := f.permitTimeout
			if t == 0 {
				t = w.Params.PermitTimeout
			}
			if t == 0 {
				t = 60
			}
			out = append(out, sim.NewCoscheduling(t))
		case "quota":
			cpu, pods := quotaOf(f, w)
			out = append(out, sim.NewQuotaWith(cpu, pods, f.attempt))
		case "quota+fluence":
			place, err := newFluence(f, f.queuePolicies[0])
			if err != nil {
				return nil, err
			}
			cpu, pods := quotaOf(f, w)
			out = append(out, sim.NewQuotaOver(place, cpu, pods))
		default:
			return nil, fmt.Errorf("unknown scheduler %q (known: fluence, stock, coscheduling, quota, quota+fluence)", name)
		}
	}
	return out, nil
}

func runSim(stdout, stderr io.Writer, f simFlags) error {
	if !(f.attempt >= 0) || math.IsInf(f.attempt, 0) {
		return fmt.Errorf("--attempt-time %v: give a finite number of seconds, 0 or more", f.attempt)
	}
	if err := checkPreemptFlags(f); err != nil {
		return err
	}
	if len(f.seeds) == 0 {
		return errors.New("--seeds: give at least one seed")
	}
	var all []*sim.Result
	var runs [][]*sim.Result
	var first *sim.Workload
	for _, seed := range f.seeds {
		w, err := loadSimWorkload(f, seed)
		if err != nil {
			return err
		}
		opts := sim.Options{StallWindow: f.stallWindow, PodReleaseGap: f.podGap}
		if f.podGap == 0 {
			opts.PodReleaseGap = -1 // Options reads 0 as "default"
		}
		if sim.NeedsReleaseCalibration(w) {
			target := *w.Measured["fluence"].Makespan
			d, mk, err := sim.CalibrateReleaseDelay(w, func() (sim.Scheduler, error) { return newFluence(f, f.queuePolicies[0]) }, target, opts)
			if err != nil {
				return fmt.Errorf("calibrating the release delay: %w", err)
			}
			fmt.Fprintf(stderr, "%s: release delay not measured; calibrated to %.1f s per job so fluence's makespan (%.0f s) matches the measured %.0f s\n", w.Name, d, mk, target)
		}
		scheds, err := buildSchedulers(f, w)
		if err != nil {
			return err
		}
		if first == nil {
			first = w
		}
		var results []*sim.Result
		for _, s := range scheds {
			opts := opts
			if len(w.Groups) >= 2000 {
				opts.Progress = report.ProgressPrinter(stderr, s.Name())
			}
			r, err := sim.Run(w, s, opts)
			if err != nil {
				return err
			}
			results = append(results, r)
		}
		all = append(all, results...)
		runs = append(runs, results)
		if !f.noFiles {
			dir := f.out
			if len(f.seeds) > 1 {
				dir = filepath.Join(f.out, "seed-"+strconv.FormatUint(uint64(seed), 10))
			}
			files, err := report.WriteFiles(dir, w, results)
			if err != nil {
				return err
			}
			plots, err := report.WritePlots(dir, w, results)
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "wrote %d files to %s\n", len(files)+len(plots), dir)
		}
		if f.json {
			continue
		}
		if len(f.seeds) > 1 && !f.perSeed {
			continue
		}
		if len(f.seeds) > 1 {
			fmt.Fprintf(stdout, "seed %d\n", seed)
		}
		if err := report.Table(stdout, w, results); err != nil {
			return err
		}
		if sim.HasTopology(w) {
			fmt.Fprintln(stdout)
			if err := report.TopologyTable(stdout, w, results); err != nil {
				return err
			}
		}
		if sim.HasGPUDevices(w) {
			fmt.Fprintln(stdout)
			if err := report.GPUTable(stdout, w, results); err != nil {
				return err
			}
		}
		if sim.HasPriorities(w) {
			fmt.Fprintln(stdout)
			if err := simPreemption(stdout, f, w, opts); err != nil {
				return err
			}
		}
		if len(f.seeds) > 1 {
			fmt.Fprintln(stdout)
		}
	}
	if !f.json && len(f.seeds) > 1 {
		return report.SeedTable(stdout, first, f.seeds, runs)
	}
	if f.json {
		w, err := loadSimWorkload(f, f.seeds[0])
		if err != nil {
			return err
		}
		return report.WriteJSONSummary(stdout, w, all)
	}
	return nil
}
