package sim

import (
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// BenchmarkSyntheticScale runs the scale case: 1,000 nodes, 10,000 groups
// of 1-128 pods, fluence with easy backfill and packing, as `fluence sim
// --synthetic nodes=1000,groups=10000 --schedulers fluence --queue-policy
// easy` runs it. One iteration is one whole simulation (some 8-12 s on
// two shared cores, about twice the stock model's time in the same run);
// compare its time with the stock model's in the same run
// (BenchmarkSyntheticScaleStock) rather than with a fixed number.
func BenchmarkSyntheticScale(b *testing.B) {
	benchSynthetic(b, "", func() (Scheduler, error) {
		return NewFluence(FluenceConfig{MatchPolicy: "lonode", Queue: queue.Config{Policy: queue.Easy, Packing: true}})
	})
}

// BenchmarkSyntheticScaleFirstFit is the same without packing (the
// plugin's packing: false).
func BenchmarkSyntheticScaleFirstFit(b *testing.B) {
	benchSynthetic(b, "", func() (Scheduler, error) {
		return NewFluence(FluenceConfig{MatchPolicy: "lonode", Queue: queue.Config{Policy: queue.Easy}})
	})
}

// BenchmarkSyntheticScaleStock is the stock model on the same workload.
// Without gangs it clogs part-way (about 6,900 of the 10,000 groups
// complete), so its time is that of a run that ends in a stall.
func BenchmarkSyntheticScaleStock(b *testing.B) {
	benchSynthetic(b, "", func() (Scheduler, error) { return NewStock(), nil })
}

// BenchmarkSyntheticSmall is the same mix at a seventh of the size,
// without packing, for quick profiling.
func BenchmarkSyntheticSmall(b *testing.B) {
	benchSynthetic(b, "nodes=1000,groups=1500", func() (Scheduler, error) {
		return NewFluence(FluenceConfig{MatchPolicy: "lonode", Queue: queue.Config{Policy: queue.Easy}})
	})
}

func benchSynthetic(b *testing.B, spec string, mk func() (Scheduler, error)) {
	s, err := ParseSynthSpec(spec)
	if err != nil {
		b.Fatal(err)
	}
	w, err := Synthesize(s)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		sched, err := mk()
		if err != nil {
			b.Fatal(err)
		}
		r, err := Run(w, sched, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if !r.Stalled && r.JobsCompleted+r.JobsRejected != r.JobsTotal {
			b.Fatalf("%d of %d completed, yet no stall", r.JobsCompleted, r.JobsTotal)
		}
		if r.Stalled && sched.Name() == "fluence" {
			b.Fatalf("fluence stalled: %d of %d completed", r.JobsCompleted, r.JobsTotal)
		}
	}
}
