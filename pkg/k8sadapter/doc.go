// Package k8sadapter translates Kubernetes objects into the terms of the
// gang core (pkg/gang): pure functions over typed objects, with no clients,
// informers or API calls (DeviceIndex alone keeps state, fed by the
// plugin's informers). It imports only k8s.io/api, k8s.io/apimachinery,
// k8s.io/component-helpers, k8s.io/dynamic-resource-allocation's CEL and klog; the engine and the core never import
// Kubernetes (test/boundary checks that).
//
// # Nodes
//
// GraphOptions.CoreNode gives a node's labels, its NoSchedule/NoExecute and
// other taints, its allocatable CPU (millicores), memory (bytes), GPUs
// (nvidia.com/gpu plus GraphOptions.ExtraGPUResources) and pods, and
// whether it is down (cordoned, or its Ready condition is not True). The
// core builds its graph from these (gang.BuildGraph).
//
// # Pods
//
// GraphOptions.CorePod gives a pod's requests as kube-scheduler computes
// them (init containers, sidecars, overhead, pod-level resources), its
// priority, declared duration (DurationOf: the duration annotation, else
// activeDeadlineSeconds, in seconds up to MaxDuration, the longest the
// core plans in its milliseconds), where it is bound, whether it ended, its
// allocation record, and the group its own labels name (ParseGroup). A
// malformed annotation is kept as the pod's Invalid reason, so its group
// is rejected with it.
//
// # Node filters
//
// PodFilter is where a pod may run: its nodeSelector and required node
// affinity (kube-scheduler's own matching), the
// fluence.flux-framework.org/requires annotation (key=value, key!=value and
// version comparisons such as go>=1.20, which node affinity cannot
// express), and the taints it does not tolerate. The core evaluates it
// against the nodes whenever it builds a request; Why explains, per
// requirement, how many nodes it excludes.
//
// # Devices
//
// DeviceIndex follows ResourceSlices and the claims' allocations: a node's
// devices (node-local slices, newest pool generation, untainted, without
// shared counters) with their attributes and holders. PodDevices reads a
// pod's claims (templates, named claims, extended resources a DeviceClass
// serves) into device requests whose filters evaluate the class's and the
// request's CEL selectors with k8s.io/dynamic-resource-allocation/cel;
// SharedClaims confines a pod to the nodes its named claims' allocations
// reach; DeviceDomains makes a device attribute a topology level.
//
// # Groups
//
// ParseGroup reads the group name and size from labels or annotations in
// the spellings the Fluence versions and the scheduler-plugins PodGroup
// use; JobGroupSize and StatefulSetGroupSize give the size implied by an
// owning workload. Resolving a pod's group from its owner is pkg/groups'.
package k8sadapter
