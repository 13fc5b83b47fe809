package sim

import (
	"fmt"
	"strings"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// GPUs through Dynamic Resource Allocation in the simulator.
//
// A node with GPUDevices publishes its GPUs as devices: to the fluence
// model, GPU devices under the node, each with the node's
// DeviceAttributes, as the plugin reads them from a ResourceSlice
// (pkg/k8sadapter). A pod's gpu request then becomes one device request
// for that many of them, as a claim made from a template of the GPU
// class (or an extended resource the class serves) does; the core places
// a group only where every pod's devices are free at once, within the
// domain the group requires when a device attribute is that domain.
//
// What is not modelled: the allocation kube-scheduler's DynamicResources
// plugin writes once a pod is bound. A bound pod's request stays a
// request, and the core counts the devices its own placement took on
// the pod's node; in the real scheduler the allocator takes devices on
// the same node, and the core follows what it took. The stock,
// coscheduling and quota models count a DRA node's GPUs as a number, as
// they count the count of any node: their view of DRA is the same count.

// SimGPUDriver is the driver of the simulated GPU devices: a device's ID
// is <driver>/<node>/gpu<i> (driver/pool/device, the pool the node).
const SimGPUDriver = "gpu.sim.fluence"

// HasGPUDevices reports whether some node of the workload (or one that
// joins) publishes its GPUs as DRA devices.
func HasGPUDevices(w *Workload) bool {
	if w == nil {
		return false
	}
	for _, n := range w.Cluster.Nodes {
		if n.GPUDevices {
			return true
		}
	}
	for _, a := range w.NodeArrivals {
		if a.Node.GPUDevices {
			return true
		}
	}
	return false
}

// gpuDevices are a node's GPUs as the core's devices, in order; none
// unless the node publishes them (GPUDevices).
func gpuDevices(n NodeSpec) []gang.Device {
	if !n.GPUDevices || n.GPU <= 0 {
		return nil
	}
	out := make([]gang.Device, n.GPU)
	for i := range out {
		out[i] = gang.Device{ID: fmt.Sprintf("%s/%s/gpu%d", SimGPUDriver, n.Name, i), Attributes: n.DeviceAttributes}
	}
	return out
}

// simGPUs admits the simulated GPU devices: the filter of the GPU device
// class, without selectors.
type simGPUs struct{}

func (simGPUs) Admits(d *gang.Device) bool { return strings.HasPrefix(d.ID, SimGPUDriver+"/") }
func (simGPUs) Key() string                { return "sim:gpu" }
func (simGPUs) Describe() string           { return SimGPUDriver + " GPUs" }

// gpuRequest is a pod's request for n GPU devices.
func gpuRequest(n int64) []gang.DeviceRequest {
	return []gang.DeviceRequest{{Name: "gpus/gpu", Choices: []gang.DeviceChoice{{Name: "gpu", Count: n, Filter: simGPUs{}}}}}
}

// checkGPUDevices refuses a cluster in which some nodes publish their
// GPUs as devices and others count them: fluence would serve every gpu
// request from devices (as it serves an extended resource a DeviceClass
// names, on every node), and leave the counted GPUs unused.
func checkGPUDevices(w *Workload) error {
	if !HasGPUDevices(w) {
		return nil
	}
	for _, n := range allNodes(w) {
		if n.GPU > 0 && !n.GPUDevices {
			return fmt.Errorf("sim: node %s counts %d GPUs while other nodes publish theirs as DRA devices: give every node with GPUs gpu_devices, or none", n.Name, n.GPU)
		}
	}
	return nil
}

// gpuCountNote is what a model's Config says on a workload whose GPUs are
// DRA devices: it counts them, as it counts any node's GPUs.
func gpuCountNote(env *Env) string {
	if env == nil || !HasGPUDevices(env.Workload()) {
		return ""
	}
	return ", DRA GPUs counted as a number per node (no devices, no domains)"
}
