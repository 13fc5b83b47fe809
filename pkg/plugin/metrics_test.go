package plugin

import (
	"strings"
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

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
