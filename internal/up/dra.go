package up

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// DRADriver is the driver of the GPUs fluence up publishes through
// Dynamic Resource Allocation with --dra, and the name of their
// DeviceClass. No driver runs: the slices stand in for what a GPU
// driver's kubelet plugin would publish, and scheduling needs nothing
// more.
const DRADriver = "gpu.fluence.example"

// DRAGPUMemoryGiB is each published GPU's memory attribute.
const DRAGPUMemoryGiB = 80

// DRAObjects are what --dra publishes: a DeviceClass of the driver's
// devices, which also serves nvidia.com/gpu (so a pod asking for it is
// given DRA devices, DRAExtendedResource), and per GPU node a
// ResourceSlice of its GPUs, each with the attributes memory (GiB),
// index and, when the nodes are in racks or levels, clique: the node's
// innermost domain, so that topologyLevels may name
// gpu.fluence.example/clique.
func (o Options) DRAObjects() (*resourceapi.DeviceClass, []*resourceapi.ResourceSlice) {
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: DRADriver},
		Spec: resourceapi.DeviceClassSpec{
			ExtendedResourceName: ptr.To(string(GPUResource)),
			Selectors:            []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + DRADriver + `"`}}},
		},
	}
	var slices []*resourceapi.ResourceSlice
	for i, n := range o.NodeSpecs() {
		if !o.DRA || o.GPUs <= 0 || i < o.Nodes-o.GPUNodes {
			continue
		}
		clique := ""
		if o.Racks > 0 {
			clique = n.Labels[RackLabel]
		} else if len(o.Levels) > 0 {
			clique = n.Labels[o.Levels[len(o.Levels)-1].Label()]
		}
		s := &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name + "-" + DRADriver},
			Spec: resourceapi.ResourceSliceSpec{
				Driver:   DRADriver,
				Pool:     resourceapi.ResourcePool{Name: n.Name, ResourceSliceCount: 1},
				NodeName: ptr.To(n.Name),
			},
		}
		for g := range o.GPUs {
			attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"memory": {IntValue: ptr.To(int64(DRAGPUMemoryGiB))},
				"index":  {IntValue: ptr.To(int64(g))},
			}
			if clique != "" {
				attrs["clique"] = resourceapi.DeviceAttribute{StringValue: ptr.To(clique)}
			}
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", g), Attributes: attrs})
		}
		slices = append(slices, s)
	}
	return class, slices
}

// GPUResource is the extended resource GPU nodes offer without --dra.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// publishDRA creates the DeviceClass and the slices of --dra.
func publishDRA(ctx context.Context, cfg *rest.Config, o Options) error {
	cs, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "fluence-up"))
	if err != nil {
		return err
	}
	class, slices := o.DRAObjects()
	if _, err := cs.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("the device class %s: %w", class.Name, err)
	}
	for _, s := range slices {
		if _, err := cs.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("the resource slice %s: %w", s.Name, err)
		}
	}
	return nil
}
