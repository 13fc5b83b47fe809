package sim

import (
	"fmt"
	"math/rand/v2"
)

// PoolGrowWorkload is a small mixed workload whose node pool grows: 20
// groups of 1-4 pods of one or two CPUs, one every 6 s, on four 4-CPU
// nodes; two more nodes join at t=45.75 s. Runtimes are 13.5-37.5 s and
// every group declares its runtime plus 4.5 s (whole seconds). The times
// are spread out so that a run on a real API server, where every start
// after a completion comes a few hundred milliseconds late and such delays
// add up along chains of groups, makes the same decisions as the
// simulator: the integration suite checks that both start the groups in
// the same order on the same nodes. (At a third of these times, delays of
// up to 0.4 s per group changed the outcome in 22 of 40 simulated trials;
// at these, in none.)
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
		runtime := 3*float64(4+2*r.IntN(5)) + 1.5
		g := GroupSpec{Name: fmt.Sprintf("g%02d", i), Arrival: float64(6 * i), Runtime: runtime, Duration: runtime + 4.5}
		for range size {
			g.Pods = append(g.Pods, PodSpec{CPU: cpu})
		}
		w.Groups = append(w.Groups, g)
	}
	for i := 4; i < 6; i++ {
		w.NodeArrivals = append(w.NodeArrivals, NodeArrival{At: 45.75, Node: node(i)})
	}
	return w
}
