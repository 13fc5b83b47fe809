package plugin

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// Metrics are served on the scheduler's /metrics endpoint with the stock
// scheduler's own.
var (
	loopDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      "fluence",
		Name:           "loop_duration_seconds",
		Help:           "Time of one periodic pass of the gang core (Tick): the queue loop and the engine matches of every group it considered.",
		Buckets:        metrics.ExponentialBuckets(0.00001, 4, 10),
		StabilityLevel: metrics.ALPHA,
	})
	loopGroups = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      "fluence",
		Name:           "loop_groups",
		Help:           "Groups one queue loop considered.",
		Buckets:        metrics.ExponentialBuckets(1, 2, 12),
		StabilityLevel: metrics.ALPHA,
	})
	groupsByState = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "fluence",
		Name:           "groups",
		Help:           "Pod groups by state: gathering (waiting for their pods), queued, placed, rejected, invalid.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"state"})
	queueLength = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem:      "fluence",
		Name:           "queue_length",
		Help:           "Allocation requests waiting in the queue (pending, reserved or blocked).",
		StabilityLevel: metrics.ALPHA,
	})
	reservations = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem:      "fluence",
		Name:           "reservations",
		Help:           "Groups holding a reservation (a planned start in the future).",
		StabilityLevel: metrics.ALPHA,
	})
	allocated = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "fluence",
		Name:           "allocated",
		Help:           "Resources held by allocations and foreign pods: cpu in cores, memory in bytes, gpu, pods.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"resource"})
	allocatable = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "fluence",
		Name:           "allocatable",
		Help:           "Resources of the nodes: cpu in cores, memory in bytes, gpu, pods.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"resource"})
	graphRebuilds = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem:      "fluence",
		Name:           "graph_rebuilds",
		Help:           "Resource graphs built since the scheduler started (a node added or removed, or its capacity changed).",
		StabilityLevel: metrics.ALPHA,
	})
	metricsOnce sync.Once
)

func registerMetrics() {
	metricsOnce.Do(func() {
		legacyregistry.MustRegister(loopDuration, loopGroups, groupsByState, queueLength, reservations, allocated, allocatable, graphRebuilds)
	})
}

func observeLoop(s gang.LoopStats) { loopGroups.Observe(float64(s.Decisions)) }

// publish sets the gauges.
func publish(s gang.Stats) {
	for state, n := range s.Groups {
		groupsByState.WithLabelValues(state).Set(float64(n))
	}
	queueLength.Set(float64(s.Queued))
	reservations.Set(float64(s.Reserved))
	set := func(v *metrics.GaugeVec, r gang.Resources) {
		v.WithLabelValues("cpu").Set(float64(r.MilliCPU) / 1000)
		v.WithLabelValues("memory").Set(float64(r.MemoryBytes))
		v.WithLabelValues("gpu").Set(float64(r.GPU))
		v.WithLabelValues("pods").Set(float64(r.Pods))
	}
	set(allocated, s.Allocated)
	set(allocatable, s.Allocatable)
	graphRebuilds.Set(float64(s.GraphRebuilds))
}
