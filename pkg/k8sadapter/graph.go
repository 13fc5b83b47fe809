package k8sadapter

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/fluence-sched/fluence/pkg/resource"
)

// ZoneLabel is the well-known node label that places a node in a zone.
const ZoneLabel = corev1.LabelTopologyZone // "topology.kubernetes.io/zone"

// DefaultGPUResource is the extended resource always counted as GPUs.
const DefaultGPUResource corev1.ResourceName = "nvidia.com/gpu"

// DefaultTopology is the zone (and rack) name of nodes without the label.
const DefaultTopology = "default"

// GraphOptions tune how Nodes and pods are translated. The zero value is
// ready to use.
type GraphOptions struct {
	// RackLabel is the node label naming a node's rack. Empty (the
	// default) omits the rack level; when set, nodes without the label go
	// under the rack "default" of their zone.
	RackLabel string
	// ExtraGPUResources are extended resource names counted as GPUs in
	// addition to nvidia.com/gpu (say "amd.com/gpu"), both in node
	// allocatable and in pod requests. Default: none.
	ExtraGPUResources []string
}

// gpuResources returns nvidia.com/gpu plus the extra names, without
// duplicates.
func (o GraphOptions) gpuResources() []corev1.ResourceName {
	out := []corev1.ResourceName{DefaultGPUResource}
	for _, n := range o.ExtraGPUResources {
		if r := corev1.ResourceName(n); n != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

func (o GraphOptions) gpuCount(list corev1.ResourceList) int64 {
	var n int64
	for _, r := range o.gpuResources() {
		if q, ok := list[r]; ok {
			n += q.Value()
		}
	}
	return n
}

// NodeDown reports whether nothing may be placed on the node: it is
// cordoned (spec.unschedulable) or its Ready condition is not True.
func NodeDown(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return true
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status != corev1.ConditionTrue
		}
	}
	return true
}

// BuildGraph builds the finalized resource graph of the given nodes (see the
// package doc for its shape). Nodes are sorted by name; a node's rank is
// its index in that order. The input slice is not modified.
func BuildGraph(nodes []*corev1.Node, opts GraphOptions) (*resource.Graph, error) {
	sorted := make([]*corev1.Node, 0, len(nodes))
	for i, n := range nodes {
		if n == nil {
			return nil, fmt.Errorf("k8sadapter: node %d is nil", i)
		}
		if n.Name == "" {
			return nil, fmt.Errorf("k8sadapter: node %d has no name", i)
		}
		sorted = append(sorted, n)
	}
	slices.SortFunc(sorted, func(a, b *corev1.Node) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	for i := 1; i < len(sorted); i++ {
		if sorted[i].Name == sorted[i-1].Name {
			return nil, fmt.Errorf("k8sadapter: node %s: listed twice", sorted[i].Name)
		}
	}

	// zone -> rack -> node indexes (into sorted), all in name order.
	type rackNodes = map[string][]int
	zones := map[string]rackNodes{}
	for i, n := range sorted {
		zone := labelOr(n.Labels, ZoneLabel)
		rack := ""
		if opts.RackLabel != "" {
			rack = labelOr(n.Labels, opts.RackLabel)
		}
		if zones[zone] == nil {
			zones[zone] = rackNodes{}
		}
		zones[zone][rack] = append(zones[zone][rack], i)
	}

	g := resource.New()
	tCluster, tZone, tRack := g.Intern("cluster"), g.Intern("zone"), g.Intern("rack")
	tNode, tCore, tGPU, tMem := g.Intern("node"), g.Intern("core"), g.Intern("gpu"), g.Intern("memory")
	uniq := int64(0)
	add := func(v resource.Vertex, parent int32) (int32, error) {
		v.UniqID = uniq
		uniq++
		return g.AddVertex(v, parent)
	}
	root, err := add(resource.Vertex{Type: tCluster, Basename: "cluster", ID: 0, Rank: -1, Size: 1}, resource.None)
	if err != nil {
		return nil, err
	}
	for zi, zone := range slices.Sorted(maps.Keys(zones)) {
		zv, err := add(resource.Vertex{Type: tZone, Basename: "zone", Name: zone, ID: int64(zi), Rank: -1, Size: 1}, root)
		if err != nil {
			return nil, err
		}
		for ri, rack := range slices.Sorted(maps.Keys(zones[zone])) {
			parent := zv
			if opts.RackLabel != "" {
				parent, err = add(resource.Vertex{Type: tRack, Basename: "rack", Name: rack, ID: int64(ri), Rank: -1, Size: 1}, zv)
				if err != nil {
					return nil, err
				}
			}
			for _, i := range zones[zone][rack] {
				if err := addNode(sorted[i], int64(i), parent, opts, add, tNode, tCore, tGPU, tMem); err != nil {
					return nil, fmt.Errorf("k8sadapter: node %s: %w", sorted[i].Name, err)
				}
			}
		}
	}
	if err := g.Finalize(); err != nil {
		return nil, err
	}
	return g, nil
}

func addNode(n *corev1.Node, rank int64, parent int32, opts GraphOptions,
	add func(resource.Vertex, int32) (int32, error), tNode, tCore, tGPU, tMem resource.TypeID) error {
	alloc := n.Status.Allocatable
	cpu, mem := alloc.Cpu().MilliValue(), alloc.Memory().Value()
	gpu := opts.gpuCount(alloc)
	if cpu < 0 || mem < 0 || gpu < 0 {
		return errors.New("negative allocatable cpu, memory or gpu")
	}
	var props map[string]string
	if len(n.Labels) > 0 {
		props = make(map[string]string, len(n.Labels))
		for k, v := range n.Labels {
			props[k] = v
		}
	}
	status := resource.Up
	if NodeDown(n) {
		status = resource.Down
	}
	nv, err := add(resource.Vertex{Type: tNode, Status: status, Basename: "node", Name: n.Name, ID: rank, Rank: rank, Size: 1, Properties: props}, parent)
	if err != nil {
		return err
	}
	for k := range cpu / 1000 {
		if _, err := add(resource.Vertex{Type: tCore, Basename: "core", ID: k, Rank: rank, Size: 1}, nv); err != nil {
			return err
		}
	}
	for k := range gpu {
		if _, err := add(resource.Vertex{Type: tGPU, Basename: "gpu", ID: k, Rank: rank, Size: 1}, nv); err != nil {
			return err
		}
	}
	if mib := mem >> 20; mib > 0 {
		if _, err := add(resource.Vertex{Type: tMem, Basename: "memory", ID: 0, Rank: rank, Size: mib, Unit: "MiB"}, nv); err != nil {
			return err
		}
	}
	return nil
}

func labelOr(labels map[string]string, key string) string {
	if v := labels[key]; v != "" {
		return v
	}
	return DefaultTopology
}

// NodeGPUs is the number of GPUs a node offers: its allocatable
// nvidia.com/gpu plus the extra GPU resource names.
func (o GraphOptions) NodeGPUs(n *corev1.Node) int64 { return o.gpuCount(n.Status.Allocatable) }
