// Package k8sadapter translates Kubernetes objects into the engine's terms:
// Nodes into a resource graph, pods and their group labels into a jobspec,
// and scheduling requirements into an RFC 31 constraint.
//
// It is the only place (besides the scheduler plugin built on it) where the
// engine meets Kubernetes types; the engine packages (resource, jobspec,
// planner, match, queue) never import k8s.io (test/boundary checks that).
// Everything here is a pure function over typed objects: no clients, no
// informers, no API calls. It imports only k8s.io/api, k8s.io/apimachinery
// and k8s.io/component-helpers.
//
// # Graph
//
// BuildGraph follows the simulator's conventions (pkg/sim) and adds
// topology:
//
//	cluster0
//	└── zone <topology.kubernetes.io/zone, or "default">
//	    └── rack <GraphOptions.RackLabel, or "default"> (level omitted when RackLabel is "")
//	        └── node <node name>, properties = node labels
//	            ├── core x floor(allocatable cpu / 1000m)
//	            ├── gpu x (nvidia.com/gpu + GraphOptions.ExtraGPUResources)
//	            └── memory pool, allocatable memory in MiB (rounded down)
//
// Fractional cores and memory below one MiB are not schedulable and are
// dropped. A cordoned node or one whose Ready condition is not True is
// marked Down: it stays in the graph (so a group that only fits with it is
// told to wait, not rejected) but nothing is allocated on it.
//
// # Groups
//
// ParseGroup reads the group name and size from labels or annotations in the
// spellings the Fluence versions and the scheduler-plugins PodGroup use;
// JobGroupSize and StatefulSetGroupSize give the size implied by an owning
// workload. JobSet, MPIJob and Flux Operator MiniCluster are custom
// resources whose Go types this package does not import; the scheduler
// reads their sizes through unstructured objects.
//
// # Jobspec
//
// GroupJobspec makes one slot per pod and one slot request per distinct pod
// shape ({core, memory, gpu} after rounding), labelled shape0, shape1... in
// order of first appearance, so a heterogeneous group is matched as it is.
// ShapeSlots says which pods each label holds, so the caller can pin the
// pods to the nodes the slots landed on.
//
// # Constraints
//
// NodeConstraint folds a pod's nodeSelector, its required node affinity and
// the fluence.flux-framework.org/requires annotation into one constraint.
// RFC 31 cannot express node affinity's Gt/Lt or version comparison, so the
// requirements are evaluated here against the nodes' labels and the result
// is a hostlist of the nodes that satisfy them all.
package k8sadapter
