package sim

import (
	"slices"

	"go.yaml.in/yaml/v3"
)

// GPUs as DRA devices in the native format (docs/sim-workload.md):
//
//	cluster:
//	  nodes:
//	    - {name: nvl-01, count: 18, cpu: 144, gpu: 4,
//	       gpu_devices: {gpu.example.com/clique: nvl-01},
//	       labels: {gpu.example.com/clique: nvl-01}}
//
// gpu_devices says the node's gpu GPUs are DRA devices, each carrying
// the attributes it maps (an empty mapping, {}, for none). Once a node
// publishes its GPUs so, every node with GPUs must: fluence serves every
// pod's gpu request from devices.

// gpuEntry is what a cluster.nodes entry says of its GPUs, for the check
// that all or none publish them as devices.
type gpuEntry struct {
	path    string
	gpu     int64
	devices bool
}

// gpuDevices reads a node entry's gpu_devices: a mapping of device
// attributes, on a node with GPUs.
func (c *yctx) gpuDevices(n *yaml.Node, path string, spec *NodeSpec) {
	if yderef(n).Kind != yaml.MappingNode {
		c.errf(path, "must be a mapping of device attributes ({} for none), got %s", ydescribe(yderef(n)))
		return
	}
	m, ok := c.mapping(n, path, nil)
	if !ok {
		return
	}
	if spec.GPU <= 0 {
		c.errf(path, "the node has no GPUs to publish as devices: give gpu (1 or more), or leave gpu_devices out")
		return
	}
	spec.GPUDevices = true
	for _, k := range m.keys {
		if k == "" {
			c.errf(path, "an attribute name must not be empty")
			continue
		}
		if v, ok := c.str(m.vals[k], ykey(path, k)); ok {
			if spec.DeviceAttributes == nil {
				spec.DeviceAttributes = map[string]string{}
			}
			spec.DeviceAttributes[k] = v
		}
	}
}

// gpuDevicesEverywhere: when an entry publishes its GPUs as devices, an
// entry that counts its GPUs is an error (the fluence model would serve
// its pods' GPUs from devices only, and never use those).
func (c *yctx) gpuDevicesEverywhere(entries []gpuEntry) {
	i := slices.IndexFunc(entries, func(e gpuEntry) bool { return e.devices })
	if i < 0 {
		return
	}
	for _, e := range entries {
		if e.gpu > 0 && !e.devices {
			c.errf(ykey(e.path, "gpu_devices"), "required on every node with GPUs once one node publishes its GPUs as DRA devices (%s does): fluence serves every pod's gpu request from devices", entries[i].path)
		}
	}
}
