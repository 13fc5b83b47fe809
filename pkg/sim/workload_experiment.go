package sim

import (
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The experiment format is the one of pkg/sim/experiments/*.yaml: a
// description of a measured run (cluster, the loop that generated its
// jobs, per-size runtime medians, per-scheduler outcomes). Its header
// comments document every field; this file turns one into a Workload:
//
//   - cluster: cluster.nodes identical nodes node0..nodeN-1 with
//     free_cpus_per_node cores, the smaller bound of
//     free_memory_bytes_per_node (UnmodelledMemory when absent) and
//     gpus_per_node GPUs;
//   - groups: for i in 0..iterations-1, for each of jobs.types in order,
//     one group named by name_pattern ({i} iteration, {size} pods, {k}
//     submission index, {type} index in types), arriving at
//     first_arrival_seconds + k * inter_arrival_seconds, with size pods
//     of cpus_per_pod cores (and memory_per_pod, gpus_per_pod if given);
//   - runtime: runtimes.by_size.<size>.app_seconds when present, else
//     running_to_completion_seconds. run8 has only the latter (first pod
//     Running to completion, which includes Flux bootstrap: the real hold).
//     run10 has both, but its running_to_completion_seconds measures
//     watcher polling latency (its notes say so), so app_seconds, the
//     in-application time, is the runtime there;
//   - release delay: release_delay_seconds {min, max} is sampled uniformly
//     per group (seeded by LoadOptions.Seed); a single number applies to
//     every group; null leaves it 0 and NeedsReleaseCalibration reports
//     that it must be calibrated;
//   - measured outcomes: outcomes.<scheduler>, renamed to this package's
//     scheduler names (default -> stock, kueue -> quota);
//   - params: the Permit timeout parsed from the coscheduling outcome's
//     config text, the quota from cluster.kueue_quota.
//
// Keys not read here are informational and accepted.

// experimentSchedulerNames maps the experiment files' outcome keys to the
// names the simulator's schedulers go by.
var experimentSchedulerNames = map[string]string{
	"fluence":      "fluence",
	"default":      "stock",
	"coscheduling": "coscheduling",
	"kueue":        "quota",
}

// permitTimeoutRE finds the coscheduling Permit wait in a config string:
// scheduleTimeoutSeconds is the PodGroup field, permitWaitingTimeSeconds
// the plugin argument; the experiments used one or the other.
var permitTimeoutRE = regexp.MustCompile(`(scheduleTimeoutSeconds|permitWaitingTimeSeconds) (\d+)`)

// defaultPermitTimeout is the Coscheduling plugin's default
// permitWaitingTimeSeconds.
const defaultPermitTimeout = 60

// releaseStream is the PCG stream constant of release-delay sampling; the
// seed picks the sequence, this keeps it apart from other uses of a seed.
const releaseStream = 0x72656c65617365 // "release"

type experimentType struct {
	size int
	pod  PodSpec
	path string
}

// experimentJobs is what jobs says about generating the job list.
type experimentJobs struct {
	types      []experimentType
	iterations int
	first, gap float64
	pattern    string
	delays     releaseDelays
}

func parseExperiment(c *yctx, root *yaml.Node, opts LoadOptions) *Workload {
	w := &Workload{Measured: map[string]Measured{}, Params: Params{PermitTimeout: defaultPermitTimeout}}
	top, _ := c.mapping(root, "", nil)
	if n := top.get("name"); n != nil {
		w.Name, _ = c.str(n, "name")
	}
	c.experimentCluster(top, w)
	jobs, ok := c.experimentJobs(top)
	runtimes := c.experimentRuntimes(top, jobs.types)
	c.experimentOutcomes(top, w)
	if !ok || len(c.errs) > 0 {
		return w
	}
	sample := jobs.delays.sampler(opts.Seed)
	seen := map[string]int{}
	k := 0
	for i := range jobs.iterations {
		for t, typ := range jobs.types {
			name := strings.NewReplacer("{i}", strconv.Itoa(i), "{size}", strconv.Itoa(typ.size),
				"{k}", strconv.Itoa(k), "{type}", strconv.Itoa(t)).Replace(jobs.pattern)
			if prev, dup := seen[name]; dup {
				c.errf("jobs.name_pattern", "gives the name %q to jobs %d and %d; use {i} and {size} (or {k}) to tell jobs apart", name, prev, k)
				return w
			}
			seen[name] = k
			g := GroupSpec{
				Name:         name,
				Arrival:      jobs.first + float64(k)*jobs.gap,
				Pods:         make([]PodSpec, typ.size),
				Runtime:      runtimes[typ.size],
				ReleaseDelay: sample(),
			}
			for p := range g.Pods {
				g.Pods[p] = typ.pod
			}
			w.Groups = append(w.Groups, g)
			k++
		}
	}
	return w
}

func (c *yctx) experimentCluster(top ymap, w *Workload) {
	n := top.get("cluster")
	if n == nil {
		c.errf("cluster", "required")
		return
	}
	cl, ok := c.mapping(n, "cluster", nil)
	if !ok {
		return
	}
	var nodes int64
	if n := cl.get("nodes"); n == nil {
		c.errf("cluster.nodes", "required")
	} else {
		nodes, _ = c.integer(n, "cluster.nodes", 1, wlMaxNodes)
	}
	var cpu int64
	if n := cl.get("free_cpus_per_node"); n == nil {
		c.errf("cluster.free_cpus_per_node", "required (the cores left for workloads on each node)")
	} else if v, ok := c.cpu(n, "cluster.free_cpus_per_node"); ok {
		if v <= 0 {
			c.errf("cluster.free_cpus_per_node", "must be positive")
		}
		cpu = v
	}
	mem := UnmodelledMemory
	if n := cl.get("free_memory_bytes_per_node"); n != nil {
		if n.Kind == yaml.MappingNode {
			// A {min, max} range observed across nodes: the smallest is
			// what every node is sure to have.
			r, _ := c.mapping(n, "cluster.free_memory_bytes_per_node", nil)
			lo := r.get("min")
			if lo == nil {
				c.errf("cluster.free_memory_bytes_per_node.min", "required when the memory is given as a range")
			} else if v, ok := c.memory(lo, "cluster.free_memory_bytes_per_node.min"); ok {
				mem = v
				if hi := r.get("max"); hi != nil {
					if h, ok := c.memory(hi, "cluster.free_memory_bytes_per_node.max"); ok && h < v {
						c.errf("cluster.free_memory_bytes_per_node", "min %d exceeds max %d", v, h)
					}
				}
			}
		} else if v, ok := c.memory(n, "cluster.free_memory_bytes_per_node"); ok {
			mem = v
		}
		if mem == 0 {
			// Zero free memory would make every pod unschedulable, even
			// the ones requesting none; nobody means that.
			c.errf("cluster.free_memory_bytes_per_node", "must be positive (leave it out if memory is not modelled)")
		}
	}
	var gpu int64
	if n := cl.get("gpus_per_node"); n != nil {
		gpu, _ = c.integer(n, "cluster.gpus_per_node", 0, wlMaxGPUs)
	}
	if q := cl.get("kueue_quota"); q != nil {
		if qm, ok := c.mapping(q, "cluster.kueue_quota", nil); ok {
			if n := qm.get("cpu"); n != nil {
				w.Params.QuotaCPU, _ = c.cpu(n, "cluster.kueue_quota.cpu")
			}
			if n := qm.get("pods"); n != nil {
				v, _ := c.integer(n, "cluster.kueue_quota.pods", 0, wlMaxPodsTotal)
				w.Params.QuotaPods = int(v)
			}
		}
	}
	if nodes > 0 && cpu > 0 {
		w.Cluster = ClusterFromSpec(int(nodes), cpu, mem, gpu)
	}
}

// experimentJobs reads jobs. It also checks the informational totals
// (count, pods) against iterations x types, which catches an edit to one
// that forgot the other.
func (c *yctx) experimentJobs(top ymap) (experimentJobs, bool) {
	out := experimentJobs{pattern: "job-{i}-size-{size}"}
	jobs, ok := c.mapping(top.get("jobs"), "jobs", nil)
	if !ok {
		return out, false
	}
	good := true
	if n := jobs.get("iterations"); n == nil {
		c.errf("jobs.iterations", "required")
		good = false
	} else if v, ok := c.integer(n, "jobs.iterations", 1, wlMaxGroups); ok {
		out.iterations = int(v)
	} else {
		good = false
	}
	if n := jobs.get("first_arrival_seconds"); n != nil {
		out.first, _ = c.seconds(n, "jobs.first_arrival_seconds")
	}
	if n := jobs.get("inter_arrival_seconds"); n == nil {
		c.errf("jobs.inter_arrival_seconds", "required (the gap between consecutive submissions)")
	} else {
		out.gap, _ = c.seconds(n, "jobs.inter_arrival_seconds")
	}
	if n := jobs.get("name_pattern"); n != nil {
		out.pattern, _ = c.str(n, "jobs.name_pattern")
	}
	if n := jobs.get("shuffle"); n != nil {
		if v, ok := c.boolean(n, "jobs.shuffle"); ok && v {
			c.errf("jobs.shuffle", "shuffled submission orders are not supported; list the jobs in submission order (native format)")
		}
	}
	if n := jobs.get("gang"); n != nil {
		if v, ok := c.str(n, "jobs.gang"); ok && v != "all" {
			c.errf("jobs.gang", "only \"all\" (a job starts when every pod is bound) is simulated, got %q", v)
		}
	}
	out.delays = c.experimentRelease(jobs)
	seq, ok := c.sequence(jobs.vals["types"], "jobs.types")
	if ok && len(seq) == 0 {
		c.errf("jobs.types", "must list at least one job type")
	}
	podsPerIter := int64(0)
	for i, tn := range seq {
		path := yidx("jobs.types", i)
		tm, ok := c.mapping(tn, path, nil)
		if !ok {
			good = false
			continue
		}
		t := experimentType{path: path}
		if n := tm.get("size"); n == nil {
			c.errf(ykey(path, "size"), "required")
			good = false
		} else if v, ok := c.integer(n, ykey(path, "size"), 1, wlMaxPodsPerGroup); ok {
			t.size = int(v)
		} else {
			good = false
		}
		if n := tm.get("cpus_per_pod"); n == nil {
			c.errf(ykey(path, "cpus_per_pod"), "required")
			good = false
		} else if v, ok := c.cpu(n, ykey(path, "cpus_per_pod")); !ok {
			good = false
		} else if v <= 0 {
			c.errf(ykey(path, "cpus_per_pod"), "must be positive")
			good = false
		} else {
			t.pod.CPU = v
		}
		if n := tm.get("memory_per_pod"); n != nil {
			t.pod.Memory, _ = c.memory(n, ykey(path, "memory_per_pod"))
		}
		if n := tm.get("gpus_per_pod"); n != nil {
			t.pod.GPU, _ = c.integer(n, ykey(path, "gpus_per_pod"), 0, wlMaxGPUs)
		}
		out.types = append(out.types, t)
		podsPerIter += int64(t.size)
	}
	if !good || len(seq) == 0 {
		return out, false
	}
	iters := int64(out.iterations)
	if iters*podsPerIter > wlMaxPodsTotal {
		c.errf("jobs", "%d iterations of %d pods exceed the limit of %d pods", iters, podsPerIter, wlMaxPodsTotal)
		return out, false
	}
	ntypes := int64(len(out.types))
	if n := jobs.get("count"); n != nil {
		if v, ok := c.integer(n, "jobs.count", 0, 1<<62); ok && v != iters*ntypes {
			c.errf("jobs.count", "says %d jobs but %d iterations of %d types give %d", v, iters, ntypes, iters*ntypes)
		}
	}
	if n := jobs.get("pods"); n != nil {
		if v, ok := c.integer(n, "jobs.pods", 0, 1<<62); ok && v != iters*podsPerIter {
			c.errf("jobs.pods", "says %d pods but %d iterations of %d pods give %d", v, iters, podsPerIter, iters*podsPerIter)
		}
	}
	return out, true
}

// experimentRuntimes returns the runtime per size: app_seconds when the
// entry has it, else running_to_completion_seconds (see the file comment).
func (c *yctx) experimentRuntimes(top ymap, types []experimentType) map[int]float64 {
	out := map[int]float64{}
	rt, ok := c.mapping(top.get("runtimes"), "runtimes", nil)
	if !ok {
		return out
	}
	by, ok := c.mapping(rt.get("by_size"), "runtimes.by_size", nil)
	if !ok {
		return out
	}
	entries := map[int]string{} // size -> key as written
	for _, k := range by.keys {
		size, err := strconv.Atoi(k)
		if err != nil || size < 1 {
			c.errf(ykey("runtimes.by_size", k), "keys must be pod counts (positive integers)")
			continue
		}
		entries[size] = k
	}
	for _, t := range types {
		if _, done := out[t.size]; done {
			continue
		}
		k, found := entries[t.size]
		if !found {
			c.errf("runtimes.by_size", "no entry for size %d (%s)", t.size, t.path)
			continue
		}
		path := ykey("runtimes.by_size", k)
		e, ok := c.mapping(by.vals[k], path, nil)
		if !ok {
			continue
		}
		if n := e.get("app_seconds"); n != nil {
			out[t.size], _ = c.seconds(n, ykey(path, "app_seconds"))
		} else if n := e.get("running_to_completion_seconds"); n != nil {
			out[t.size], _ = c.seconds(n, ykey(path, "running_to_completion_seconds"))
		} else {
			c.errf(path, "needs app_seconds or running_to_completion_seconds")
		}
	}
	return out
}

// releaseDelays is release_delay_seconds: a fixed value or a range.
type releaseDelays struct{ lo, hi float64 }

func (d releaseDelays) sampler(seed uint64) func() float64 {
	if d.lo == d.hi {
		return func() float64 { return d.lo }
	}
	r := rand.New(rand.NewPCG(seed, releaseStream))
	return func() float64 { return d.lo + (d.hi-d.lo)*r.Float64() }
}

func (c *yctx) experimentRelease(jm ymap) releaseDelays {
	const path = "jobs.release_delay_seconds"
	n := jm.get("release_delay_seconds")
	if n == nil {
		return releaseDelays{} // unknown: calibrate (NeedsReleaseCalibration)
	}
	if n.Kind != yaml.MappingNode {
		v, _ := c.seconds(n, path)
		return releaseDelays{v, v}
	}
	m, _ := c.mapping(n, path, nil)
	var d releaseDelays
	lo, hi := m.get("min"), m.get("max")
	if lo == nil || hi == nil {
		c.errf(path, "a range needs both min and max")
		return releaseDelays{}
	}
	var ok1, ok2 bool
	d.lo, ok1 = c.seconds(lo, ykey(path, "min"))
	d.hi, ok2 = c.seconds(hi, ykey(path, "max"))
	if ok1 && ok2 && d.lo > d.hi {
		c.errf(path, "min %s exceeds max %s", yfloat(d.lo), yfloat(d.hi))
	}
	return d
}

func (c *yctx) experimentOutcomes(top ymap, w *Workload) {
	n := top.get("outcomes")
	if n == nil {
		return
	}
	om, ok := c.mapping(n, "outcomes", nil)
	if !ok {
		return
	}
	for _, key := range om.keys {
		path := ykey("outcomes", key)
		on := om.get(key)
		if on == nil {
			continue
		}
		o, ok := c.mapping(on, path, nil)
		if !ok {
			continue
		}
		var m Measured
		if n := o.get("config"); n != nil {
			m.Config, _ = c.str(n, ykey(path, "config"))
			m.Config = strings.TrimSpace(m.Config)
		}
		if n := o.get("notes"); n != nil {
			m.Notes, _ = c.str(n, ykey(path, "notes"))
			m.Notes = strings.TrimSpace(m.Notes)
		}
		if n := o.get("jobs_completed"); n != nil {
			v, _ := c.integer(n, ykey(path, "jobs_completed"), 0, wlMaxGroups)
			m.JobsCompleted = int(v)
		}
		if n := o.get("clogged"); n != nil {
			if v, ok := c.boolean(n, ykey(path, "clogged")); ok {
				m.Clogged = &v
			}
		}
		if n := o.get("at_clog"); n != nil {
			if ac, ok := c.mapping(n, ykey(path, "at_clog"), nil); ok {
				m.PendingAtClog = c.optCount(ac, "pending_pods")
				m.RunningAtClog = c.optCount(ac, "running_pods")
			}
		}
		if n := o.get("makespan_seconds"); n != nil {
			if v, ok := c.seconds(n, ykey(path, "makespan_seconds")); ok {
				m.Makespan = &v
			}
		}
		if n := o.get("turnaround_seconds"); n != nil {
			if ta, ok := c.mapping(n, ykey(path, "turnaround_seconds"), nil); ok {
				if n := ta.get("mean"); n != nil {
					if v, ok := c.seconds(n, ykey(ta.path, "mean")); ok {
						m.MeanTurnaround = &v
					}
				}
			}
		}
		name := key
		if s, ok := experimentSchedulerNames[key]; ok {
			name = s
		}
		if _, dup := w.Measured[name]; dup {
			c.errf(path, "a second outcome for scheduler %q", name)
			continue
		}
		w.Measured[name] = m
		if key == "coscheduling" {
			if mt := permitTimeoutRE.FindStringSubmatch(m.Config); mt != nil {
				v, err := strconv.ParseFloat(mt[2], 64)
				if err == nil && v > 0 {
					w.Params.PermitTimeout = v
				} else {
					c.errf(ykey(path, "config"), "bad Permit timeout %q", mt[0])
				}
			}
		}
	}
}

func (c *yctx) optCount(m ymap, key string) *int {
	n := m.get(key)
	if n == nil {
		return nil
	}
	v, ok := c.integer(n, ykey(m.path, key), 0, wlMaxPodsTotal*1000)
	if !ok {
		return nil
	}
	i := int(v)
	return &i
}
