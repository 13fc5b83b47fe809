package gang

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// deviceBenchCore is a core over 5,000 nodes of 32 CPUs, each with 8
// devices (GPUs of 40 or 80 GB, by node) when devices is set, and about a
// third of every node's CPUs held by single pods of random sizes.
func deviceBenchCore(b *testing.B, devices bool) (*Core, *Framework) {
	b.Helper()
	c, err := New(Config{Queue: queue.Config{Policy: queue.Easy}, RunID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	const nodes = 5000
	for i := range nodes {
		n := Node{Name: fmt.Sprintf("node-%05d", i), Allocatable: Resources{MilliCPU: 32000, MemoryBytes: 128 << 30, Pods: 110}}
		if devices {
			mem := "40"
			if i%2 == 1 {
				mem = "80"
			}
			n.Devices = scriptDevices(n.Name, "8xgpu:mem="+mem)
		}
		c.NodeSet(n, 0)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range nodes {
		load := int64(rng.IntN(3)) * 4000
		c.PodSeen(Pod{UID: fmt.Sprintf("bg-%d", i), Namespace: "bg", Name: fmt.Sprintf("bg-%d", i),
			Requests: Resources{MilliCPU: load}, NodeName: fmt.Sprintf("node-%05d", i)}, 0)
	}
	return c, warmFramework(b, c)
}

// BenchmarkDevicePlacement is the time the core takes, at 5,000 nodes, to
// place one group of 8 pods from its first pod's arrival to its last
// pod's binding, when each pod asks 4 GPUs of 80 GB (8 per node, half the
// nodes with 80 GB ones) through a device request, against the same
// groups asking 4 CPUs and no device on nodes without devices
// ("no-devices", the baseline in the same run). Groups are removed
// (untimed) once placed, so every iteration meets the same cluster.
// "4-gpus-new-filter-each" gives every group a filter the core has not
// seen, so each pays for marking: a pass over the 40,000 devices (with
// this test's cheap filter; a CEL selector costs more per device:
// BenchmarkCELFilter in pkg/k8sadapter).
func BenchmarkDevicePlacement(b *testing.B) {
	for _, tc := range []struct {
		name    string
		devices bool
		// fresh: each group's filter is new to the core (a new claim
		// template's selectors), so its devices are marked first.
		fresh bool
	}{{"no-devices", false, false}, {"4-gpus-each", true, false}, {"4-gpus-new-filter-each", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			c, fw := deviceBenchCore(b, tc.devices)
			placed := 0
			b.ResetTimer()
			for i := range b.N {
				const size = 8
				id := NewGroupID("ns", fmt.Sprintf("g%d", i), size, SourceLabel)
				now := int64(i + 1)
				uids := make([]string, size)
				for p := range size {
					uids[p] = fmt.Sprintf("g%d-%d", i, p)
					pod := Pod{UID: uids[p], Namespace: "ns", Name: uids[p], Owned: true, Requests: Resources{MilliCPU: 4000}, Labeled: id}
					if tc.devices {
						var f DeviceFilter = attrFilter{kind: "gpu", attrs: []string{"mem=80"}}
						if tc.fresh {
							f = renamed{f, fmt.Sprint(i)}
						}
						pod.Devices = []DeviceRequest{{Name: "claim/gpus", Choices: []DeviceChoice{{Name: "gpus", Count: 4, Filter: f}}}}
					}
					fw.Add(pod, id, now)
				}
				if runAndClear(b, c, fw, uids, now) {
					placed++
				}
			}
			b.ReportMetric(float64(placed)/float64(b.N), "placed/op")
		})
	}
}

// renamed admits what its filter admits under another key.
type renamed struct {
	DeviceFilter
	name string
}

func (r renamed) Key() string { return r.DeviceFilter.Key() + "#" + r.name }
