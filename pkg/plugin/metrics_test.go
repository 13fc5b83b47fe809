package plugin

import (
	"errors"
	"strings"
	"testing"

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
