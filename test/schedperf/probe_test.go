//go:build schedperf

package schedperf

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-base/metrics/legacyregistry"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"
)

// Group keys: fluence's label, kube-scheduler's PodGroup reference, or
// (stock pods, scheduled one by one) the label the benchmark's stock pod
// template gives each pod of a would-be group.
const (
	fluenceGroupLabel = "fluence.flux-framework.org/pod-group"
	stockGroupLabel   = "schedperf/group"
	// rackLabel is the label by which upstream's topology workloads
	// (podgroup/tas) put their nodes in racks of 100.
	rackLabel = "topology.kubernetes.io/rack"
	// highPriority: a pod of this priority or more is a preemptor (upstream's
	// preemption workloads give theirs 9999999, their victims 1000).
	highPriority = 1_000_000
)

// loadavg is /proc/loadavg's 1, 5 and 15-minute load averages.
func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func groupOf(p *v1.Pod) string {
	if g := p.Labels[fluenceGroupLabel]; g != "" {
		return g
	}
	if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
		return *sg.PodGroupName
	}
	return p.Labels[stockGroupLabel]
}

// groupTimes is what the probe saw of one group.
type groupTimes struct {
	pods     int
	attempts int // scheduling cycles begun (PreFilter runs) for its pods
	first    time.Time
	// per-pod scheduling cycles, PreFilter start to Permit's return
	cycles                             [][2]time.Time
	lastPermit, lastRelease, lastBound time.Time
	released, bound                    int
	// racks holds the rack label (rackLabel) of each node a pod of the
	// group was bound to
	racks map[string]bool
}

// busy is the union of the group's pods' scheduling cycles: the time the
// scheduler spent deciding this group. Pods placed in one pod-group cycle
// (kube-scheduler's GangScheduling) overlap and count once.
func (g *groupTimes) busy() time.Duration {
	c := slices.Clone(g.cycles)
	slices.SortFunc(c, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	var total time.Duration
	var end time.Time
	for _, iv := range c {
		if iv[0].After(end) {
			total += iv[1].Sub(iv[0])
			end = iv[1]
		} else if iv[1].After(end) {
			total += iv[1].Sub(end)
			end = iv[1]
		}
	}
	return total
}

// probeRun is one workload's record.
type probeRun struct {
	name        string
	expectPods  int
	groups      map[string]*groupTimes
	cycleStart  map[types.UID]time.Time
	bound       int
	heapInuse   uint64 // bytes, when the last expected pod was bound
	heapAtNodes uint64 // bytes, once the nodes were created
	start, end  time.Time
	// rack is each node's rackLabel, from the nodes the workload created
	rack map[string]string
	// firstTry is each pod's first scheduling cycle's start; waits are,
	// for the high-priority pods (preemptors: priority of highPriority or
	// more), the time from it to their PostBind
	firstTry map[types.UID]time.Time
	waits    []time.Duration
	// the first preemptor's first PreFilter, the last one's PostBind
	highFirst, highLast time.Time
	// load is /proc/loadavg's first three figures when the workload began
	// and when its last pod was bound
	loadStart, loadEnd string
	// CPU spent when the first pod's cycle began and the last pod was bound
	cpuStart, cpuEnd cpuReading
	// sums, in seconds, of the scheduler's and fluence's histograms when
	// the last pod was bound (the harness resets them between workloads)
	sums map[string]float64
	// the same sums once the nodes were created: some of the scheduler's
	// histograms are not reset between workloads, so the report uses the
	// difference
	sumsAtNodes map[string]float64
	// initPods are the pods bound before the measured phase (a barrier
	// ends that phase), -1 when the probe cannot tell; attemptsAtInit the
	// attempt histograms once they were bound, attempts the measured
	// phase's (phase_test.go)
	initPods       int
	attemptsAtInit map[string]cumulative
	attempts       map[string]cumulative
	// measuredCycles counts the scheduling cycles (PreFilter calls) begun
	// after the pods before the measured phase were bound: the measured
	// histograms should count as many attempts
	measuredCycles int
	// marks are the times each pod's current attempt reached Permit's and
	// PreBind's returns; segments the measured pods' last attempts
	// (segments_test.go)
	marks    map[types.UID]marks
	segments []segments
}

// probe records, for every pod the scheduler handles, when its scheduling
// cycle began (PreFilter) and ended (Permit), when it left Permit for its
// binding cycle, and when it was bound, by wrapping the scheduler's
// profiles (its framework.Framework values) once the harness has started
// it. Only the five calls below are intercepted; the plugins run unchanged.
type probe struct {
	mu   sync.Mutex
	cur  *probeRun
	runs []*probeRun
}

var theProbe probe

// preRun is the harness's PreRunFn: a new record per workload.
func (pr *probe) preRun(tCtx ktesting.TContext, w *perf.Workload) (func(), error) {
	expect, initPods := 0, -1
	if g, err := w.GetParam("initPodGroups"); err == nil {
		// upstream's TopologyAwareScheduling: every pod is measured
		initPods = 0
		unit, err := w.GetParam("podsPerUnit")
		if err != nil {
			unit, _ = w.GetParam("podsPerGroup")
		}
		expect = g * unit
	} else if g, err := w.GetParam("lowPriorityGroups"); err == nil {
		// upstream's PreemptionPodGroupDisruptionMode: the low-priority
		// pods, then the preemptors (a victim, deleted, is not bound again)
		unit, _ := w.GetParam("podsPerGroup")
		high, _ := w.GetParam("measurePods")
		expect, initPods = g*unit+high, g*unit
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.cur = &probeRun{name: tCtx.Name(), expectPods: expect, groups: map[string]*groupTimes{}, cycleStart: map[types.UID]time.Time{},
		firstTry: map[types.UID]time.Time{}, loadStart: loadavg(), initPods: initPods, marks: map[types.UID]marks{}}
	pr.runs = append(pr.runs, pr.cur)
	return nil, nil
}

// nodesCreated is the harness's NodeUpdateFn, run after the nodes are
// created and before any pod is: it wraps the scheduler's profiles.
func (pr *probe) nodesCreated(_ ktesting.TContext, s *scheduler.Scheduler, _ *perf.Workload, nodes *v1.NodeList) error {
	sums := gatherSums()
	attempts := readAttempts()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	pr.mu.Lock()
	if pr.cur != nil {
		if pr.cur.initPods == 0 {
			pr.cur.attemptsAtInit = attempts
		}
		pr.cur.heapAtNodes = ms.HeapInuse
		pr.cur.sumsAtNodes = sums
		pr.cur.rack = map[string]string{}
		if nodes != nil {
			for _, n := range nodes.Items {
				if r := n.Labels[rackLabel]; r != "" {
					pr.cur.rack[n.Name] = r
				}
			}
		}
	}
	pr.mu.Unlock()
	for name, f := range s.Profiles {
		if _, ok := f.(*probed); !ok {
			s.Profiles[name] = &probed{Framework: f, pr: pr}
		}
	}
	return nil
}

func (pr *probe) group(p *v1.Pod) *groupTimes {
	key := groupOf(p)
	if key == "" || pr.cur == nil {
		return nil
	}
	key = p.Namespace + "/" + key
	g := pr.cur.groups[key]
	if g == nil {
		g = &groupTimes{}
		pr.cur.groups[key] = g
	}
	return g
}

type probed struct {
	framework.Framework
	pr *probe
}

func (f *probed) RunPreFilterPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod) (*fwk.PreFilterResult, *fwk.Status, sets.Set[string]) {
	now := time.Now()
	f.pr.mu.Lock()
	if r := f.pr.cur; r != nil {
		r.cycleStart[pod.UID] = now
		if r.initPods >= 0 && r.bound >= r.initPods {
			r.measuredCycles++
		}
		if _, ok := r.firstTry[pod.UID]; !ok {
			r.firstTry[pod.UID] = now
		}
		if r.start.IsZero() {
			r.start = now
			r.cpuStart = readCPU()
		}
		if g := f.pr.group(pod); g != nil {
			g.attempts++
			if g.first.IsZero() {
				g.first = now
			}
		}
	}
	f.pr.mu.Unlock()
	return f.Framework.RunPreFilterPlugins(ctx, state, pod)
}

func (f *probed) RunPermitPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) (map[string]time.Duration, *fwk.Status) {
	wait, st := f.Framework.RunPermitPlugins(ctx, state, pod, nodeName)
	now := time.Now()
	f.pr.mu.Lock()
	if r := f.pr.cur; r != nil && (st.IsSuccess() || st.IsWait()) {
		r.marks[pod.UID] = marks{permit: now}
		if g := f.pr.group(pod); g != nil {
			g.pods++
			g.cycles = append(g.cycles, [2]time.Time{r.cycleStart[pod.UID], now})
			g.lastPermit = now
		}
	}
	f.pr.mu.Unlock()
	return wait, st
}

func (f *probed) RunPreBindPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	st := f.Framework.RunPreBindPlugins(ctx, state, pod, nodeName)
	now := time.Now()
	f.pr.mu.Lock()
	if r := f.pr.cur; r != nil {
		if m, ok := r.marks[pod.UID]; ok {
			m.preBind = now
			r.marks[pod.UID] = m
		}
	}
	f.pr.mu.Unlock()
	return st
}

func (f *probed) WaitOnPermit(ctx context.Context, pod *v1.Pod) *fwk.Status {
	st := f.Framework.WaitOnPermit(ctx, pod)
	now := time.Now()
	f.pr.mu.Lock()
	if st.IsSuccess() {
		if g := f.pr.group(pod); g != nil {
			g.released++
			g.lastRelease = now
		}
	}
	f.pr.mu.Unlock()
	return st
}

func (f *probed) RunPostBindPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) {
	f.Framework.RunPostBindPlugins(ctx, state, pod, nodeName)
	now := time.Now()
	f.pr.mu.Lock()
	r := f.pr.cur
	last, initDone := false, false
	if r != nil {
		if g := f.pr.group(pod); g != nil {
			g.bound++
			g.lastBound = now
			if rk := r.rack[nodeName]; rk != "" {
				if g.racks == nil {
					g.racks = map[string]bool{}
				}
				g.racks[rk] = true
			}
		}
		if p := pod.Spec.Priority; p != nil && *p >= highPriority {
			if t, ok := r.firstTry[pod.UID]; ok {
				r.waits = append(r.waits, now.Sub(t))
				if r.highFirst.IsZero() || t.Before(r.highFirst) {
					r.highFirst = t
				}
				r.highLast = now
			}
		}
		r.noteSegments(pod.UID, now)
		r.bound++
		r.end = now
		initDone = r.bound == r.initPods
		last = r.bound == r.expectPods
		if last {
			r.cpuEnd = readCPU()
			r.loadEnd = loadavg()
		}
	}
	f.pr.mu.Unlock()
	if initDone {
		// Every pod before the barrier is bound, and its attempts were
		// observed (kube-scheduler observes an attempt before PostBind).
		at := readAttempts()
		f.pr.mu.Lock()
		r.attemptsAtInit = at
		f.pr.mu.Unlock()
	}
	if last {
		at := readAttempts()
		f.pr.mu.Lock()
		if r.attemptsAtInit != nil {
			r.attempts = map[string]cumulative{}
			for res, c := range at {
				r.attempts[res] = c.since(r.attemptsAtInit[res])
			}
		}
		f.pr.mu.Unlock()
		// The scheduler's memory at the end: every pod bound, after a
		// collection. The process also holds the API server.
		sums := gatherSums()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		f.pr.mu.Lock()
		r.heapInuse = ms.HeapInuse
		for k, v := range sums {
			sums[k] = v - r.sumsAtNodes[k]
		}
		r.sums = sums
		f.pr.mu.Unlock()
	}
}

// gatherSums reads the sums of the histograms that say where a scheduling
// cycle's time goes: kube-scheduler's extension points (by extension point,
// all profiles together), its scheduling algorithm, fluence's core loop.
func gatherSums() map[string]float64 {
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return nil
	}
	sums := map[string]float64{}
	for _, mf := range mfs {
		name := mf.GetName()
		switch name {
		case "scheduler_preemption_attempts_total", "fluence_preemptions_total", "fluence_evicted_pods_total":
			for _, m := range mf.GetMetric() {
				sums[name] += m.GetCounter().GetValue()
			}
			continue
		case "scheduler_preemption_victims", "scheduler_workload_preemption_victims":
		case "scheduler_framework_extension_point_duration_seconds", "scheduler_plugin_execution_duration_seconds",
			"scheduler_scheduling_algorithm_duration_seconds", "fluence_loop_duration_seconds",
			"scheduler_scheduling_attempt_duration_seconds", "scheduler_podgroup_scheduling_attempt_duration_seconds",
			"scheduler_podgroup_scheduling_algorithm_duration_seconds":
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			if h == nil {
				continue
			}
			key := name
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "extension_point", "plugin":
					key += "/" + l.GetValue()
				}
			}
			sums[key] += h.GetSampleSum()
			sums[key+"#count"] += float64(h.GetSampleCount())
		}
	}
	return sums
}
