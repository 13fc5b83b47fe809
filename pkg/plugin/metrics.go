package plugin

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/fluence-sched/fluence/pkg/k8sadapter"
)

// Metrics are served on the scheduler's /metrics endpoint with the stock
// scheduler's own.
var (
	loopDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      "fluence",
		Name:           "match_duration_seconds",
		Help:           "Time of one queue loop: the engine matches of every group it considered.",
		Buckets:        metrics.ExponentialBuckets(0.00001, 4, 10),
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
		Help:           "Resources held by allocations and foreign pods, in graph units (cores, MiB, GPUs).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"resource"})
	allocatable = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "fluence",
		Name:           "allocatable",
		Help:           "Resources of the nodes in the graph, in graph units (cores, MiB, GPUs).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"resource"})
	metricsOnce sync.Once
)

func registerMetrics() {
	metricsOnce.Do(func() {
		legacyregistry.MustRegister(loopDuration, groupsByState, queueLength, reservations, allocated, allocatable)
	})
}

// snapshot is the state the gauges show.
type snapshot struct {
	groups           map[string]int
	queued, reserved int
	allocated, total map[string]int64
}

// snapshot reads the figures; callers hold the lock.
func (c *cluster) snapshot() snapshot {
	s := snapshot{groups: map[string]int{}, allocated: map[string]int64{}, total: map[string]int64{}}
	for _, name := range groupStateNames {
		s.groups[name] = 0
	}
	for _, gr := range c.groups {
		s.groups[c.phase(gr).String()]++
		if gr.reservedAt >= 0 {
			s.reserved++
		}
		for _, a := range gr.allocs {
			if !a.running {
				s.queued++
				continue
			}
			for _, sl := range a.slots {
				if sl.done {
					continue
				}
				s.allocated["cpu"] += sl.shape.Cores
				s.allocated["memory"] += sl.shape.MemoryMiB
				s.allocated["gpu"] += sl.shape.GPU
			}
		}
	}
	for _, pods := range c.foreign {
		for _, r := range pods {
			sh := k8sadapter.PodShape(r)
			s.allocated["cpu"] += sh.Cores
			s.allocated["memory"] += sh.MemoryMiB
			s.allocated["gpu"] += sh.GPU
		}
	}
	for _, n := range c.nodes {
		a := n.Status.Allocatable
		s.total["cpu"] += a.Cpu().MilliValue() / 1000
		s.total["memory"] += a.Memory().Value() >> 20
		s.total["gpu"] += c.opts.NodeGPUs(n)
	}
	return s
}

// publish sets the gauges; callers hold the lock.
func (c *cluster) publish() {
	s := c.snapshot()
	for state, n := range s.groups {
		groupsByState.WithLabelValues(state).Set(float64(n))
	}
	queueLength.Set(float64(s.queued))
	reservations.Set(float64(s.reserved))
	for _, r := range []string{"cpu", "memory", "gpu"} {
		allocated.WithLabelValues(r).Set(float64(s.allocated[r]))
		allocatable.WithLabelValues(r).Set(float64(s.total[r]))
	}
}
