package k8sadapter

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/fluence-sched/fluence/pkg/jobspec"
)

// slotSummary renders each top-level slot as "label xN: core=C memory=M gpu=G".
func slotSummary(js *jobspec.Jobspec) []string {
	var out []string
	for _, r := range js.Resources {
		s := fmt.Sprintf("%s x%d:", r.Label, r.Count.Min)
		for _, c := range r.With {
			s += fmt.Sprintf(" %s=%d", c.Type, c.Count.Min)
		}
		out = append(out, s)
	}
	return out
}

func TestGroupJobspec(t *testing.T) {
	lammps := func(name string) *corev1.Pod { return makePod(name).req("cpu", "2", "memory", "1Gi").obj() }
	tests := []struct {
		name   string
		pods   []*corev1.Pod
		opts   GraphOptions
		want   []string
		shapes []ShapeSlots
	}{
		{
			name:   "homogeneous",
			pods:   []*corev1.Pod{lammps("a"), lammps("b"), lammps("c")},
			want:   []string{"shape0 x3: core=2 memory=1024"},
			shapes: []ShapeSlots{{Label: "shape0", Pods: []int{0, 1, 2}}},
		},
		{
			name: "heterogeneous, first-appearance order, rounding merges shapes",
			pods: []*corev1.Pod{
				makePod("launcher").req("cpu", "500m", "memory", "100Mi").obj(),
				lammps("w0"),
				makePod("w1").req("cpu", "1500m", "memory", "1048575Ki").obj(), // rounds up to w0's shape
				makePod("gpu").req("cpu", "1", "nvidia.com/gpu", "2", "amd.com/gpu", "1").obj(),
				makePod("besteffort").obj(),
				lammps("w2"),
			},
			opts: GraphOptions{ExtraGPUResources: []string{"amd.com/gpu"}},
			want: []string{
				"shape0 x1: core=1 memory=100",
				"shape1 x3: core=2 memory=1024",
				"shape2 x1: core=1 gpu=3",
				"shape3 x1: core=1",
			},
			shapes: []ShapeSlots{{Label: "shape0", Pods: []int{0}}, {Label: "shape1", Pods: []int{1, 2, 5}}, {Label: "shape2", Pods: []int{3}}, {Label: "shape3", Pods: []int{4}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js, shapes, err := GroupJobspec(tt.pods, 600, jobspec.Hosts("n1", "n2"), nil, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := jobspec.Validate(js); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := slotSummary(js); !slices.Equal(got, tt.want) {
				t.Errorf("slots:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if !slices.EqualFunc(shapes, tt.shapes, func(a, b ShapeSlots) bool { return a.Label == b.Label && slices.Equal(a.Pods, b.Pods) }) {
				t.Errorf("shapes = %v, want %v", shapes, tt.shapes)
			}
			if js.Duration != 600 || js.Constraint == nil || js.Constraint.Op != "hostlist" {
				t.Errorf("duration %d, constraint %v", js.Duration, js.Constraint)
			}
			// The encoded form parses back to the same slots.
			data, err := jobspec.Encode(js)
			if err != nil {
				t.Fatal(err)
			}
			back, err := jobspec.Parse(data)
			if err != nil {
				t.Fatalf("Parse(Encode): %v\n%s", err, data)
			}
			if got := slotSummary(back); !slices.Equal(got, tt.want) {
				t.Errorf("round trip slots = %v", got)
			}
		})
	}
}

func TestGroupJobspecUnlimitedNoConstraint(t *testing.T) {
	js, _, err := GroupJobspec([]*corev1.Pod{makePod("p").req("cpu", "1").obj()}, 0, nil, nil, GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if js.Duration != 0 || js.Constraint != nil {
		t.Errorf("duration %d constraint %v", js.Duration, js.Constraint)
	}
}

func TestGroupJobspecErrors(t *testing.T) {
	tests := []struct {
		name string
		pods []*corev1.Pod
		dur  int64
		want string
	}{
		{"no pods", nil, 0, "at least one pod"},
		{"nil pod", []*corev1.Pod{nil}, 0, "pod 0 of the group is nil"},
		{"negative duration", []*corev1.Pod{makePod("p").obj()}, -1, "negative duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := GroupJobspec(tt.pods, tt.dur, nil, nil, GraphOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// Pods of one shape that ask for different nodes get different slots, each
// with its own requires; pods asking for the same nodes share a slot.
func TestGroupJobspecPerPodRequires(t *testing.T) {
	pod := func(name string) *corev1.Pod { return makePod(name).req("cpu", "1").obj() }
	cpuPool, gpuPool := jobspec.Properties("pool=cpu"), jobspec.Properties("pool=gpu")
	pods := []*corev1.Pod{pod("launcher"), pod("w0"), pod("w1"), pod("any")}
	js, shapes, err := GroupJobspec(pods, 60, nil, []*jobspec.Constraint{cpuPool, gpuPool, jobspec.Properties("pool=gpu"), nil}, GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []ShapeSlots{{Label: "shape0", Pods: []int{0}}, {Label: "shape1", Pods: []int{1, 2}}, {Label: "shape2", Pods: []int{3}}}
	if !slices.EqualFunc(shapes, want, func(a, b ShapeSlots) bool { return a.Label == b.Label && slices.Equal(a.Pods, b.Pods) }) {
		t.Fatalf("shapes = %v, want %v", shapes, want)
	}
	for label, req := range map[string]*jobspec.Constraint{"shape0": cpuPool, "shape1": gpuPool, "shape2": nil} {
		if got := js.SlotByLabel(label).Requires; !got.Equal(req) && !(got == nil && req == nil) {
			t.Errorf("%s requires %v, want %v", label, got, req)
		}
	}
	if js.Constraint != nil {
		t.Errorf("job constraint %v, want none", js.Constraint)
	}
	if _, _, err := GroupJobspec(pods, 60, nil, []*jobspec.Constraint{cpuPool}, GraphOptions{}); err == nil {
		t.Error("one requires for four pods was accepted")
	}
}
