package up

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// Node labels `fluence up` sets itself.
const (
	// RackLabel names a node's rack when --racks is given; the fluence
	// profile's rackLabel argument is then set to it, so the engine's graph
	// has a rack level.
	RackLabel = "fluence.flux-framework.org/rack"
	// GPULabel marks the nodes with GPUs, as NVIDIA's GPU feature
	// discovery does on real clusters (workloads select on it).
	GPULabel = "nvidia.com/gpu.present"
	// LevelLabelPrefix starts the label of each --levels level: level
	// block is the label fluence.flux-framework.org/block.
	LevelLabelPrefix = "fluence.flux-framework.org/"
)

// Level is one topology level of --levels: the nodes are spread over
// Domains domains of it in contiguous blocks, labelled
// LevelLabelPrefix+Name=<Name>-N.
type Level struct {
	Name    string
	Domains int
}

// Label is the node label of the level.
func (l Level) Label() string { return LevelLabelPrefix + l.Name }

// ParseLevels reads --levels: name=domains pairs, outermost first
// ("block=2,rack=4").
func ParseLevels(pairs []string) ([]Level, error) {
	var out []Level
	for _, p := range pairs {
		name, n, ok := strings.Cut(p, "=")
		d, err := strconv.Atoi(n)
		if !ok || name == "" || err != nil {
			return nil, fmt.Errorf("--levels %s: want name=domains, such as block=2", p)
		}
		out = append(out, Level{Name: name, Domains: d})
	}
	return out, nil
}

// Options describe the local cluster.
type Options struct {
	Nodes  int    // simulated nodes, node-0 … node-(Nodes-1)
	CPU    string // per node, a quantity ("4", "3500m")
	Memory string // per node, a quantity ("16Gi")
	// GPUNodes are the last nodes; each offers GPUs × nvidia.com/gpu and
	// carries GPULabel=true.
	GPUNodes, GPUs int
	// DRA publishes the GPU nodes' GPUs through Dynamic Resource
	// Allocation (a ResourceSlice per node, dra.go) instead of as
	// nvidia.com/gpu in their allocatable.
	DRA bool
	// Racks spreads the nodes over this many racks in contiguous blocks
	// (RackLabel=rack-0 …); 0 means no rack level.
	Racks int
	// Levels are topology levels, outermost first, each spreading the
	// nodes over its domains; the fluence profile's topologyLevels are
	// their labels. Not with Racks.
	Levels []Level
	// NodeLabels go on every node.
	NodeLabels map[string]string
	// Kubeconfig is where the kubeconfig is written; "" is the work
	// directory. A file outside it is removed on exit too, so it must not
	// exist beforehand.
	Kubeconfig string
	// Dir is the work directory (etcd data, certificates, the
	// kubeconfig); "" makes a fresh one under the temporary directory. It
	// is removed on exit, so it must not exist or be empty.
	Dir string
	// FeatureGates are Kubernetes feature gates for the API server, the
	// Job controller and the scheduler (one process, one set of gates).
	FeatureGates map[string]bool
	// With are the controllers to run beside the control plane, each a
	// process of its own built from its published module
	// (localcluster.Neighbours: kueue, mpi-operator, jobset).
	With []string
	// MPIGangScheduling is the MPI Operator's --gang-scheduling (a
	// scheduler's name, such as fluence); "" runs it without.
	MPIGangScheduling string
}

// Defaults is a small cluster on which every example in docs/examples
// that needs no operator can run: 4 nodes of 4 CPUs and 16Gi, the last
// with 2 GPUs, no racks.
func Defaults() Options {
	return Options{Nodes: 4, CPU: "4", Memory: "16Gi", GPUNodes: 1, GPUs: 2}
}

// Validate reports every problem with the options, each naming its flag.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.Nodes < 1 {
		bad("--nodes %d: a cluster needs at least one node", o.Nodes)
	}
	for _, q := range []struct{ flag, value string }{{"--cpu", o.CPU}, {"--memory", o.Memory}} {
		if v, err := resource.ParseQuantity(q.value); err != nil || v.Sign() <= 0 {
			bad("%s %q: not a positive quantity (such as 4, 3500m, 16Gi)", q.flag, q.value)
		}
	}
	switch {
	case o.GPUs < 0:
		bad("--gpus %d: cannot be negative", o.GPUs)
	case o.GPUNodes < 0:
		bad("--gpu-nodes %d: cannot be negative", o.GPUNodes)
	case o.GPUs > 0 && o.GPUNodes > o.Nodes && o.Nodes >= 1:
		bad("--gpu-nodes %d: more than the %d nodes (--nodes)", o.GPUNodes, o.Nodes)
	case o.DRA && (o.GPUs == 0 || o.GPUNodes == 0):
		bad("--dra: there are no GPUs to publish (--gpus %d, --gpu-nodes %d)", o.GPUs, o.GPUNodes)
	}
	if o.Racks < 0 || (o.Racks > o.Nodes && o.Nodes >= 1) {
		bad("--racks %d: want 0 (no rack level) to %d (one node per rack)", o.Racks, o.Nodes)
	}
	for i, l := range o.Levels {
		switch {
		case len(validation.IsQualifiedName(l.Label())) > 0 || strings.Contains(l.Name, "/"):
			bad("--levels %s=%d: %s is not a label key: %s", l.Name, l.Domains, l.Label(), strings.Join(validation.IsQualifiedName(l.Label()), "; "))
		case slices.IndexFunc(o.Levels, func(m Level) bool { return m.Name == l.Name }) < i:
			bad("--levels %s=%d: level %s is listed twice", l.Name, l.Domains, l.Name)
		case l.Domains < 1 || (l.Domains > o.Nodes && o.Nodes >= 1):
			bad("--levels %s=%d: want 1 to %d (one node per domain) domains", l.Name, l.Domains, o.Nodes)
		}
	}
	if o.Racks > 0 && len(o.Levels) > 0 {
		bad("--racks %d and --levels: give one; --levels rack=%d gives the rack level alone", o.Racks, o.Racks)
	}
	for _, k := range sortedKeys(o.NodeLabels) {
		v := o.NodeLabels[k]
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			bad("--node-labels %s=%s: the key is not a label key: %s", k, v, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			bad("--node-labels %s=%s: the value is not a label value: %s", k, v, strings.Join(msgs, "; "))
		}
		if k == corev1.LabelHostname || k == RackLabel || k == GPULabel || slices.ContainsFunc(o.Levels, func(l Level) bool { return l.Label() == k }) {
			bad("--node-labels %s=%s: fluence up sets %s itself", k, v, k)
		}
	}
	known := utilfeature.DefaultMutableFeatureGate.GetAll()
	for _, name := range sortedKeys(o.FeatureGates) {
		if _, ok := known[featuregate.Feature(name)]; !ok {
			bad("--feature-gates %s=%t: not a feature gate of Kubernetes v1.37", name, o.FeatureGates[name])
		}
	}
	for i, name := range o.With {
		switch {
		case !slices.Contains(localcluster.Neighbours, name):
			bad("--with %s: not a controller fluence up runs; it runs %s", name, strings.Join(localcluster.Neighbours, ", "))
		case slices.Index(o.With, name) < i:
			bad("--with %s: listed twice", name)
		}
	}
	if o.MPIGangScheduling != "" && !slices.Contains(o.With, localcluster.MPIOperator) {
		bad("--mpi-gang-scheduling %s: the MPI Operator does not run (--with %s)", o.MPIGangScheduling, localcluster.MPIOperator)
	}
	if o.Kubeconfig != "" {
		if _, err := os.Lstat(o.Kubeconfig); err == nil {
			bad("--kubeconfig %s: the file exists; fluence up writes a new kubeconfig and removes it on exit, so name a file that does not exist", o.Kubeconfig)
		} else if st, err := os.Stat(filepath.Dir(o.Kubeconfig)); err != nil || !st.IsDir() {
			bad("--kubeconfig %s: no directory %s to write it in", o.Kubeconfig, filepath.Dir(o.Kubeconfig))
		}
	}
	if o.Dir != "" {
		if st, err := os.Stat(o.Dir); err == nil {
			entries, _ := os.ReadDir(o.Dir)
			if !st.IsDir() {
				bad("--dir %s: not a directory", o.Dir)
			} else if len(entries) > 0 {
				bad("--dir %s: not empty; fluence up removes its work directory on exit, so name a new or empty one", o.Dir)
			}
		} else if !os.IsNotExist(err) {
			bad("--dir %s: %v", o.Dir, err)
		}
	}
	return errors.Join(errs...)
}

// NodeSpecs are the nodes the options describe.
func (o Options) NodeSpecs() []localcluster.NodeSpec {
	specs := make([]localcluster.NodeSpec, o.Nodes)
	for i := range specs {
		labels := map[string]string{}
		for k, v := range o.NodeLabels {
			labels[k] = v
		}
		s := localcluster.NodeSpec{Name: fmt.Sprintf("node-%d", i), CPU: o.CPU, Memory: o.Memory, Labels: labels}
		if o.GPUs > 0 && i >= o.Nodes-o.GPUNodes {
			if !o.DRA {
				s.GPUs = o.GPUs
			}
			labels[GPULabel] = "true"
		}
		if o.Racks > 0 {
			labels[RackLabel] = fmt.Sprintf("rack-%d", i*o.Racks/o.Nodes)
		}
		for _, l := range o.Levels {
			labels[l.Label()] = fmt.Sprintf("%s-%d", l.Name, i*l.Domains/o.Nodes)
		}
		specs[i] = s
	}
	return specs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
