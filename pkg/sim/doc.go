// Package sim replays pod-group workloads on a simulated cluster under
// fluence and under models of its peers, over a virtual clock.
//
// # Model
//
// Time is float64 seconds. A workload is a list of groups; each arrives at
// its time with all of its pods Pending. A scheduler binds pods to nodes;
// a group starts when every one of its pods is bound (the gang rule of the
// measured experiments), holds its resources for its runtime, completes,
// and frees its resources after a release delay (the experiments' harness
// deleted finished jobs a few seconds later).
//
//	arrival ──> pods Pending ──Bind──> Running ... all Running: start
//	start + runtime: complete ──release delay──> resources free, Release()
//
// The event loop processes every event at one time, then lets the
// scheduler act (Schedule), then advances to the next event or to the
// scheduler's own wake-up (a Permit timeout, a back-off). Nothing reads the
// wall clock; the same workload and seed give the same result.
//
// Schedulers: "fluence" drives the real engine and queue manager
// (pkg/match, pkg/queue). "stock", "coscheduling" and "quota" are models of
// kube-scheduler, the scheduler-plugins Coscheduling plugin and Kueue-style
// quota admission (see docs/reference/peers.md); every output labels
// them as models.
//
// Preemption: a scheduler may evict bound pods (Env.Evict); each holds its
// node for a grace period, then a new pod takes its place, Pending. A
// group that loses a pod while running loses its run since its last
// checkpoint (GroupSpec.CheckpointEvery; from the start when it has none)
// and runs on from there once whole again (env_evict.go). The fluence
// model preempts when FluenceConfig.Preemption is set, the stock model
// pod by pod when StockOptions.Preemption is; ComparePreemption compares
// them, and CompareRackPreemption, for urgent groups that require a
// domain, topology-aware preemption against preemption without topology.
//
// GPUs through DRA: a node with GPUDevices publishes its GPUs as devices;
// the fluence model gives the core devices and each pod's GPUs as a device
// request, the models count them (devices.go). RackScaleDRAWorkload is 16
// NVLink domains of such nodes; SummarizeGPUs measures stranded GPUs,
// gangs within one domain and gangs bound in part from Result.Bindings.
//
// Detection: the run stops as stalled when no event is left while pods are
// Pending, or when nothing starts or completes for StallWindow seconds while
// pods are Pending (a livelock of timeouts and retries). The stall time is
// the last moment of progress.
package sim
