package plugin

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// Metrics are served on the scheduler's /metrics endpoint with the stock
// scheduler's own. Each carries the profile (the scheduler name) whose
// fluence it describes: one process may run several fluence profiles, each
// with its own core, and kube-scheduler's own metrics are labelled so too.
var (
	loopDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      "fluence",
		Name:           "loop_duration_seconds",
		Help:           "Time of one periodic pass of the gang core (Tick): the queue loop and the engine matches of every group it considered.",
		Buckets:        metrics.ExponentialBuckets(0.00001, 4, 10),
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	loopGroups = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      "fluence",
		Name:           "loop_groups",
		Help:           "Groups one queue loop considered.",
		Buckets:        metrics.ExponentialBuckets(1, 2, 12),
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	groupsByState = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "fluence",
		Name:           "groups",
		Help:           "Pod groups by state: gathering (waiting for their pods), queued, placed, rejected, invalid.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile", "state"})
	queueLength = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "fluence",
		Name:           "queue_length",
		Help:           "Allocation requests waiting in the queue (pending, reserved or blocked).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	reservations = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "fluence",
		Name:           "reservations",
		Help:           "Groups holding a reservation (a planned start in the future).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	allocated = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "fluence",
		Name:           "allocated",
		Help:           "Resources held by allocations and foreign pods: cpu in cores, memory in bytes, gpu, pods.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile", "resource"})
	allocatable = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "fluence",
		Name:           "allocatable",
		Help:           "Resources of the nodes: cpu in cores, memory in bytes, gpu, pods.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile", "resource"})
	graphRebuilds = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "fluence",
		Name:           "graph_rebuilds",
		Help:           "Resource graphs built since the scheduler started (a node added or removed, or its capacity changed).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	topologyPlacements = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "fluence",
		Name:           "topology_placements_total",
		Help:           "Groups placed that asked for a topology domain, by how they asked (required, preferred) and the level they got: the label key of the domain, or none (a preference no domain met).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile", "asked", "level"})
	internalErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "fluence",
		Name:           "internal_errors_total",
		Help:           "Failures inside the gang core (an engine call that should not fail), by operation. Any is a bug; each is also logged.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile", "op"})
	preemptions = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: "fluence",
		Name:      "preemptions_total",
		Help: "Preemptions decided: a waiting group evicting running groups of lower priority (whole, or single pods of groups whose disruptionMode is single) to start, one per preempting group however many groups and pods it evicts; " +
			"also one when fluence evicts the rest of a gang a member of which another scheduler preempted.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	evictedPods = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: "fluence",
		Name:      "evicted_pods_total",
		Help: "Pods deleted for a preemption, each marked with the DisruptionTarget condition first; a pod already gone is not counted. " +
			"Not labelled by priority: a pod's priority is any 32-bit integer, so a label would make the series unbounded.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	groupWait = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem: "fluence",
		Name:      "group_wait_seconds",
		Help: "Time a pod group waited to be placed: from when the scheduler first saw a pod of it to when its first placement was let through whole (every pod of it reserved). " +
			"Once per group, a withdrawn placement's wait included; a pod outside any group counts as a group of one.",
		// Round numbers from 10 ms to four hours, so an alert's threshold
		// can be a bucket's bound. histogram_quantile reads a quantile
		// beyond the top finite bound as that bound, so a threshold must
		// lie below it: 3,600 s, the wait alert's documented setting,
		// needs the buckets past an hour (the chart's schema refuses a
		// threshold of 14,400 s or more).
		Buckets:        []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400},
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	groupRejections = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: "fluence",
		Name:      "group_rejections_total",
		Help: "Pod groups judged impossible (FluenceGroupRejected): the cluster can never hold them as they are. " +
			"Once per group and verdict: a group judged again when the nodes change counts again only when the verdict changed.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	groupWithdrawals = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "fluence",
		Name:           "group_withdrawals_total",
		Help:           "Allocations withdrawn before their group was let through (FluenceGroupWithdrawn): a pod failed after Reserve or went away, a node turned a pod away, a pod was bound elsewhere, the group's size changed.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	permitTimeouts = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "fluence",
		Name:           "permit_timeouts_total",
		Help:           "Pods whose wait at Permit for the rest of their allocation ran out (the plugin's permitTimeout); each also withdraws its allocation.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	bindFailures = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "fluence",
		Name:           "bind_failures_total",
		Help:           "Binding calls that failed (the API server refused or did not answer); the pod keeps its slot and binds there on its next try.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	cacheWaits = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: "fluence",
		Name:      "cache_waits_total",
		Help: "Scheduling cycles in which a pod waited because kube-scheduler's cache still held, on the node fluence chose, a pod that had ended: " +
			"the pod is tried again once the cache lets the ended pod go; its group keeps its placement.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	metricsOnce sync.Once
)

func registerMetrics() {
	metricsOnce.Do(func() {
		legacyregistry.MustRegister(loopDuration, loopGroups, groupsByState, queueLength, reservations, allocated, allocatable, graphRebuilds, topologyPlacements, internalErrors, preemptions, evictedPods,
			groupWait, groupRejections, groupWithdrawals, permitTimeouts, bindFailures, cacheWaits)
	})
}

// profileMetrics writes one profile's series.
type profileMetrics struct{ profile string }

// start makes the profile's wait histogram and its counters of failures
// exist at zero when the plugin starts to act (leads): a rate or an
// alert over a counter sees its first increase only if the series was
// there before it. A standby calls it not, and so exports no fluence
// series at all.
func (m profileMetrics) start() {
	groupWait.WithLabelValues(m.profile)
	for _, v := range []*metrics.CounterVec{groupRejections, groupWithdrawals, permitTimeouts, bindFailures, preemptions, evictedPods, cacheWaits} {
		v.WithLabelValues(m.profile)
	}
}

// groupsDecided counts what the core decided about groups: first
// placements with their wait (core ticks), rejections, withdrawals.
func (m profileMetrics) groupsDecided(fx gang.Effects, ticksPerSecond int64) {
	for _, pl := range fx.Placed {
		groupWait.WithLabelValues(m.profile).Observe(float64(pl.Waited) / float64(ticksPerSecond))
	}
	if n := len(fx.Rejected); n > 0 {
		groupRejections.WithLabelValues(m.profile).Add(float64(n))
	}
	if n := len(fx.Withdrawn); n > 0 {
		groupWithdrawals.WithLabelValues(m.profile).Add(float64(n))
	}
}

func (m profileMetrics) permitTimedOut() {
	permitTimeouts.WithLabelValues(m.profile).Inc()
}

func (m profileMetrics) cacheWait() {
	cacheWaits.WithLabelValues(m.profile).Inc()
}

func (m profileMetrics) bindFailed() {
	bindFailures.WithLabelValues(m.profile).Inc()
}

func (m profileMetrics) observeLoop(s gang.LoopStats) {
	loopGroups.WithLabelValues(m.profile).Observe(float64(s.Decisions))
}

func (m profileMetrics) internalError(op string) {
	internalErrors.WithLabelValues(m.profile, op).Inc()
}

func (m profileMetrics) placed(p gang.Placement) {
	level := p.Level
	if level == "" {
		level = "none"
	}
	topologyPlacements.WithLabelValues(m.profile, p.Asked, level).Inc()
}

func (m profileMetrics) preempted(n int) {
	preemptions.WithLabelValues(m.profile).Add(float64(n))
}

func (m profileMetrics) evicted() {
	evictedPods.WithLabelValues(m.profile).Inc()
}

func (m profileMetrics) observeLoopTime(seconds float64) {
	loopDuration.WithLabelValues(m.profile).Observe(seconds)
}

// publish sets the gauges.
func (m profileMetrics) publish(s gang.Stats) {
	for state, n := range s.Groups {
		groupsByState.WithLabelValues(m.profile, state).Set(float64(n))
	}
	queueLength.WithLabelValues(m.profile).Set(float64(s.Queued))
	reservations.WithLabelValues(m.profile).Set(float64(s.Reserved))
	set := func(v *metrics.GaugeVec, r gang.Resources) {
		v.WithLabelValues(m.profile, "cpu").Set(float64(r.MilliCPU) / 1000)
		v.WithLabelValues(m.profile, "memory").Set(float64(r.MemoryBytes))
		v.WithLabelValues(m.profile, "gpu").Set(float64(r.GPU))
		v.WithLabelValues(m.profile, "pods").Set(float64(r.Pods))
	}
	set(allocated, s.Allocated)
	set(allocatable, s.Allocatable)
	graphRebuilds.WithLabelValues(m.profile).Set(float64(s.GraphRebuilds))
}
