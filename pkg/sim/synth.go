package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Synthetic workloads stand in for the scale the measured experiments
// never reached (the case: 10,000 groups on 1,000 nodes). A
// SynthSpec describes the distributions; Synthesize draws a workload from
// them, the same one for the same spec and seed.

// Choice is one value of a weighted distribution.
type Choice struct {
	Value  int64
	Weight float64
}

// Choices is a weighted distribution over integer values (pod counts,
// millicores, bytes, GPUs). Its text form is value:weight pairs joined by
// "/", e.g. 1:40/2:15/4:12; a bare value has weight 1.
type Choices []Choice

// SynthSpec describes a synthetic workload. DefaultSynthSpec gives the
// scale case; ParseSynthSpec overrides it from key=value text.
type SynthSpec struct {
	Name string
	// The cluster: Nodes identical nodes.
	Nodes      int
	NodeCPU    int64 // millicores
	NodeMemory int64 // bytes; 0 means memory is not modelled
	NodeGPU    int64
	// Groups is how many groups to draw.
	Groups int
	// Sizes is the distribution of pods per group; PodCPU (millicores),
	// PodMemory (bytes) and PodGPU of each group's pods (a group's pods
	// are alike). An empty PodMemory or PodGPU means none requested.
	Sizes, PodCPU, PodMemory, PodGPU Choices
	// ArrivalRate is groups per second of a Poisson process starting at
	// t=0; 0 puts every group at t=0.
	ArrivalRate float64
	// Runtimes are log-uniform in [RuntimeMin, RuntimeMax] seconds: HPC
	// job lengths span orders of magnitude, and short jobs are common.
	RuntimeMin, RuntimeMax float64
	// Overestimate: a group declares Duration = runtime x U[1,
	// Overestimate] (+ release delay), the user's padded walltime that
	// backfill must plan with. 1 means exact estimates.
	Overestimate float64
	// ReleaseDelay is every group's completion-to-release time.
	ReleaseDelay float64
	Seed         uint64
}

// DefaultSynthSpec is the scale case: 1,000 nodes of 32 cores and 128 GiB;
// 10,000 groups of 1 to 128 pods, mostly small with a long tail of large
// ones (by pods the large groups dominate, as on real HPC systems); 1 to 8
// cores and 1 to 8 GiB per pod; runtimes 1 min to 1 h; declared durations
// up to twice the runtime. Two groups a second offer about twice the
// cluster's capacity (mean group: 13.5 pods x 2.6 cores x 865 s), so a
// queue builds and the policy matters.
func DefaultSynthSpec() SynthSpec {
	const gi = 1 << 30
	return SynthSpec{
		Name:         "synthetic",
		Nodes:        1000,
		NodeCPU:      32000,
		NodeMemory:   128 * gi,
		Groups:       10000,
		Sizes:        Choices{{1, 40}, {2, 15}, {4, 12}, {8, 10}, {16, 8}, {32, 6}, {64, 5}, {128, 4}},
		PodCPU:       Choices{{1000, 4}, {2000, 3}, {4000, 2}, {8000, 1}},
		PodMemory:    Choices{{1 * gi, 1}, {2 * gi, 1}, {4 * gi, 1}, {8 * gi, 1}},
		ArrivalRate:  2,
		RuntimeMin:   60,
		RuntimeMax:   3600,
		Overestimate: 2,
		Seed:         1,
	}
}

// synthKeys are the keys of ParseSynthSpec, in the order String writes.
var synthKeys = []string{"name", "nodes", "node-cpu", "node-memory", "node-gpu", "groups", "sizes",
	"pod-cpu", "pod-memory", "pod-gpu", "rate", "runtime-min", "runtime-max", "overestimate",
	"release-delay", "seed"}

// ParseSynthSpec reads comma-separated key=value pairs over the defaults,
// e.g. "nodes=100,groups=500,sizes=1:1/8:1,seed=3". Keys: name, nodes,
// node-cpu, node-memory, node-gpu (quantities: 32, 500m, 128Gi), groups,
// sizes, pod-cpu, pod-memory, pod-gpu (weighted lists value:weight joined
// by "/"; "+" is accepted too; "none" for no request), rate (groups/s), runtime-min, runtime-max,
// overestimate, release-delay (seconds), seed. Unknown keys, repeated keys
// and bad values are errors naming the key. The result is validated as
// Synthesize would.
func ParseSynthSpec(s string) (SynthSpec, error) {
	spec := DefaultSynthSpec()
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(strings.ToLower(k)), strings.TrimSpace(v)
		if !ok {
			return spec, fmt.Errorf("synth spec: %q: want key=value", kv)
		}
		if !slices.Contains(synthKeys, k) {
			return spec, fmt.Errorf("synth spec: unknown key %q (known: %s)", k, strings.Join(synthKeys, ", "))
		}
		if seen[k] {
			return spec, fmt.Errorf("synth spec: %s: given twice", k)
		}
		seen[k] = true
		if err := spec.set(k, v); err != nil {
			return spec, fmt.Errorf("synth spec: %s: %w", k, err)
		}
	}
	if err := spec.validate(); err != nil {
		return spec, err
	}
	return spec, nil
}

func (s *SynthSpec) set(k, v string) error {
	var err error
	switch k {
	case "name":
		if v == "" {
			return fmt.Errorf("must not be empty")
		}
		s.Name = v
	case "nodes":
		var n int64
		n, err = strconv.ParseInt(v, 10, 64)
		if err == nil && (n < 1 || n > wlMaxNodes) {
			return fmt.Errorf("must be in 1..%d, got %d", wlMaxNodes, n)
		}
		s.Nodes = int(n)
	case "groups":
		var n int64
		n, err = strconv.ParseInt(v, 10, 64)
		if err == nil && (n < 1 || n > wlMaxGroups) {
			return fmt.Errorf("must be in 1..%d, got %d", wlMaxGroups, n)
		}
		s.Groups = int(n)
	case "node-cpu":
		s.NodeCPU, err = synthQuantity(v, true)
	case "node-memory":
		s.NodeMemory, err = synthQuantity(v, false)
	case "node-gpu":
		s.NodeGPU, err = strconv.ParseInt(v, 10, 64)
	case "sizes":
		s.Sizes, err = parseChoices(v, func(x string) (int64, error) { return strconv.ParseInt(x, 10, 64) })
	case "pod-cpu":
		s.PodCPU, err = parseChoices(v, func(x string) (int64, error) { return synthQuantity(x, true) })
	case "pod-memory":
		s.PodMemory, err = parseChoices(v, func(x string) (int64, error) { return synthQuantity(x, false) })
	case "pod-gpu":
		s.PodGPU, err = parseChoices(v, func(x string) (int64, error) { return strconv.ParseInt(x, 10, 64) })
	case "rate":
		s.ArrivalRate, err = synthFloat(v)
	case "runtime-min":
		s.RuntimeMin, err = synthFloat(v)
	case "runtime-max":
		s.RuntimeMax, err = synthFloat(v)
	case "overestimate":
		s.Overestimate, err = synthFloat(v)
	case "release-delay":
		s.ReleaseDelay, err = synthFloat(v)
	case "seed":
		s.Seed, err = strconv.ParseUint(v, 10, 64)
	}
	if err != nil {
		return fmt.Errorf("bad value %q: %w", v, unwrapNum(err))
	}
	return nil
}

// unwrapNum drops strconv's "strconv.ParseInt: parsing ..." prefix, which
// repeats the value the message already quotes.
func unwrapNum(err error) error {
	if ne, ok := err.(*strconv.NumError); ok {
		return ne.Err
	}
	return err
}

func synthFloat(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return 0, fmt.Errorf("must be finite")
	}
	return f, err
}

// synthQuantity parses a Kubernetes quantity: cpu into millicores, memory
// into bytes.
func synthQuantity(v string, cpu bool) (int64, error) {
	limit := wlMaxMemoryBytes
	if cpu {
		limit = wlMaxCPUCores
	}
	q, err := yparseQuantity(v, limit)
	if err != nil {
		return 0, err
	}
	if cpu {
		return q.MilliValue(), nil
	}
	return q.Value(), nil
}

func parseChoices(v string, parse func(string) (int64, error)) (Choices, error) {
	if v == "none" {
		return nil, nil // nothing requested; refused where a value is needed
	}
	var out Choices
	for _, item := range strings.FieldsFunc(v, func(r rune) bool { return r == '/' || r == '+' }) {
		val, w, hasW := strings.Cut(item, ":")
		x, err := parse(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, unwrapNum(err))
		}
		c := Choice{Value: x, Weight: 1}
		if hasW {
			if c.Weight, err = synthFloat(strings.TrimSpace(w)); err != nil {
				return nil, fmt.Errorf("%q: weight: %w", item, unwrapNum(err))
			}
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

// String is the spec as ParseSynthSpec reads it, every key given, so a
// report can record exactly what was generated.
func (s SynthSpec) String() string {
	cpu := func(v int64) string { return resource.NewMilliQuantity(v, resource.DecimalSI).String() }
	mem := func(v int64) string { return resource.NewQuantity(v, resource.BinarySI).String() }
	num := func(v int64) string { return strconv.FormatInt(v, 10) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	parts := []string{
		"name=" + s.Name,
		"nodes=" + strconv.Itoa(s.Nodes),
		"node-cpu=" + cpu(s.NodeCPU),
		"node-memory=" + mem(s.NodeMemory),
		"node-gpu=" + num(s.NodeGPU),
		"groups=" + strconv.Itoa(s.Groups),
		"sizes=" + s.Sizes.format(num),
	}
	parts = append(parts,
		"pod-cpu="+s.PodCPU.format(cpu),
		"pod-memory="+s.PodMemory.format(mem),
		"pod-gpu="+s.PodGPU.format(num),
		"rate="+f(s.ArrivalRate),
		"runtime-min="+f(s.RuntimeMin),
		"runtime-max="+f(s.RuntimeMax),
		"overestimate="+f(s.Overestimate),
		"release-delay="+f(s.ReleaseDelay),
		"seed="+strconv.FormatUint(s.Seed, 10))
	return strings.Join(parts, ",")
}

func (cs Choices) format(value func(int64) string) string {
	if len(cs) == 0 {
		return "none"
	}
	items := make([]string, len(cs))
	for i, c := range cs {
		items[i] = value(c.Value) + ":" + strconv.FormatFloat(c.Weight, 'g', -1, 64)
	}
	return strings.Join(items, "/")
}

// pick draws a value with probability proportional to its weight (the
// empty distribution gives 0: nothing requested).
func (cs Choices) pick(r *rand.Rand) int64 {
	if len(cs) == 0 {
		return 0
	}
	total := 0.0
	for _, c := range cs {
		total += c.Weight
	}
	x := r.Float64() * total
	for _, c := range cs {
		if x < c.Weight {
			return c.Value
		}
		x -= c.Weight
	}
	return cs[len(cs)-1].Value
}

func (cs Choices) check(key string, lo, hi int64, what string) error {
	if len(cs) == 0 {
		return nil
	}
	total := 0.0
	for _, c := range cs {
		if c.Value < lo {
			return fmt.Errorf("synth spec: %s: value %d is below %d", key, c.Value, lo)
		}
		if c.Value > hi {
			return fmt.Errorf("synth spec: %s: value %d exceeds %s (%d): such a pod fits no node", key, c.Value, what, hi)
		}
		if c.Weight < 0 || math.IsNaN(c.Weight) || math.IsInf(c.Weight, 0) {
			return fmt.Errorf("synth spec: %s: weight of %d must be a non-negative number", key, c.Value)
		}
		total += c.Weight
	}
	if total <= 0 {
		return fmt.Errorf("synth spec: %s: the weights add up to 0", key)
	}
	return nil
}

func (cs Choices) minValue() int64 {
	if len(cs) == 0 {
		return 0
	}
	m := cs[0].Value
	for _, c := range cs {
		if c.Weight > 0 {
			m = min(m, c.Value)
		}
	}
	return m
}

func (s SynthSpec) validate() error {
	bad := func(key, format string, args ...any) error {
		return fmt.Errorf("synth spec: %s: %s", key, fmt.Sprintf(format, args...))
	}
	switch {
	case s.Nodes < 1 || s.Nodes > wlMaxNodes:
		return bad("nodes", "must be in 1..%d, got %d", wlMaxNodes, s.Nodes)
	case s.NodeCPU <= 0:
		return bad("node-cpu", "must be positive")
	case s.NodeMemory < 0:
		return bad("node-memory", "must not be negative")
	case s.NodeGPU < 0:
		return bad("node-gpu", "must not be negative")
	case s.Groups < 1 || s.Groups > wlMaxGroups:
		return bad("groups", "must be in 1..%d, got %d", wlMaxGroups, s.Groups)
	case len(s.Sizes) == 0:
		return bad("sizes", "must not be empty")
	case len(s.PodCPU) == 0:
		return bad("pod-cpu", "must not be empty")
	case !(s.ArrivalRate >= 0) || math.IsInf(s.ArrivalRate, 0):
		return bad("rate", "must be a non-negative number, got %g", s.ArrivalRate)
	case !(s.RuntimeMin > 0) || math.IsInf(s.RuntimeMin, 0):
		return bad("runtime-min", "must be positive, got %g", s.RuntimeMin)
	case !(s.RuntimeMax >= s.RuntimeMin) || math.IsInf(s.RuntimeMax, 0):
		return bad("runtime-max", "must be at least runtime-min (%g), got %g", s.RuntimeMin, s.RuntimeMax)
	case !(s.Overestimate >= 1) || math.IsInf(s.Overestimate, 0):
		return bad("overestimate", "must be at least 1, got %g", s.Overestimate)
	case !(s.ReleaseDelay >= 0) || math.IsInf(s.ReleaseDelay, 0):
		return bad("release-delay", "must be a non-negative number, got %g", s.ReleaseDelay)
	}
	nodeMem := s.NodeMemory
	if nodeMem == 0 {
		nodeMem = UnmodelledMemory
	}
	if err := s.Sizes.check("sizes", 1, wlMaxPodsPerGroup, "the pod limit of a group"); err != nil {
		return err
	}
	if err := s.PodCPU.check("pod-cpu", 1, s.NodeCPU, "node-cpu"); err != nil {
		return err
	}
	if err := s.PodMemory.check("pod-memory", 0, nodeMem, "node-memory"); err != nil {
		return err
	}
	if err := s.PodGPU.check("pod-gpu", 0, s.NodeGPU, "node-gpu"); err != nil {
		return err
	}
	maxSize := int64(0)
	for _, c := range s.Sizes {
		maxSize = max(maxSize, c.Value)
	}
	if int64(s.Groups)*maxSize > wlMaxPodsTotal {
		return bad("groups", "%d groups of up to %d pods may exceed the limit of %d pods", s.Groups, maxSize, wlMaxPodsTotal)
	}
	// Some group must be able to fit, or Synthesize could never draw one.
	smallest := PodSpec{CPU: s.PodCPU.minValue(), Memory: s.PodMemory.minValue(), GPU: s.PodGPU.minValue()}
	if s.slots(smallest, nodeMem) < s.Sizes.minValue() {
		return bad("sizes", "even the smallest group (%d pods of %s) does not fit %d nodes", s.Sizes.minValue(), shapeString(smallest), s.Nodes)
	}
	return nil
}

// slots is how many pods of shape p the synthetic cluster holds.
func (s SynthSpec) slots(p PodSpec, nodeMem int64) int64 {
	return clusterSlots(p, []NodeSpec{{CPU: s.NodeCPU, Memory: nodeMem, GPU: s.NodeGPU}}) * int64(s.Nodes)
}

// synthStream is the PCG stream constant of synthesis; the seed picks the
// sequence.
const synthStream = 0x73796e7468 // "synth"

// Synthesize draws a workload from s. The same spec (seed included) gives
// the same workload. Every group fits the empty cluster: a drawn
// combination of size and pod shape that could not run (more pods than
// the nodes hold) is drawn again, so no group exists only to be rejected.
// Times are rounded to the millisecond, the simulator's planning unit.
func Synthesize(s SynthSpec) (*Workload, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	nodeMem := s.NodeMemory
	if nodeMem == 0 {
		nodeMem = UnmodelledMemory
	}
	w := &Workload{
		Name:    s.Name,
		Cluster: ClusterFromSpec(s.Nodes, s.NodeCPU, nodeMem, s.NodeGPU),
		Groups:  make([]GroupSpec, 0, s.Groups),
		Params:  Params{PermitTimeout: defaultPermitTimeout},
	}
	if w.Name == "" {
		w.Name = "synthetic"
	}
	r := rand.New(rand.NewPCG(s.Seed, synthStream))
	width := len(strconv.Itoa(s.Groups - 1))
	lnMin, lnMax := math.Log(s.RuntimeMin), math.Log(s.RuntimeMax)
	t := 0.0
	for i := range s.Groups {
		var size int64
		var pod PodSpec
		const tries = 1000
		for try := 0; ; try++ {
			if try == tries {
				return nil, fmt.Errorf("synth spec: group %d: no size and pod shape that fits the cluster in %d draws; make large sizes or pods rarer", i, tries)
			}
			size = s.Sizes.pick(r)
			pod = PodSpec{CPU: s.PodCPU.pick(r), Memory: s.PodMemory.pick(r), GPU: s.PodGPU.pick(r)}
			if s.slots(pod, nodeMem) >= size {
				break
			}
		}
		runtime := math.Exp(lnMin + r.Float64()*(lnMax-lnMin))
		runtime = min(max(roundMs(runtime), s.RuntimeMin), s.RuntimeMax)
		declared := roundMs(runtime*(1+r.Float64()*(s.Overestimate-1)) + s.ReleaseDelay)
		g := GroupSpec{
			Name:         fmt.Sprintf("g%0*d", width, i),
			Arrival:      roundMs(t),
			Pods:         make([]PodSpec, size),
			Runtime:      runtime,
			Duration:     declared,
			ReleaseDelay: s.ReleaseDelay,
		}
		for p := range g.Pods {
			g.Pods[p] = pod
		}
		w.Groups = append(w.Groups, g)
		if s.ArrivalRate > 0 {
			t += r.ExpFloat64() / s.ArrivalRate
		}
	}
	return w, nil
}

func roundMs(x float64) float64 { return math.Round(x*1000) / 1000 }

// BackfillWorkload is the textbook case for backfill: 4 nodes of 4 cores.
// At t=0 "head" takes three whole nodes for 100 s; at t=1 "big" wants all
// four nodes for 100 s and must wait for head (its reservation: t=100).
// From t=2 come short one-core groups (20-50 s) that fit the idle fourth
// node and end before t=100, and a few long one-core groups (300 s) that
// would push big back if started there. Strict FCFS keeps everything
// behind big; easy backfill runs the short ones early, cutting the mean
// wait, and holds the long ones so big still starts at t=100. Every group
// declares its runtime: backfill needs to know when jobs end.
func BackfillWorkload() *Workload {
	whole := PodSpec{CPU: 4000}
	one := PodSpec{CPU: 1000}
	pods := func(n int, p PodSpec) []PodSpec {
		out := make([]PodSpec, n)
		for i := range out {
			out[i] = p
		}
		return out
	}
	w := &Workload{
		Name:    "backfill",
		Cluster: ClusterFromSpec(4, 4000, 0, 0),
		Params:  Params{PermitTimeout: defaultPermitTimeout},
		Groups: []GroupSpec{
			{Name: "head", Arrival: 0, Pods: pods(3, whole), Runtime: 100, Duration: 100},
			{Name: "big", Arrival: 1, Pods: pods(4, whole), Runtime: 100, Duration: 100},
		},
	}
	short := []float64{20, 30, 40, 50, 20, 30, 40, 50, 20, 30}
	for i, rt := range short {
		w.Groups = append(w.Groups, GroupSpec{Name: fmt.Sprintf("short-%d", i), Arrival: 2 + float64(i), Pods: pods(1, one), Runtime: rt, Duration: rt})
		if i%4 == 1 {
			// A long one every few shorts, so that a policy which
			// backfills greedily (ignoring the reservation) takes one.
			w.Groups = append(w.Groups, GroupSpec{Name: fmt.Sprintf("long-%d", i/4), Arrival: 2.5 + float64(i), Pods: pods(1, one), Runtime: 300, Duration: 300})
		}
	}
	return w
}
