package sim

import (
	"fmt"
	"math"
)

// UrgentPriority is the priority of UrgentWorkload's urgent groups; the
// others have priority 0.
const UrgentPriority = 1000

// UrgentWorkload is a busy cluster into which urgent groups arrive: the
// case for preemption. It is built here, the same every time (no seed),
// as the backfill and topology workloads are.
//
// The cluster is run8's: 8 nodes of 3 cores (memory not modelled).
//
// The background, priority 0: 40 groups arriving one every 10 s from
// t = 0, eight rounds of run8's five shapes (2 pods of 1 core; 3, 4, 5
// and 6 pods of 2 cores). They run long: 480 to 900 s by shape, times a
// factor per round (0.7 to 1.3), so that the queue holds work until
// about t = 10,000 s and the cluster stays full. Each declares a
// duration 25% over its runtime (rounded up to the second), as a user
// asking for a walltime would, so backfill can plan and fluence knows
// when each running group should end; each releases its nodes 3 s after
// completing.
//
// The urgent groups, priority UrgentPriority: six, one every 1,200 s
// from t = 1,200 s to 7,200 s, of 2 to 6 pods of 2 cores, running 150
// to 300 s (durations 25% over). Each needs as many nodes as it has pods
// (a node holds one 2-core pod), which only a group's end, or a
// preemption, frees.
//
// In all 46 groups, 184 pods.
func UrgentWorkload() *Workload {
	w := &Workload{
		Name:    "urgent",
		Cluster: ClusterFromSpec(8, 3000, 0, 0),
		Params:  Params{PermitTimeout: defaultPermitTimeout},
	}
	type shape struct {
		size    int
		cpu     int64
		runtime float64
	}
	shapes := []shape{{2, 1000, 900}, {3, 2000, 600}, {4, 2000, 720}, {5, 2000, 480}, {6, 2000, 540}}
	factors := []float64{1, 0.8, 1.2, 0.9, 1.1, 0.7, 1.3, 1}
	k := 0
	for round, f := range factors {
		for _, s := range shapes {
			w.Groups = append(w.Groups, urgentGroup(fmt.Sprintf("bg-%d-size-%d", round, s.size), float64(k)*10, s.size, s.cpu, s.runtime*f, 0))
			k++
		}
	}
	urgent := []struct {
		size    int
		runtime float64
	}{{4, 240}, {2, 300}, {3, 180}, {6, 150}, {4, 200}, {5, 240}}
	for i, u := range urgent {
		w.Groups = append(w.Groups, urgentGroup(fmt.Sprintf("urgent-%d-size-%d", i, u.size), float64(i+1)*1200, u.size, 2000, u.runtime, UrgentPriority))
	}
	return w
}

func urgentGroup(name string, arrival float64, size int, cpu int64, runtime float64, priority int64) GroupSpec {
	g := GroupSpec{Name: name, Arrival: arrival, Runtime: runtime, Duration: math.Ceil(runtime * 1.25), Priority: priority, ReleaseDelay: 3}
	for range size {
		g.Pods = append(g.Pods, PodSpec{CPU: cpu, Memory: 0})
	}
	return g
}
