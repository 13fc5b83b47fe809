package sim

import (
	"fmt"
	"math/rand/v2"
)

// PoolGrowWorkload is a small mixed workload whose node pool grows: 20
// groups of 1-4 pods of one or two CPUs, one every 2 s, on four 4-CPU
// nodes; two more nodes join at t=15.25 s. Runtimes are 4.5-12.5 s and
// every group declares its runtime plus 1.5 s. Arrivals, completions and
// the pool change never fall within 0.2 s of each other, so a run on a
// real API server, whose timings drift by tens of milliseconds, makes the
// same decisions as the simulator: the integration suite checks that
// both start the groups in the same order on the same nodes.
func PoolGrowWorkload() *Workload {
	r := rand.New(rand.NewPCG(24, 1))
	node := func(i int) NodeSpec { return NodeSpec{Name: fmt.Sprintf("node-%d", i), CPU: 4000, Memory: 16 << 30} }
	w := &Workload{Name: "pool-grow"}
	for i := range 4 {
		w.Cluster.Nodes = append(w.Cluster.Nodes, node(i))
	}
	for i := range 20 {
		size := 1 + r.IntN(4)
		cpu := int64(1000 * (1 + r.IntN(2)))
		runtime := float64(4+2*r.IntN(5)) + 0.5
		g := GroupSpec{Name: fmt.Sprintf("g%02d", i), Arrival: float64(2 * i), Runtime: runtime, Duration: runtime + 1.5}
		for range size {
			g.Pods = append(g.Pods, PodSpec{CPU: cpu})
		}
		w.Groups = append(w.Groups, g)
	}
	for i := 4; i < 6; i++ {
		w.NodeArrivals = append(w.NodeArrivals, NodeArrival{At: 15.25, Node: node(i)})
	}
	return w
}
