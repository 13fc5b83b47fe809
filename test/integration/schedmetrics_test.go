package integration

import (
	"fmt"
	"strings"

	"k8s.io/component-base/metrics/legacyregistry"
)

// metricsSnapshot is every series of the process's legacy metrics registry
// at one moment: kube-scheduler's own (scheduler_*) and the fluence
// plugin's (fluence_*), which the in-process schedulers all share. A
// histogram series gives two values, NAME_count and NAME_sum; a counter or
// gauge its value. Compare two snapshots (sub) to see what one scheduler
// did between them; series of several schedulers are told apart by their
// "profile" label where kube-scheduler has one.
type metricsSnapshot []metricSeries

type metricSeries struct {
	name   string
	labels map[string]string
	value  float64
}

func takeMetrics() metricsSnapshot {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return nil
	}
	var out metricsSnapshot
	for _, f := range families {
		name := f.GetName()
		if !strings.HasPrefix(name, "scheduler_") && !strings.HasPrefix(name, "fluence_") {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			switch {
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				out = append(out,
					metricSeries{name + "_count", labels, float64(h.GetSampleCount())},
					metricSeries{name + "_sum", labels, h.GetSampleSum()})
			case m.GetCounter() != nil:
				out = append(out, metricSeries{name, labels, m.GetCounter().GetValue()})
			case m.GetGauge() != nil:
				out = append(out, metricSeries{name, labels, m.GetGauge().GetValue()})
			}
		}
	}
	return out
}

// get sums the series called name whose labels include every pair of
// match (given as "key", "value", ...).
func (s metricsSnapshot) get(name string, match ...string) float64 {
	total := 0.0
next:
	for _, x := range s {
		if x.name != name {
			continue
		}
		for i := 0; i+1 < len(match); i += 2 {
			if x.labels[match[i]] != match[i+1] {
				continue next
			}
		}
		total += x.value
	}
	return total
}

// delta returns after.get - before.get.
func metricDelta(before, after metricsSnapshot, name string, match ...string) float64 {
	return after.get(name, match...) - before.get(name, match...)
}

// schedulerActivity is what one scheduler profile did between two
// snapshots, from kube-scheduler's and fluence's metrics.
type schedulerActivity struct {
	Attempts     map[string]float64 // scheduling attempts by result
	Algorithm    float64            // scheduling_algorithm_duration_seconds sum (PreFilter to Score; every profile)
	PreFilter    float64            // seconds in PreFilter (fluence: the engine matches it runs)
	Reserve      float64            // seconds in Reserve extension points
	Permit       float64            // seconds in Permit extension points
	PermitWait   float64            // seconds pods waited at Permit (all profiles)
	Bind         float64            // seconds in Bind extension points (the API calls)
	BindCalls    float64            // Bind extension point runs
	EngineLoops  float64            // fluence core loops (fluence_loop_duration_seconds count)
	EngineSecs   float64            // their total time
	PendingAfter float64            // scheduler_pending_pods at the end (every queue and scheduler)
}

func activity(before, after metricsSnapshot, profile string) schedulerActivity {
	a := schedulerActivity{Attempts: map[string]float64{}}
	for _, r := range []string{"scheduled", "unschedulable", "error"} {
		if d := metricDelta(before, after, "scheduler_schedule_attempts_total", "profile", profile, "result", r); d != 0 {
			a.Attempts[r] = d
		}
	}
	a.Algorithm = metricDelta(before, after, "scheduler_scheduling_algorithm_duration_seconds_sum")
	a.PreFilter = metricDelta(before, after, "scheduler_framework_extension_point_duration_seconds_sum", "profile", profile, "extension_point", "PreFilter")
	a.Reserve = metricDelta(before, after, "scheduler_framework_extension_point_duration_seconds_sum", "profile", profile, "extension_point", "Reserve")
	a.Permit = metricDelta(before, after, "scheduler_framework_extension_point_duration_seconds_sum", "profile", profile, "extension_point", "Permit")
	a.PermitWait = metricDelta(before, after, "scheduler_permit_wait_duration_seconds_sum")
	a.Bind = metricDelta(before, after, "scheduler_framework_extension_point_duration_seconds_sum", "profile", profile, "extension_point", "Bind")
	a.BindCalls = metricDelta(before, after, "scheduler_framework_extension_point_duration_seconds_count", "profile", profile, "extension_point", "Bind")
	a.EngineLoops = metricDelta(before, after, "fluence_loop_duration_seconds_count")
	a.EngineSecs = metricDelta(before, after, "fluence_loop_duration_seconds_sum")
	a.PendingAfter = after.get("scheduler_pending_pods")
	return a
}

func (a schedulerActivity) attempts() float64 {
	n := 0.0
	for _, v := range a.Attempts {
		n += v
	}
	return n
}

// cycleSecs is the time the scheduler's one scheduling goroutine spent
// deciding: the scheduling algorithm (PreFilter, Filter, PostFilter,
// Score) plus Reserve and the Permit plugins' own run (not the wait). The
// binding cycles run on other goroutines.
func (a schedulerActivity) cycleSecs() float64 { return a.Algorithm + a.Reserve + a.Permit }

func (a schedulerActivity) String() string {
	return fmt.Sprintf("attempts %v; scheduling cycles %.2f s (algorithm %.2f s, of which PreFilter %.2f s; Reserve %.3f s; Permit %.3f s); Bind %.0f calls, %.2f s in all; pods waited %.2f s at Permit in all; engine loops %.0f (%.3f s); pending pods at the end %.0f",
		a.Attempts, a.cycleSecs(), a.Algorithm, a.PreFilter, a.Reserve, a.Permit, a.BindCalls, a.Bind, a.PermitWait, a.EngineLoops, a.EngineSecs, a.PendingAfter)
}
