package gang

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// deviceOracleCase is a small cluster of racks whose nodes have GPUs,
// some held by claims of pods other schedulers placed, and one group that
// must be within one rack, each pod asking so many GPUs.
type deviceOracleCase struct {
	gpus [][]int // per rack, each node's GPUs
	held [][]int // per rack, how many of each node's GPUs claims hold
	pods []int   // the group's pods' GPUs
}

// feasible reports, by trying every assignment of the pods to the nodes
// of each rack, whether one rack's free GPUs can hold the whole group.
func (oc deviceOracleCase) feasible() bool {
	free := make([][]int64, len(oc.gpus))
	for r, rack := range oc.gpus {
		for n := range rack {
			free[r] = append(free[r], int64(rack[n]-oc.held[r][n]))
		}
	}
	pods := make([]int64, len(oc.pods))
	for i, g := range oc.pods {
		pods[i] = int64(g)
	}
	return someRackHolds(free, pods)
}

func randomDeviceOracleCase(rng *rand.Rand) deviceOracleCase {
	var oc deviceOracleCase
	for range 2 + rng.IntN(2) {
		var gpus, held []int
		for range 1 + rng.IntN(3) {
			g := rng.IntN(5)
			gpus, held = append(gpus, g), append(held, rng.IntN(g+1)/2)
		}
		oc.gpus, oc.held = append(oc.gpus, gpus), append(oc.held, held)
	}
	for range 1 + rng.IntN(4) {
		oc.pods = append(oc.pods, 1+rng.IntN(2))
	}
	return oc
}

// TestDevicePlacementIsExact checks the core against a brute-force
// oracle on small clusters of GPU nodes: a group required within one rack,
// whose pods ask GPUs through device requests, is placed now exactly when
// some rack's free GPUs can hold it, and then within one rack, no GPU
// over-committed (the invariants count them).
func TestDevicePlacementIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 17))
	checkRackOracle(t, func() (any, bool, bool, string) {
		oc := randomDeviceOracleCase(rng)
		got, rack := placeDeviceOracleCase(t, oc)
		return oc, oc.feasible(), got, rack
	})
}

// placeDeviceOracleCase runs the case on a core and returns whether the
// group was placed now, and the one rack its pods are in ("" if several).
func placeDeviceOracleCase(t *testing.T, oc deviceOracleCase) (bool, string) {
	t.Helper()
	const rackKey = "example.com/rack"
	c, err := New(Config{Queue: queue.Config{Policy: queue.Easy}, RunID: "oracle", TopologyLevels: []string{rackKey}})
	if err != nil {
		t.Fatal(err)
	}
	rackOf := map[string]string{}
	for r, rack := range oc.gpus {
		for n, gpus := range rack {
			name := fmt.Sprintf("r%d-n%d", r, n)
			rackOf[name] = fmt.Sprintf("r%d", r)
			node := Node{Name: name, Labels: map[string]string{rackKey: rackOf[name]},
				Allocatable: Resources{MilliCPU: 64000, MemoryBytes: 64 << 30, Pods: 110}}
			if gpus > 0 {
				node.Devices = scriptDevices(name, fmt.Sprintf("%dxgpu", gpus))
			}
			for k := range oc.held[r][n] {
				node.Devices[k].Holder = "other/claim-" + name
			}
			c.NodeSet(node, 0)
		}
	}
	id := NewGroupID("ns", "g", int32(len(oc.pods)), SourceLabel)
	id.TopologyKey = rackKey
	nodeOf := map[string]string{}
	fw := NewFramework(c, func(p *Pod, node string) error { nodeOf[p.UID] = node; return nil })
	for i, gpus := range oc.pods {
		uid := fmt.Sprintf("g-%d", i)
		fw.Add(Pod{UID: uid, Namespace: "ns", Name: uid, Owned: true, Requests: Resources{MilliCPU: 1000}, Labeled: id,
			Devices: scriptRequests(fmt.Sprintf("%dxgpu", gpus))}, id, 0)
	}
	fw.Run(0)
	if err := c.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if fw.Pending() != 0 {
		return false, ""
	}
	racks := map[string]bool{}
	for _, n := range nodeOf {
		racks[rackOf[n]] = true
	}
	if len(racks) != 1 {
		return true, ""
	}
	for r := range racks {
		return true, r
	}
	return true, ""
}
