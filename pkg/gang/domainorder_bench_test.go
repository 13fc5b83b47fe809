package gang

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// BenchmarkDomainOrder measures what the best fit among racks gains over
// the first fit, on streams of groups that must each run within one rack:
// 16 racks of four 32-CPU nodes; 600 groups of 1-16 pods of 4 CPUs,
// arriving every 6 s and running 60-600 s (about nine tenths of the
// cluster in flight on average); five such streams, the same for both
// orders. It reports, as the mean over the streams: the mean wait of a
// group (s), the share of groups placed on arrival, and the mean number of
// racks wholly free at each arrival (the room kept for a group that needs
// a whole rack). One iteration replays the five streams.
func BenchmarkDomainOrder(b *testing.B) {
	for _, order := range []string{DomainTightest, DomainFirst} {
		b.Run(order, func(b *testing.B) {
			var sum domainOrderStats
			for range b.N {
				sum = domainOrderStats{}
				for seed := range uint64(domainOrderSeeds) {
					st := replayDomainOrder(b, order, seed)
					sum.meanWait += st.meanWait / domainOrderSeeds
					sum.atOnce += st.atOnce / domainOrderSeeds
					sum.emptyRacks += st.emptyRacks / domainOrderSeeds
				}
			}
			b.ReportMetric(sum.meanWait, "wait-s")
			b.ReportMetric(sum.atOnce, "at-once")
			b.ReportMetric(sum.emptyRacks, "empty-racks")
		})
	}
}

type domainOrderStats struct{ meanWait, atOnce, emptyRacks float64 }

// domainOrderSeeds is how many streams the figures are the mean of.
const domainOrderSeeds = 5

func replayDomainOrder(b *testing.B, order string, seed uint64) domainOrderStats {
	const rackKey = "example.com/rack"
	c, err := New(Config{Queue: queue.Config{Policy: queue.Easy}, RunID: "order", TopologyLevels: []string{rackKey}, DomainOrder: order})
	if err != nil {
		b.Fatal(err)
	}
	const racks, perRack = 16, 4
	for i := range racks * perRack {
		c.NodeSet(Node{Name: fmt.Sprintf("n%03d", i), Labels: map[string]string{rackKey: fmt.Sprintf("r%02d", i/perRack)},
			Allocatable: Resources{MilliCPU: 32000, MemoryBytes: 128 << 30, Pods: 110}}, 0)
	}
	bound := map[string]string{} // uid -> node
	fw := NewFramework(c, func(p *Pod, node string) error { bound[p.UID] = node; return nil })
	type job struct {
		uids          []string
		arrive, dur   int64
		start, finish int64
	}
	rng := rand.New(rand.NewPCG(5, 9+seed))
	var jobs []*job
	for i := range 600 {
		j := &job{arrive: int64(i * 6), dur: int64(60 + rng.IntN(541)), start: -1, finish: -1}
		for p := range 1 + rng.IntN(16) {
			j.uids = append(j.uids, fmt.Sprintf("g%d-%d", i, p))
		}
		jobs = append(jobs, j)
	}
	var waited, atOnce, empty float64
	next, done := 0, 0
	for now := int64(0); done < len(jobs); now++ {
		for _, j := range jobs {
			if j.start >= 0 && j.finish < 0 && now >= j.start+j.dur {
				j.finish = now
				done++
				for _, uid := range j.uids {
					c.PodRemoved(uid, now)
					delete(bound, uid)
				}
			}
		}
		arrived := false
		for next < len(jobs) && jobs[next].arrive <= now {
			j := jobs[next]
			empty += float64(freeRacks(c, bound, rackKey, racks))
			id := NewGroupID("ns", fmt.Sprintf("g%d", next), int32(len(j.uids)), SourceLabel)
			id.TopologyKey = rackKey
			for _, uid := range j.uids {
				fw.Add(Pod{UID: uid, Namespace: "ns", Name: uid, Owned: true, Duration: j.dur,
					Requests: Resources{MilliCPU: 4000}, Labeled: id}, id, now)
			}
			next++
			arrived = true
		}
		c.Tick(now)
		fw.Run(now)
		for _, j := range jobs[:next] {
			if j.start < 0 {
				if _, ok := bound[j.uids[len(j.uids)-1]]; ok {
					j.start = now
					waited += float64(now - j.arrive)
					if now == j.arrive {
						atOnce++
					}
				}
			}
		}
		if now > 1e5 {
			b.Fatalf("order %s: the stream did not finish (%d of %d done, arrived %v)", order, done, len(jobs), arrived)
		}
	}
	n := float64(len(jobs))
	return domainOrderStats{meanWait: waited / n, atOnce: atOnce / n, emptyRacks: empty / n}
}

// freeRacks counts the racks none of whose nodes holds a pod.
func freeRacks(c *Core, bound map[string]string, rackKey string, racks int) int {
	used := map[string]bool{}
	for _, node := range bound {
		used[c.nodes[node].Labels[rackKey]] = true
	}
	return racks - len(used)
}
