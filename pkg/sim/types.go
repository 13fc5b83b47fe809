package sim

// NodeSpec is one simulated node's allocatable resources.
type NodeSpec struct {
	Name   string
	CPU    int64 // millicores
	Memory int64 // bytes
	GPU    int64
	Labels map[string]string
	// GPUDevices: the node publishes its GPU GPUs as DRA devices (one
	// ResourceSlice device each) rather than as a count. The fluence model
	// gives the core devices and asks for them with device requests
	// (devices.go); the models of the other schedulers count them, as a
	// pod's extended resource served by a DeviceClass is counted.
	GPUDevices bool
	// DeviceAttributes are the attributes every GPU device of the node
	// carries (e.g. gpu.example.com/clique: the NVLink domain), keyed by
	// qualified name. Only with GPUDevices.
	DeviceAttributes map[string]string
}

// Cluster is the set of nodes.
type Cluster struct {
	Nodes []NodeSpec
}

// PodSpec is one pod's requests.
type PodSpec struct {
	CPU    int64 // millicores
	Memory int64 // bytes
	GPU    int64
}

// GroupSpec is one pod group (a job) of a workload.
type GroupSpec struct {
	Name    string
	Arrival float64 // seconds
	Pods    []PodSpec
	// Runtime is the actual time from gang start to completion.
	Runtime float64
	// Duration is the declared (requested) time; fluence plans with it.
	// Zero means the declared time equals Runtime + ReleaseDelay.
	Duration float64
	Priority int64
	// ReleaseDelay is the time from completion until the resources are free.
	ReleaseDelay float64
	// TopologyRequired is a node label key: the whole group must run on
	// nodes sharing one value of it (one domain). "" for none.
	TopologyRequired string
	// TopologyPreferred is a node label key the group would rather share
	// one value of: the tightest level that holds it, falling back
	// outwards, then anywhere. "" for none; never set with
	// TopologyRequired.
	TopologyPreferred string
	// CheckpointEvery, in seconds, is how often the group's pods save
	// their work: every CheckpointEvery seconds of a run (0: never). An
	// evicted group loses only the work since its last checkpoint and
	// runs on from there (env_evict.go).
	CheckpointEvery float64
	// Movable: the group's pods may be moved (the movable annotation):
	// with preemption, fluence may evict it to let a group bound to one
	// domain in when it fits elsewhere now (pkg/gang/preempt_move.go).
	Movable bool
}

// Size is the number of pods.
func (g *GroupSpec) Size() int { return len(g.Pods) }

// Hold is how long the group's resources stay taken after it starts.
func (g *GroupSpec) Hold() float64 { return g.Runtime + g.ReleaseDelay }

// Measured is the outcome recorded for one scheduler in a real run, shown
// beside the simulated one.
type Measured struct {
	Config         string
	JobsCompleted  int
	Clogged        *bool
	PendingAtClog  *int
	RunningAtClog  *int
	Makespan       *float64
	MeanTurnaround *float64
	Notes          string
}

// Workload is what a simulation replays.
type Workload struct {
	Name    string
	Cluster Cluster
	Groups  []GroupSpec
	// Measured outcomes by scheduler name ("fluence", "stock",
	// "coscheduling", "quota"), when the workload replays an experiment.
	Measured map[string]Measured
	// Params carries workload-specific scheduler settings.
	Params Params
	// NodeArrivals are nodes that join the cluster during the run (a node
	// pool growing). Only schedulers that see nodes change (NodeObserver)
	// can replay such a workload.
	NodeArrivals []NodeArrival
	// TopologyLevels are node label keys, outermost first (zone, block,
	// rack): the levels the fluence model gives the core when its own
	// config names none, and the levels a topology report measures.
	TopologyLevels []string
}

// NodeArrival is a node joining the cluster at a time (seconds).
type NodeArrival struct {
	At   float64
	Node NodeSpec
}

// Params are scheduler settings a workload can carry.
type Params struct {
	// PermitTimeout is the coscheduling Permit wait (seconds).
	PermitTimeout float64
	// QuotaCPU is the quota model's CPU quota (millicores); 0 means the
	// cluster's total.
	QuotaCPU int64
	// QuotaPods is the quota model's pod quota; 0 means unlimited.
	QuotaPods int
}
