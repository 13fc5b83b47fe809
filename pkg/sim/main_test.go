package sim

import (
	"errors"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/queue"
)

// Every fluence run of the tests checks the core's invariants after every
// event: a simulation is a long, varied event sequence, and a broken
// record would otherwise show only as an odd result, if at all.
// Benchmarks measure the simulator as it runs outside tests, unchecked
// (BenchmarkSyntheticSmallChecked measures the check).
func TestMain(m *testing.M) {
	flag.Parse()
	checkAlways = flag.Lookup("test.bench").Value.String() == ""
	os.Exit(m.Run())
}

// An internal error of the core fails the event it happened in, once.
func TestInternalErrorsFailTheRun(t *testing.T) {
	s, err := NewFluence(FluenceConfig{Queue: queue.Config{Policy: queue.Easy}})
	if err != nil {
		t.Fatal(err)
	}
	f := s.(*fluence)
	if err := f.check(); err != nil {
		t.Fatalf("a fresh core: %v", err)
	}
	f.observe(gang.Effects{Errors: []gang.InternalError{{Op: "extend", Group: "sim/a", Err: errors.New("queue: group 3 is not running")}}})
	err = f.check()
	if err == nil || !strings.Contains(err.Error(), "extend (group sim/a): queue: group 3 is not running") {
		t.Fatalf("check() = %v, want the internal error", err)
	}
	if err := f.check(); err != nil {
		t.Errorf("reported twice: %v", err)
	}
}

// BenchmarkSyntheticSmallChecked is BenchmarkSyntheticSmall with the core's
// invariants checked after every event: the difference is the check's cost.
func BenchmarkSyntheticSmallChecked(b *testing.B) {
	benchSynthetic(b, "nodes=1000,groups=1500", func() (Scheduler, error) {
		return NewFluence(FluenceConfig{MatchPolicy: "lonode", Queue: queue.Config{Policy: queue.Easy}, CheckInvariants: true})
	})
}
