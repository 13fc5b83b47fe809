package up

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing")
	if err := os.WriteFile(existing, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	with := func(f func(*Options)) Options {
		o := Defaults()
		f(&o)
		return o
	}
	for _, tc := range []struct {
		name string
		o    Options
		want []string // substrings of the error; none: valid
	}{
		{"defaults", Defaults(), nil},
		{"no GPUs at all", with(func(o *Options) { o.GPUs, o.GPUNodes = 0, 0 }), nil},
		{"gpu-nodes beyond nodes without GPUs", with(func(o *Options) { o.GPUs, o.GPUNodes = 0, 9 }), nil},
		{"one node per rack", with(func(o *Options) { o.Racks = 4 }), nil},
		{"GPUs through DRA", with(func(o *Options) { o.DRA = true }), nil},
		{"DRA without GPUs", with(func(o *Options) { o.DRA, o.GPUs = true, 0 }), []string{"--dra: there are no GPUs to publish"}},
		{"new dir and kubeconfig", with(func(o *Options) { o.Dir, o.Kubeconfig = filepath.Join(dir, "new"), filepath.Join(dir, "kc") }), nil},
		{"empty dir", with(func(o *Options) { o.Dir = empty }), nil},
		{"labels and gates", with(func(o *Options) {
			o.NodeLabels = map[string]string{"pool": "a", "example.com/tier": "gold"}
			o.FeatureGates = map[string]bool{"GenericWorkload": true}
		}), nil},
		{"with the neighbours", with(func(o *Options) { o.With, o.MPIGangScheduling = []string{"kueue", "mpi-operator", "jobset"}, "fluence" }), nil},
		{"with an unknown controller", with(func(o *Options) { o.With = []string{"kueue", "lws"} }), []string{"--with lws: not a controller fluence up runs; it runs kueue, mpi-operator, jobset"}},
		{"with one twice", with(func(o *Options) { o.With = []string{"kueue", "kueue"} }), []string{"--with kueue: listed twice"}},
		{"gang scheduling without the operator", with(func(o *Options) { o.MPIGangScheduling = "fluence" }), []string{"--mpi-gang-scheduling fluence: the MPI Operator does not run (--with mpi-operator)"}},
		{"no nodes", with(func(o *Options) { o.Nodes = 0 }), []string{"--nodes 0"}},
		{"bad quantities", with(func(o *Options) { o.CPU, o.Memory = "four", "-1Gi" }), []string{`--cpu "four"`, `--memory "-1Gi"`}},
		{"zero cpu", with(func(o *Options) { o.CPU = "0" }), []string{`--cpu "0"`}},
		{"negative gpus", with(func(o *Options) { o.GPUs = -1 }), []string{"--gpus -1"}},
		{"too many gpu nodes", with(func(o *Options) { o.GPUNodes = 5 }), []string{"--gpu-nodes 5: more than the 4 nodes"}},
		{"too many racks", with(func(o *Options) { o.Racks = 5 }), []string{"--racks 5"}},
		{"bad label key", with(func(o *Options) { o.NodeLabels = map[string]string{"a b": "c"} }), []string{"--node-labels a b=c: the key"}},
		{"bad label value", with(func(o *Options) { o.NodeLabels = map[string]string{"a": "c d"} }), []string{"--node-labels a=c d: the value"}},
		{"reserved label", with(func(o *Options) { o.NodeLabels = map[string]string{RackLabel: "r"} }), []string{"fluence up sets " + RackLabel}},
		{"levels", with(func(o *Options) { o.Levels = []Level{{"block", 2}, {"rack", 4}} }), nil},
		{"levels and racks", with(func(o *Options) { o.Racks, o.Levels = 2, []Level{{"block", 2}} }), []string{"--racks 2 and --levels: give one"}},
		{"level twice", with(func(o *Options) { o.Levels = []Level{{"rack", 2}, {"rack", 2}} }), []string{"--levels rack=2: level rack is listed twice"}},
		{"level too many domains", with(func(o *Options) { o.Levels = []Level{{"rack", 5}} }), []string{"--levels rack=5: want 1 to 4"}},
		{"level no domains", with(func(o *Options) { o.Levels = []Level{{"rack", 0}} }), []string{"--levels rack=0"}},
		{"level not a label", with(func(o *Options) { o.Levels = []Level{{"my rack", 2}} }), []string{"--levels my rack=2: fluence.flux-framework.org/my rack is not a label key"}},
		{"level label set by hand", with(func(o *Options) {
			o.Levels = []Level{{"block", 2}}
			o.NodeLabels = map[string]string{"fluence.flux-framework.org/block": "b"}
		}), []string{"fluence up sets fluence.flux-framework.org/block"}},
		{"unknown gate", with(func(o *Options) { o.FeatureGates = map[string]bool{"NoSuchGate": true} }), []string{"--feature-gates NoSuchGate=true: not a feature gate"}},
		{"existing kubeconfig", with(func(o *Options) { o.Kubeconfig = existing }), []string{"--kubeconfig " + existing + ": the file exists"}},
		{"kubeconfig in no directory", with(func(o *Options) { o.Kubeconfig = filepath.Join(dir, "none", "kc") }), []string{"no directory"}},
		{"non-empty dir", with(func(o *Options) { o.Dir = dir }), []string{"--dir " + dir + ": not empty"}},
		{"dir is a file", with(func(o *Options) { o.Dir = existing }), []string{"not a directory"}},
		{"all problems at once", with(func(o *Options) { o.Nodes, o.CPU = -1, "x" }), []string{"--nodes -1", `--cpu "x"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted %+v", tc.o)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestNodeSpecs(t *testing.T) {
	o := Options{Nodes: 5, CPU: "3", Memory: "8Gi", GPUNodes: 2, GPUs: 4, Racks: 2, NodeLabels: map[string]string{"pool": "a"}}
	node := func(i, gpus int, rack string) localcluster.NodeSpec {
		labels := map[string]string{"pool": "a", RackLabel: rack}
		if gpus > 0 {
			labels[GPULabel] = "true"
		}
		return localcluster.NodeSpec{Name: "node-" + string(rune('0'+i)), CPU: "3", Memory: "8Gi", GPUs: gpus, Labels: labels}
	}
	want := []localcluster.NodeSpec{node(0, 0, "rack-0"), node(1, 0, "rack-0"), node(2, 0, "rack-0"), node(3, 4, "rack-1"), node(4, 4, "rack-1")}
	if diff := cmp.Diff(want, o.NodeSpecs()); diff != "" {
		t.Errorf("NodeSpecs (-want +got):\n%s", diff)
	}
	// Without GPUs, --gpu-nodes changes nothing; without racks, no rack label.
	plain := Options{Nodes: 2, CPU: "1", Memory: "1Gi", GPUNodes: 1}
	for _, n := range plain.NodeSpecs() {
		if n.GPUs != 0 || len(n.Labels) != 0 {
			t.Errorf("%+v: GPUs or labels without --gpus or --racks", n)
		}
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		path, dir string
		want      bool
	}{
		{"/tmp/up/kubeconfig", "/tmp/up", true},
		{"/tmp/up/a/b", "/tmp/up", true},
		{"/tmp/upper/kubeconfig", "/tmp/up", false},
		{"/tmp/kubeconfig", "/tmp/up", false},
		{"/tmp/up/../kc", "/tmp/up", false},
		{"/tmp/up/..kc", "/tmp/up", true},
	} {
		if got := within(tc.path, tc.dir); got != tc.want {
			t.Errorf("within(%q, %q) = %v, want %v", tc.path, tc.dir, got, tc.want)
		}
	}
}

func TestLevels(t *testing.T) {
	got, err := ParseLevels([]string{"block=2", "rack=4"})
	if err != nil || !slices.Equal(got, []Level{{"block", 2}, {"rack", 4}}) {
		t.Fatalf("ParseLevels: %v, %v", got, err)
	}
	for _, bad := range []string{"rack", "=2", "rack=two"} {
		if _, err := ParseLevels([]string{bad}); err == nil || !strings.Contains(err.Error(), "--levels "+bad) {
			t.Errorf("ParseLevels(%q): error %v", bad, err)
		}
	}
	// Contiguous blocks per level: 5 nodes over 2 blocks and 3 racks.
	o := Options{Nodes: 5, CPU: "1", Memory: "1Gi", Levels: got[:1]}
	o.Levels = append(o.Levels, Level{"rack", 3})
	var blocks, racks []string
	for _, n := range o.NodeSpecs() {
		blocks = append(blocks, n.Labels["fluence.flux-framework.org/block"])
		racks = append(racks, n.Labels["fluence.flux-framework.org/rack"])
	}
	if want := []string{"block-0", "block-0", "block-0", "block-1", "block-1"}; !slices.Equal(blocks, want) {
		t.Errorf("blocks %v, want %v", blocks, want)
	}
	if want := []string{"rack-0", "rack-0", "rack-1", "rack-1", "rack-2"}; !slices.Equal(racks, want) {
		t.Errorf("racks %v, want %v", racks, want)
	}
}

// With --dra the GPU nodes list no nvidia.com/gpu: their GPUs are
// devices of a ResourceSlice each, in the node's rack as their clique,
// and the class serves nvidia.com/gpu.
func TestDRAObjects(t *testing.T) {
	o := Defaults()
	o.Nodes, o.GPUNodes, o.GPUs, o.Racks, o.DRA = 4, 2, 4, 2, true
	class, slices := o.DRAObjects()
	if class.Name != DRADriver || class.Spec.ExtendedResourceName == nil || *class.Spec.ExtendedResourceName != string(GPUResource) {
		t.Errorf("class %s serves %v; want %s serving %s", class.Name, class.Spec.ExtendedResourceName, DRADriver, GPUResource)
	}
	if len(slices) != 2 || *slices[0].Spec.NodeName != "node-2" || *slices[1].Spec.NodeName != "node-3" {
		t.Fatalf("%d slices; want one for each of node-2 and node-3", len(slices))
	}
	for _, s := range slices {
		if len(s.Spec.Devices) != 4 || s.Spec.Driver != DRADriver || s.Spec.Pool.Name != *s.Spec.NodeName {
			t.Errorf("slice %s: %d devices of %s in pool %s", s.Name, len(s.Spec.Devices), s.Spec.Driver, s.Spec.Pool.Name)
		}
		if c := s.Spec.Devices[0].Attributes["clique"].StringValue; c == nil || *c != "rack-1" {
			t.Errorf("slice %s: clique %v; want the nodes' rack, rack-1", s.Name, c)
		}
	}
	for _, n := range o.NodeSpecs() {
		if n.GPUs != 0 {
			t.Errorf("node %s lists %d nvidia.com/gpu; with --dra its GPUs are devices", n.Name, n.GPUs)
		}
	}
	o.DRA = false
	if _, slices := o.DRAObjects(); len(slices) != 0 {
		t.Errorf("without --dra, %d slices", len(slices))
	}
}
