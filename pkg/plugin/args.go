package plugin

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/k8sadapter"
	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/queue"
)

// Args are the plugin's arguments, from the pluginConfig entry named
// "fluence" of a KubeSchedulerConfiguration profile. Every field is
// optional; Defaults documents the values used when it is absent.
type Args struct {
	// MatchPolicy is the engine's match policy: first, firstnodex, low,
	// high, lonode, hinode, lonodex, hinodex, locality, variation.
	// Default "lonode" (pack the lowest-numbered nodes first).
	MatchPolicy string `json:"matchPolicy,omitempty"`
	// QueuePolicy is fcfs, easy, hybrid or conservative. Default "easy".
	QueuePolicy string `json:"queuePolicy,omitempty"`
	// QueueDepth bounds the groups considered per scheduling loop.
	// Default 32.
	QueueDepth int `json:"queueDepth,omitempty"`
	// ReservationDepth bounds the groups holding reservations (hybrid).
	// Default 64.
	ReservationDepth int `json:"reservationDepth,omitempty"`
	// Packing is packing-aware backfill: of the groups a loop may only
	// start now, start the set that fills the most of the cluster, not
	// the first that fit (docs/design/002-simulator.md). Default true, as
	// in the simulator; false is plain first-fit backfill.
	Packing *bool `json:"packing,omitempty"`
	// RackLabel is the node label naming a node's rack; empty (default)
	// means no rack level in the graph.
	RackLabel string `json:"rackLabel,omitempty"`
	// TopologyLevels are node label keys, outermost first (say
	// [topology.kubernetes.io/zone, example.com/block, example.com/rack]):
	// the graph has a level of domains for each between the cluster and
	// the nodes, and no zone level unless its label is listed. Nodes
	// without a level's label share an unknown domain of that level.
	// Default none: zone and rackLabel. Not together with rackLabel.
	TopologyLevels []string `json:"topologyLevels,omitempty"`
	// ExtraGPUResources are resource names counted as GPUs besides
	// nvidia.com/gpu, such as amd.com/gpu. Default none.
	ExtraGPUResources []string `json:"extraGPUResources,omitempty"`
	// DefaultDuration is the planned run time of a group whose pods declare
	// none (no fluence.flux-framework.org/duration annotation and no
	// activeDeadlineSeconds), as a Go duration. Default "1h". A group that
	// runs longer keeps its resources; its plan is extended.
	DefaultDuration string `json:"defaultDuration,omitempty"`
	// PermitTimeout is how long a reserved pod waits at Permit for the rest
	// of its group before the whole allocation is cancelled. Default "60s".
	// A scheduler-plugins PodGroup's spec.scheduleTimeoutSeconds overrides
	// it for the group's pods.
	PermitTimeout string `json:"permitTimeout,omitempty"`
	// Preemption lets a waiting group evict running groups of lower
	// priority, whole, rather than wait for them to end. Default on,
	// after 60s, minRuntime 0s, timeout 2m.
	Preemption *PreemptionArgs `json:"preemption,omitempty"`
}

// PreemptionArgs is the preemption argument block. Durations are Go
// durations, rounded up to whole seconds.
type PreemptionArgs struct {
	// Enabled turns preemption on or off. Default true.
	Enabled *bool `json:"enabled,omitempty"`
	// After: a waiting group preempts when its reserved start is further
	// away than this, or it has no reservation. "0s": only a group with no
	// reservation preempts. Default "60s".
	After string `json:"after,omitempty"`
	// MinRuntime is how long a group runs before it may be preempted.
	// Default "0s".
	MinRuntime string `json:"minRuntime,omitempty"`
	// Timeout is how long the victims have to go before the preemptor's
	// hold on their nodes ends. Default "2m".
	Timeout string `json:"timeout,omitempty"`
	// MoveEvery is how long a group that was moved (its pods annotated
	// movable) runs before it may be moved again. Default "1h".
	MoveEvery string `json:"moveEvery,omitempty"`
}

// Config is Args validated, with defaults applied.
type Config struct {
	MatchPolicy       string
	Queue             queue.Config
	RackLabel         string
	TopologyLevels    []string
	ExtraGPUResources []string
	DefaultDuration   int64 // seconds
	PermitTimeout     time.Duration
	// Preemption is the core's; nil when preemption is off.
	Preemption *gang.Preemption
}

// Defaults.
const (
	DefaultMatchPolicy     = "lonode"
	DefaultQueuePolicy     = queue.Easy
	DefaultPacking         = true
	DefaultDefaultDuration = time.Hour
	DefaultPermitTimeout   = 60 * time.Second
	DefaultPreemptAfter    = 60 * time.Second
	DefaultPreemptTimeout  = 2 * time.Minute
)

// DecodeArgs reads the plugin arguments handed over by the scheduler
// framework (nil, *runtime.Unknown or *Args).
func DecodeArgs(obj runtime.Object) (Args, error) {
	var a Args
	switch o := obj.(type) {
	case nil:
	case *Args:
		a = *o
	default:
		if err := frameworkruntime.DecodeInto(obj, &a); err != nil {
			return Args{}, fmt.Errorf("fluence: plugin arguments: %w", err)
		}
	}
	return a, nil
}

// Validate checks the arguments and applies defaults. Every problem is
// reported, each naming its field.
func (a Args) Validate() (Config, error) {
	var errs []string
	c := Config{
		MatchPolicy:       a.MatchPolicy,
		RackLabel:         a.RackLabel,
		TopologyLevels:    slices.Clone(a.TopologyLevels),
		ExtraGPUResources: a.ExtraGPUResources,
		Queue: queue.Config{
			Policy:           queue.Policy(a.QueuePolicy),
			QueueDepth:       a.QueueDepth,
			ReservationDepth: a.ReservationDepth,
			Packing:          DefaultPacking,
		},
	}
	if a.Packing != nil {
		c.Queue.Packing = *a.Packing
	}
	if c.MatchPolicy == "" {
		c.MatchPolicy = DefaultMatchPolicy
	}
	if _, err := match.LookupPolicy(c.MatchPolicy); err != nil {
		errs = append(errs, fmt.Sprintf("matchPolicy: %v", err))
	}
	if c.Queue.Policy == "" {
		c.Queue.Policy = DefaultQueuePolicy
	}
	if a.QueueDepth < 0 {
		errs = append(errs, fmt.Sprintf("queueDepth: %d is negative", a.QueueDepth))
	}
	if a.ReservationDepth < 0 {
		errs = append(errs, fmt.Sprintf("reservationDepth: %d is negative", a.ReservationDepth))
	}
	if a.QueueDepth >= 0 && a.ReservationDepth >= 0 {
		if err := c.Queue.Validate(); err != nil {
			errs = append(errs, fmt.Sprintf("queuePolicy/queueDepth/reservationDepth: %v", err))
		}
	}
	errs = append(errs, a.topologyErrors()...)
	for i, n := range a.ExtraGPUResources {
		if strings.TrimSpace(n) == "" || strings.ContainsAny(n, " \t") {
			errs = append(errs, fmt.Sprintf("extraGPUResources[%d]: %q is not a resource name", i, n))
		}
	}
	dd, err := positiveDuration("defaultDuration", a.DefaultDuration, DefaultDefaultDuration)
	if err != nil {
		errs = append(errs, err.Error())
	}
	c.DefaultDuration = int64((dd + time.Second - 1) / time.Second)
	if c.DefaultDuration > k8sadapter.MaxDuration {
		// Seconds against seconds: the core multiplies them into its ticks.
		errs = append(errs, fmt.Sprintf("defaultDuration: %q is longer than %d s, the longest the scheduler plans", a.DefaultDuration, k8sadapter.MaxDuration))
	}
	if c.PermitTimeout, err = positiveDuration("permitTimeout", a.PermitTimeout, DefaultPermitTimeout); err != nil {
		errs = append(errs, err.Error())
	}
	var perrs []string
	c.Preemption, perrs = a.Preemption.validate()
	errs = append(errs, perrs...)
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("fluence: invalid plugin arguments: %s", strings.Join(errs, "; "))
	}
	return c, nil
}

// topologyErrors checks rackLabel and topologyLevels: label keys the API
// server would accept on a node, each level once, and one of the two
// fields, since rackLabel builds the zone and rack levels itself.
func (a Args) topologyErrors() []string {
	var errs []string
	if a.RackLabel != "" {
		if msgs := validation.IsQualifiedName(a.RackLabel); len(msgs) > 0 {
			errs = append(errs, fmt.Sprintf("rackLabel: %q is not a label key: %s", a.RackLabel, strings.Join(msgs, "; ")))
		}
		if len(a.TopologyLevels) > 0 {
			errs = append(errs, fmt.Sprintf("rackLabel and topologyLevels: give one; rackLabel %q builds the levels [%s, %s], which topologyLevels can list", a.RackLabel, gang.ZoneLabel, a.RackLabel))
		}
	}
	for i, k := range a.TopologyLevels {
		switch msgs := validation.IsQualifiedName(k); {
		case k == "":
			errs = append(errs, fmt.Sprintf("topologyLevels[%d]: an empty label key", i))
		case slices.Index(a.TopologyLevels, k) < i:
			errs = append(errs, fmt.Sprintf("topologyLevels[%d]: %q is listed twice (also topologyLevels[%d])", i, k, slices.Index(a.TopologyLevels, k)))
		case len(msgs) > 0:
			errs = append(errs, fmt.Sprintf("topologyLevels[%d]: %q is not a label key: %s", i, k, strings.Join(msgs, "; ")))
		}
	}
	return errs
}

// validate checks the preemption block and returns the core's
// configuration: the defaults when the block is absent, nil when it says
// enabled: false (its durations are still checked).
func (p *PreemptionArgs) validate() (*gang.Preemption, []string) {
	if p == nil {
		p = &PreemptionArgs{}
	}
	var errs []string
	seconds := func(field, v string, def time.Duration, zero bool) int64 {
		d, err := duration("preemption."+field, v, def, zero)
		if err != nil {
			errs = append(errs, err.Error())
			return 0
		}
		s := int64((d + time.Second - 1) / time.Second)
		if s > k8sadapter.MaxDuration {
			errs = append(errs, fmt.Sprintf("preemption.%s: %q is longer than %d s, the longest the scheduler plans", field, v, k8sadapter.MaxDuration))
		}
		return s
	}
	out := &gang.Preemption{
		After:      seconds("after", p.After, DefaultPreemptAfter, true),
		MinRuntime: seconds("minRuntime", p.MinRuntime, 0, true),
		Timeout:    seconds("timeout", p.Timeout, DefaultPreemptTimeout, false),
		MoveEvery:  seconds("moveEvery", p.MoveEvery, time.Hour, false),
	}
	if len(errs) > 0 || (p.Enabled != nil && !*p.Enabled) {
		return nil, errs
	}
	return out, nil
}

func positiveDuration(field, v string, def time.Duration) (time.Duration, error) {
	return duration(field, v, def, false)
}

// duration parses a duration argument: positive, or not negative when
// zero is allowed; def when v is empty.
func duration(field, v string, def time.Duration, zero bool) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a duration such as 90s or 1h", field, v)
	}
	switch {
	case d < 0 && zero:
		return 0, fmt.Errorf("%s: %q is negative", field, v)
	case d <= 0 && !zero:
		return 0, fmt.Errorf("%s: %q is not positive", field, v)
	}
	return d, nil
}

// DeepCopyObject and GetObjectKind let Args travel as a runtime.Object.
func (a *Args) DeepCopyObject() runtime.Object {
	c := *a
	c.ExtraGPUResources = append([]string(nil), a.ExtraGPUResources...)
	c.TopologyLevels = slices.Clone(a.TopologyLevels)
	if a.Preemption != nil {
		p := *a.Preemption
		if p.Enabled != nil {
			p.Enabled = new(*p.Enabled)
		}
		c.Preemption = &p
	}
	return &c
}

// GetObjectKind reports no kind: Args are not registered in a scheme.
func (a *Args) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
