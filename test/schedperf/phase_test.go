//go:build schedperf

package schedperf

import (
	"fmt"
	"math"
	"slices"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

// The harness's histograms are not the measured phase's. Before the
// measured operation its metrics collector "resets" the families it
// collects, but it resets the copies it gathered, not the metrics: what
// it reports covers the whole workload since the scheduler started. In
// upstream's preemption workloads that is 10,000 low-priority pods
// scheduled and bound before the barrier, then 100 preemptors: the
// harness's attempt percentiles are mostly those of the first phase.
// The probe takes the attempt histograms when the last pod before the
// measured phase is bound and again when the last pod is bound, and
// reports the percentiles of the difference, computed as the harness
// computes its own (linear within a bucket).

// attemptMetric is kube-scheduler's per-attempt histogram.
const attemptMetric = "scheduler_scheduling_attempt_duration_seconds"

// attemptResults are the results the report shows.
var attemptResults = []string{"scheduled", "unschedulable"}

// cumulative is a histogram summed over its label sets (every profile):
// each bucket's cumulative count by upper bound, the sample count and
// the samples' sum (seconds).
type cumulative struct {
	bounds []float64
	counts []uint64
	total  uint64
	sum    float64
}

// readAttempts reads the attempt histograms, by result; nil when it
// cannot.
func readAttempts() map[string]cumulative {
	gm, err := testutil.GatherMetrics(legacyregistry.DefaultGatherer)
	if err != nil {
		return nil
	}
	out := map[string]cumulative{}
	for _, res := range attemptResults {
		vec, err := gm.GetHistogramVec(attemptMetric, map[string]string{"result": res})
		if err != nil || vec.Validate() != nil {
			out[res] = cumulative{}
			continue
		}
		var c cumulative
		for i, h := range vec {
			for j, b := range h.GetBucket() {
				if i == 0 {
					c.bounds = append(c.bounds, b.GetUpperBound())
					c.counts = append(c.counts, 0)
				}
				c.counts[j] += b.GetCumulativeCount()
			}
			c.total += h.GetSampleCount()
			c.sum += h.GetSampleSum()
		}
		out[res] = c
	}
	return out
}

// since is what was observed after before: the bucket counts less
// before's (a histogram that did not exist then counts from zero).
func (c cumulative) since(before cumulative) cumulative {
	d := cumulative{bounds: c.bounds, counts: make([]uint64, len(c.counts)), total: c.total - before.total, sum: c.sum - before.sum}
	for i := range c.counts {
		d.counts[i] = c.counts[i]
		if len(before.counts) == len(c.counts) {
			d.counts[i] -= before.counts[i]
		}
	}
	return d
}

// quantile is the q-quantile in ms, as the harness computes it
// (testutil.HistogramVec.Quantile); NaN without samples.
func (c cumulative) quantile(q float64) float64 {
	if c.total == 0 {
		return math.NaN()
	}
	h := &dto.Histogram{SampleCount: &c.total}
	for i := range c.bounds {
		n, ub := c.counts[i], c.bounds[i]
		h.Bucket = append(h.Bucket, &dto.Bucket{CumulativeCount: &n, UpperBound: &ub})
	}
	return 1e3 * testutil.HistogramVec{&testutil.Histogram{Histogram: h}}.Quantile(q)
}

// measuredAttempts renders the measured phase's scheduled and
// unschedulable attempts: P50/P99 ms and how many.
func measuredAttempts(r *probeRun) (sched, unsch string) {
	if r.attempts == nil {
		return "-", "-"
	}
	mark := ""
	if n := r.attempts["scheduled"].total + r.attempts["unschedulable"].total; int(n) != r.measuredCycles {
		mark = "!"
	}
	show := func(c cumulative) string {
		if c.total == 0 {
			return "- (0)"
		}
		return fmt.Sprintf("%.2f/%.2f (%d%s)", c.quantile(0.5), c.quantile(0.99), c.total, mark)
	}
	return show(r.attempts["scheduled"]), show(r.attempts["unschedulable"])
}

// plus is both histograms' samples together; one without samples adds
// nothing.
func (c cumulative) plus(o cumulative) cumulative {
	if o.total == 0 && len(o.counts) == 0 {
		return c
	}
	if len(c.counts) == 0 {
		return cumulative{bounds: o.bounds, counts: slices.Clone(o.counts), total: o.total, sum: o.sum}
	}
	d := cumulative{bounds: c.bounds, counts: slices.Clone(c.counts), total: c.total + o.total, sum: c.sum + o.sum}
	for i := range d.counts {
		d.counts[i] += o.counts[i]
	}
	return d
}

// pooledAttempts renders the measured attempts of every run of one
// workload and variant together (SCHEDPERF_REPEAT): with a hundred
// preemptors a run's P99 is about its slowest attempt or two, so two
// schedulers' P99s compare better over several runs' attempts. ok is
// false unless every run has the measured phase.
func pooledAttempts(runs []*probeRun) (sched, unsch string, ok bool) {
	pool := map[string]cumulative{}
	for _, r := range runs {
		if r.attempts == nil {
			return "", "", false
		}
		for _, res := range attemptResults {
			pool[res] = pool[res].plus(r.attempts[res])
		}
	}
	show := func(c cumulative) string {
		if c.total == 0 {
			return "- (0)"
		}
		return fmt.Sprintf("%.2f/%.2f (%d)", c.quantile(0.5), c.quantile(0.99), c.total)
	}
	return show(pool["scheduled"]), show(pool["unschedulable"]), true
}
