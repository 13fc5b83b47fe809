package sim

import (
	"fmt"
	"math"
)

// NVLinkDomainKey is the device attribute, and node label, that names a
// node's NVLink domain in RackScaleDRAWorkload: its one topology level.
const NVLinkDomainKey = "gpu.example.com/clique"

// RackScaleDRAWorkload is rack-scale GPU systems handing out their GPUs
// through Dynamic Resource Allocation, and a stream of GPU gangs each of
// which must run within one NVLink domain. It is built here, the same
// every time (no seed).
//
// The cluster: 16 NVLink domains (nvl-01 .. nvl-16) of 18 nodes (nvl-01-n01
// ..), each node 144 cores and 4 GPUs published as DRA devices
// (GPUDevices), every device carrying the attribute
// gpu.example.com/clique = its domain; each node is labelled with the same
// key and value, as a GPU driver's node labeller does, so the models of
// the other schedulers (which count the GPUs) and the reports see the
// domain too. 288 nodes, 1,152 GPUs; topology level: the domain.
//
// Every group requires one domain (topology_required
// gpu.example.com/clique); every pod asks 32 cores per GPU. Groups have 2
// to 18 pods; a pod takes 4 GPUs (a whole node) or 2 or 1.
//
// The pre-load, 24 groups arriving at t = 0 to 11.5 s (one every 0.5 s)
// and running 5,400 to 9,000 s: small gangs of 2 to 6 pods of 1 to 4
// GPUs, 82 pods and 214 GPUs (under a fifth of the cluster). Where a
// scheduler puts them decides which domains are whole for the first two
// hours or more.
//
// The stream, from t = 60 s, one group every 60 s: eight rounds of
// twelve shapes (pods x GPUs per pod): 18x4 twice (a whole domain each),
// 16x4, 12x4, 9x4, 6x4, 4x4, 3x4, 2x4, 18x2 (9 nodes' worth), 8x2 and
// 12x1. A round asks 416 GPUs. Runtimes are the shape's (600 to 3,000 s)
// times a factor that varies by group (0.6 to 1.4): the stream asks
// 6,370,320 GPU-seconds over 5,760 s, about 1,100 GPUs' worth while it
// lasts, 96% of the cluster, so a queue builds and gangs of all sizes,
// ending at different times, leave domains partly taken: a gang that
// needs a whole domain waits for one to empty.
//
// Every group declares a duration 25% over its runtime (rounded up to the
// second), so backfill can plan, and releases its nodes 5 s after
// completing. In all: 120 groups, 1,090 pods, 16 of them needing a whole
// domain. Every group fits one domain of the empty cluster, so every
// group completes under fluence, each within one domain.
func RackScaleDRAWorkload() *Workload {
	const (
		domains     = 16
		nodesPer    = 18
		gpusPerNode = 4
		coresPerGPU = 32
	)
	w := &Workload{
		Name:           "rackscale-dra",
		Params:         Params{PermitTimeout: defaultPermitTimeout},
		TopologyLevels: []string{NVLinkDomainKey},
	}
	for d := 1; d <= domains; d++ {
		domain := fmt.Sprintf("nvl-%02d", d)
		attrs := map[string]string{NVLinkDomainKey: domain}
		for n := 1; n <= nodesPer; n++ {
			w.Cluster.Nodes = append(w.Cluster.Nodes, NodeSpec{
				Name: fmt.Sprintf("%s-n%02d", domain, n), CPU: 144_000, Memory: UnmodelledMemory,
				GPU: gpusPerNode, GPUDevices: true, DeviceAttributes: attrs,
				Labels: map[string]string{NVLinkDomainKey: domain},
			})
		}
	}
	type shape struct {
		name    string
		pods    int
		gpus    int64 // per pod
		runtime float64
	}
	group := func(s shape, arrival, runtime float64) GroupSpec {
		g := GroupSpec{Name: s.name, Arrival: arrival, Runtime: runtime, Duration: math.Ceil(runtime * 1.25),
			ReleaseDelay: 5, TopologyRequired: NVLinkDomainKey}
		for range s.pods {
			g.Pods = append(g.Pods, PodSpec{CPU: s.gpus * coresPerGPU * 1000, GPU: s.gpus})
		}
		return g
	}

	preload := []shape{
		{"2x4", 2, 4, 7200}, {"3x2", 3, 2, 5400}, {"4x1", 4, 1, 9000}, {"2x2", 2, 2, 6300},
		{"5x4", 5, 4, 8100}, {"3x4", 3, 4, 5400}, {"6x1", 6, 1, 7200}, {"2x4", 2, 4, 9000},
		{"4x2", 4, 2, 6300}, {"2x1", 2, 1, 8100}, {"4x4", 4, 4, 5400}, {"3x1", 3, 1, 9000},
		{"2x4", 2, 4, 6300}, {"6x2", 6, 2, 7200}, {"3x4", 3, 4, 8100}, {"2x2", 2, 2, 5400},
		{"5x1", 5, 1, 9000}, {"4x4", 4, 4, 6300}, {"2x4", 2, 4, 7200}, {"3x2", 3, 2, 8100},
		{"6x4", 6, 4, 5400}, {"2x1", 2, 1, 9000}, {"4x2", 4, 2, 6300}, {"3x4", 3, 4, 7200},
	}
	for i, s := range preload {
		s.name = fmt.Sprintf("pre-%02d-%s", i, s.name)
		w.Groups = append(w.Groups, group(s, float64(i)*0.5, s.runtime))
	}

	stream := []shape{
		{"domain-a", 18, 4, 1800},
		{"16x4", 16, 4, 2400},
		{"12x4", 12, 4, 1500},
		{"8x2", 8, 2, 1200},
		{"9x4", 9, 4, 2000},
		{"6x4", 6, 4, 900},
		{"18x2", 18, 2, 1500},
		{"4x4", 4, 4, 1800},
		{"2x4", 2, 4, 600},
		{"12x1", 12, 1, 900},
		{"domain-b", 18, 4, 3000},
		{"3x4", 3, 4, 1200},
	}
	const rounds = 8
	for r := range rounds {
		for t, s := range stream {
			i := r*len(stream) + t
			// Runtimes vary by round: x0.6 to x1.4 of the shape's.
			scale := 0.6 + 0.2*float64((i*7)%5)
			s.name = fmt.Sprintf("s%02d-%s", i, s.name)
			w.Groups = append(w.Groups, group(s, 60+60*float64(i), math.Round(s.runtime*scale)))
		}
	}
	return w
}
