package plugin

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// Two fluence profiles in one process publish separate series.
func TestMetricsByProfile(t *testing.T) {
	registerMetrics()
	a, b := profileMetrics{profile: "fluence-a"}, profileMetrics{profile: "fluence-b"}
	a.publish(gang.Stats{Groups: map[string]int{"queued": 3}, Queued: 3, Allocatable: gang.Resources{MilliCPU: 8000}})
	b.publish(gang.Stats{Groups: map[string]int{"queued": 1}, Queued: 1, Allocatable: gang.Resources{MilliCPU: 2000}})
	want := `
# HELP fluence_queue_length [ALPHA] Allocation requests waiting in the queue (pending, reserved or blocked).
# TYPE fluence_queue_length gauge
fluence_queue_length{profile="fluence-a"} 3
fluence_queue_length{profile="fluence-b"} 1
`
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want), "fluence_queue_length"); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct {
		profile string
		cpu     float64
	}{{"fluence-a", 8}, {"fluence-b", 2}} {
		got, err := testutil.GetGaugeMetricValue(allocatable.WithLabelValues(tc.profile, "cpu"))
		if err != nil || got != tc.cpu {
			t.Errorf("%s allocatable cpu = %v (%v), want %v", tc.profile, got, err, tc.cpu)
		}
	}
}

// noEvents is a framework handle without an event recorder: apply reaches
// no other part of it for effects that only carry errors.
type noEvents struct{ fwk.Handle }

func (noEvents) EventRecorder() events.EventRecorderLogger { return nil }

// Each internal error of the core is counted by profile and operation.
func TestInternalErrorsCounted(t *testing.T) {
	registerMetrics()
	p := &Plugin{h: noEvents{}, metrics: profileMetrics{profile: "fluence-errors"}}
	p.apply(gang.Effects{Errors: []gang.InternalError{
		{Op: "extend", Group: "ns/a", Err: errors.New("queue: group 7 is not running")},
		{Op: "extend", Group: "ns/b", Err: errors.New("queue: group 9 is not running")},
		{Op: "schedule", Err: errors.New("match: boom")},
	}})
	for op, want := range map[string]float64{"extend": 2, "schedule": 1, "remove": 0} {
		got, err := testutil.GetCounterMetricValue(internalErrors.WithLabelValues("fluence-errors", op))
		if err != nil || got != want {
			t.Errorf("fluence_internal_errors_total{op=%q} = %v (%v), want %v", op, got, err, want)
		}
	}
}

// Each placement of a group that asked for a domain is counted by how it
// asked and the level it got; a preference no domain met counts as none.
func TestTopologyPlacementsCounted(t *testing.T) {
	registerMetrics()
	p := &Plugin{h: noEvents{}, metrics: profileMetrics{profile: "fluence-topology"}}
	p.apply(gang.Effects{Placements: []gang.Placement{
		{Group: "ns/a", Asked: "required", Level: "example.com/rack"},
		{Group: "ns/b", Asked: "required", Level: "example.com/rack"},
		{Group: "ns/c", Asked: "preferred", Level: "example.com/block"},
		{Group: "ns/d", Asked: "preferred"},
	}})
	for _, tc := range []struct {
		asked, level string
		want         float64
	}{
		{"required", "example.com/rack", 2},
		{"preferred", "example.com/block", 1},
		{"preferred", "none", 1},
		{"preferred", "example.com/rack", 0},
	} {
		got, err := testutil.GetCounterMetricValue(topologyPlacements.WithLabelValues("fluence-topology", tc.asked, tc.level))
		if err != nil || got != tc.want {
			t.Errorf("fluence_topology_placements_total{asked=%q,level=%q} = %v (%v), want %v", tc.asked, tc.level, got, err, tc.want)
		}
	}
}

// profileSeries returns the profile's fluence series by metric name: a
// counter's or gauge's value, a histogram's count of observations.
func profileSeries(t *testing.T, profile string) map[string]float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "fluence_") {
			continue
		}
		for _, m := range f.GetMetric() {
			mine := false
			for _, l := range m.GetLabel() {
				mine = mine || l.GetName() == "profile" && l.GetValue() == profile
			}
			if !mine {
				continue
			}
			switch {
			case m.GetHistogram() != nil:
				out[f.GetName()] += float64(m.GetHistogram().GetSampleCount())
			case m.GetCounter() != nil:
				out[f.GetName()] += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[f.GetName()] += m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// What the core decided about groups is counted from its effects: each
// first placement's wait, converted from core ticks to seconds, and each
// rejection and withdrawal.
func TestGroupsDecidedCounted(t *testing.T) {
	registerMetrics()
	for i, tc := range []struct {
		name string
		fx   gang.Effects
		// waits: the observations expected in the histogram; le maps a
		// bucket's bound to the observations at or below it.
		waits                  []float64
		le                     map[float64]uint64
		rejections, withdrawal float64
	}{
		{
			name: "nothing decided",
			fx:   gang.Effects{Events: []gang.Event{{Reason: "FluenceGroupWaiting"}}},
		},
		{
			name:  "waits in milliseconds",
			fx:    gang.Effects{Placed: []gang.GroupPlaced{{Group: "ns/a", Waited: 20}, {Group: "ns/b", Waited: 1500}, {Group: "ns/c", Waited: 4_000_000}}},
			waits: []float64{0.02, 1.5, 4000},
			// 4,000 s is past an hour and within the next bucket: an
			// alert at 3,600 s can see it.
			le: map[float64]uint64{0.01: 0, 0.05: 1, 1: 1, 5: 2, 3600: 2, 7200: 3, 14400: 3},
		},
		{
			name:       "rejections and withdrawals",
			fx:         gang.Effects{Rejected: []string{"ns/x", "ns/y"}, Withdrawn: []string{"ns/a", "ns/a", "ns/b"}},
			rejections: 2, withdrawal: 3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			profile := fmt.Sprintf("fluence-decided-%d", i)
			p := &Plugin{h: noEvents{}, metrics: profileMetrics{profile: profile}}
			p.metrics.start()
			p.apply(tc.fx)
			got := profileSeries(t, profile)
			sum := 0.0
			for _, w := range tc.waits {
				sum += w
			}
			for name, want := range map[string]float64{
				"fluence_group_wait_seconds":      float64(len(tc.waits)),
				"fluence_group_rejections_total":  tc.rejections,
				"fluence_group_withdrawals_total": tc.withdrawal,
				"fluence_permit_timeouts_total":   0,
				"fluence_bind_failures_total":     0,
			} {
				if v, ok := got[name]; !ok || v != want {
					t.Errorf("%s{profile=%q} = %v (present %v), want %v", name, profile, v, ok, want)
				}
			}
			if s, err := testutil.GetHistogramMetricValue(groupWait.WithLabelValues(profile)); err != nil || math.Abs(s-sum) > 1e-9 {
				t.Errorf("fluence_group_wait_seconds_sum = %v (%v), want %v", s, err, sum)
			}
			vec, err := testutil.GetHistogramVecFromGatherer(legacyregistry.DefaultGatherer, "fluence_group_wait_seconds", map[string]string{"profile": profile})
			if err != nil || len(vec) != 1 {
				t.Fatalf("fluence_group_wait_seconds{profile=%q}: %d series (%v)", profile, len(vec), err)
			}
			found := 0
			for _, b := range vec[0].GetBucket() {
				want, ok := tc.le[b.GetUpperBound()]
				if !ok {
					continue
				}
				found++
				if b.GetCumulativeCount() != want {
					t.Errorf("bucket le=%v holds %d waits, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
				}
			}
			if found != len(tc.le) {
				t.Errorf("%d of the buckets %v exist", found, tc.le)
			}
		})
	}
}

// A profile's wait histogram and counters exist, at zero, once it starts
// to act, and not before: a standby exports no fluence series.
func TestStartMakesSeries(t *testing.T) {
	registerMetrics()
	m := profileMetrics{profile: "fluence-started"}
	if got := profileSeries(t, m.profile); len(got) > 0 {
		t.Fatalf("series before start: %v", got)
	}
	m.start()
	got := profileSeries(t, m.profile)
	for _, name := range []string{"fluence_group_wait_seconds", "fluence_group_rejections_total", "fluence_group_withdrawals_total",
		"fluence_permit_timeouts_total", "fluence_bind_failures_total", "fluence_preemptions_total", "fluence_evicted_pods_total"} {
		if v, ok := got[name]; !ok || v != 0 {
			t.Errorf("%s after start = %v (present %v), want 0", name, v, ok)
		}
	}
}

// permitWaits takes a pod's failure for a timeout only when the pod was
// waiting and its deadline is past; a wait the core ended, or a pod that
// never waited, is none.
func TestPermitWaits(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		steps  func(w *permitWaits)
		at     time.Duration // when the pod is unreserved, after t0
		wantTO bool
	}{
		{name: "never waited", steps: func(*permitWaits) {}, at: time.Minute},
		{name: "ran out", steps: func(w *permitWaits) { w.start("p", t0.Add(30*time.Second)) }, at: 30 * time.Second, wantTO: true},
		{name: "failed before its deadline", steps: func(w *permitWaits) { w.start("p", t0.Add(30*time.Second)) }, at: 29 * time.Second},
		{name: "let through or turned away first", steps: func(w *permitWaits) {
			w.start("p", t0.Add(time.Second))
			w.forget("p")
		}, at: time.Minute},
		{name: "another pod's wait", steps: func(w *permitWaits) { w.start("q", t0) }, at: time.Minute},
		{name: "waited again, longer", steps: func(w *permitWaits) {
			w.start("p", t0.Add(time.Second))
			w.start("p", t0.Add(time.Hour))
		}, at: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w permitWaits
			tc.steps(&w)
			if got := w.end("p", t0.Add(tc.at)); got != tc.wantTO {
				t.Errorf("end = %v, want %v", got, tc.wantTO)
			}
			if w.end("p", t0.Add(24*time.Hour)) {
				t.Error("a second end of the same wait counts again")
			}
		})
	}
}
