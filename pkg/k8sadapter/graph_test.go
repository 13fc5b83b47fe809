package k8sadapter

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// paths lists every vertex path (pre-order) with its size when above 1 and
// "down" for down vertices.
func paths(g *resource.Graph) []string {
	var out []string
	for i := range int32(g.Len()) {
		p := g.Path(i)
		v := g.Vertex(i)
		if v.Size > 1 {
			p += " x" + itoa(v.Size)
		}
		if v.Status == resource.Down {
			p += " down"
		}
		out = append(out, p)
	}
	return out
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// coreGraph builds the gang core's graph of the nodes as the plugin
// translates them.
func coreGraph(t *testing.T, ns []*corev1.Node, opts GraphOptions) *resource.Graph {
	t.Helper()
	var cn []*gang.Node
	for _, n := range ns {
		c := opts.CoreNode(n)
		cn = append(cn, &c)
	}
	g, err := gang.BuildGraph(cn, opts.RackLabel)
	if len(opts.TopologyLevels) > 0 {
		g, err = gang.BuildGraphLevels(cn, opts.TopologyLevels)
	}
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestCoreGraph(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*corev1.Node
		opts  GraphOptions
		want  []string
	}{
		{
			name: "zones sorted, unlabeled nodes in default, cpu in millicores, memory in MiB, pod places",
			nodes: nodes(
				makeNode("b").cpu("2500m").mem("1536Mi").label(gang.ZoneLabel, "z1"),
				makeNode("a").cpu("1").mem("1Gi"),
				makeNode("c").cpu("1").mem("100Ki").label(gang.ZoneLabel, "z1"),
			),
			want: []string{
				"/cluster0",
				"/cluster0/default",
				"/cluster0/default/a",
				"/cluster0/default/a/cpu0 x1000",
				"/cluster0/default/a/memory0 x1024",
				"/cluster0/default/a/pods0 x110",
				"/cluster0/z1",
				"/cluster0/z1/b",
				"/cluster0/z1/b/cpu0 x2500",
				"/cluster0/z1/b/memory0 x1536",
				"/cluster0/z1/b/pods0 x110",
				"/cluster0/z1/c",
				"/cluster0/z1/c/cpu0 x1000",
				"/cluster0/z1/c/pods0 x110",
			},
		},
		{
			name: "no nodes: just the cluster",
			want: []string{"/cluster0"},
		},
		{
			name: "rack label, down nodes, extra gpu names",
			opts: GraphOptions{RackLabel: "rack", ExtraGPUResources: []string{"amd.com/gpu", "nvidia.com/gpu"}},
			nodes: nodes(
				makeNode("n2").cpu("1").gpu(1).res("amd.com/gpu", "1").label("rack", "r1").cordoned(),
				makeNode("n1").cpu("1").label("rack", "r1").notReady(),
				makeNode("n3").label(gang.ZoneLabel, "z").label("rack", "r0"),
				makeNode("n4").label(gang.ZoneLabel, "z"),
			),
			want: []string{
				"/cluster0",
				"/cluster0/default",
				"/cluster0/default/r1",
				"/cluster0/default/r1/n1 down",
				"/cluster0/default/r1/n1/cpu0 x1000",
				"/cluster0/default/r1/n1/pods0 x110",
				"/cluster0/default/r1/n2 down",
				"/cluster0/default/r1/n2/cpu0 x1000",
				"/cluster0/default/r1/n2/pods0 x110",
				"/cluster0/default/r1/n2/gpu0",
				"/cluster0/default/r1/n2/gpu1",
				"/cluster0/z",
				"/cluster0/z/default",
				"/cluster0/z/default/n4",
				"/cluster0/z/default/n4/pods0 x110",
				"/cluster0/z/r0",
				"/cluster0/z/r0/n3",
				"/cluster0/z/r0/n3/pods0 x110",
			},
		},
		{
			name: "topology levels: the zone only when listed, unlabelled nodes under _unknown",
			opts: GraphOptions{TopologyLevels: []string{"example.com/block", "example.com/rack"}},
			nodes: nodes(
				makeNode("n1").label(gang.ZoneLabel, "z").label("example.com/block", "b1").label("example.com/rack", "r1"),
				makeNode("n2").label("example.com/block", "b1"),
				makeNode("n3").label("example.com/rack", "r1"),
			),
			want: []string{
				"/cluster0",
				"/cluster0/block-b1",
				"/cluster0/block-b1/rack-r1",
				"/cluster0/block-b1/rack-r1/n1",
				"/cluster0/block-b1/rack-r1/n1/pods0 x110",
				"/cluster0/block-b1/rack-_unknown",
				"/cluster0/block-b1/rack-_unknown/n2",
				"/cluster0/block-b1/rack-_unknown/n2/pods0 x110",
				"/cluster0/block-_unknown",
				"/cluster0/block-_unknown/rack-r1",
				"/cluster0/block-_unknown/rack-r1/n3",
				"/cluster0/block-_unknown/rack-r1/n3/pods0 x110",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := paths(coreGraph(t, tt.nodes, tt.opts))
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("graph:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestCoreGraphDetails(t *testing.T) {
	ns := nodes(
		makeNode("n1").cpu("4").mem("16Gi").gpu(1).label("arch", "amd64").label(gang.ZoneLabel, "z"),
		makeNode("n0").cpu("2").mem("1Gi").cordoned(),
	)
	g := coreGraph(t, ns, GraphOptions{})
	n1 := g.ByName("n1")
	if len(n1) != 1 {
		t.Fatalf("ByName(n1) = %v", n1)
	}
	v := g.Vertex(n1[0])
	if v.Properties["arch"] != "amd64" || v.Properties[gang.ZoneLabel] != "z" || len(v.Properties) != 2 {
		t.Errorf("properties = %v", v.Properties)
	}
	if v.Rank != 1 {
		t.Errorf("rank of n1 = %d, want 1 (sorted by name)", v.Rank)
	}
	if g.NodesUp() != 1 {
		t.Errorf("NodesUp = %d, want 1", g.NodesUp())
	}
	mem := g.ByTypeName("memory")
	if len(mem) != 2 || g.Vertex(mem[1]).Size != 16384 || g.Vertex(mem[1]).Unit != "MiB" {
		t.Errorf("memory vertices wrong: %v", mem)
	}
	if cpu := g.ByTypeName("cpu"); len(cpu) != 2 || g.Vertex(cpu[1]).Size != 4000 || g.Vertex(cpu[1]).Unit != "m" {
		t.Errorf("cpu pools wrong: %v", cpu)
	}
	// The input is not reordered.
	if ns[0].Name != "n1" {
		t.Error("the graph builder reordered its input")
	}
	if _, err := gang.BuildGraph([]*gang.Node{{Name: "n"}, {Name: "n"}}, ""); err == nil || !strings.Contains(err.Error(), "node n is listed twice") {
		t.Errorf("duplicate node: err = %v", err)
	}
}

func TestPodRequests(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		opts GraphOptions
		want Requests
	}{
		{"empty", makePod("p").obj(), GraphOptions{}, Requests{}},
		{"two containers", makePod("p").req("cpu", "500m", "memory", "1Gi").container("cpu", "1", "memory", "1Gi").obj(), GraphOptions{},
			Requests{MilliCPU: 1500, MemoryBytes: 2 << 30}},
		{"init container larger than the app", makePod("p").req("cpu", "1").initContainer(false, "cpu", "3", "memory", "1Mi").obj(), GraphOptions{},
			Requests{MilliCPU: 3000, MemoryBytes: 1 << 20}},
		{"sidecar runs beside later init containers and the app", makePod("p").req("cpu", "1").initContainer(true, "cpu", "1").initContainer(false, "cpu", "1500m").obj(), GraphOptions{},
			Requests{MilliCPU: 2500}},
		{"sidecar beside the app", makePod("p").req("cpu", "2").initContainer(true, "cpu", "1").initContainer(false, "cpu", "1500m").obj(), GraphOptions{},
			Requests{MilliCPU: 3000}},
		{"overhead", makePod("p").req("cpu", "1", "memory", "1Gi").overhead("cpu", "250m", "memory", "64Mi").obj(), GraphOptions{},
			Requests{MilliCPU: 1250, MemoryBytes: 1<<30 + 64<<20}},
		{"gpus: default name only", makePod("p").req("nvidia.com/gpu", "2", "amd.com/gpu", "1").obj(), GraphOptions{},
			Requests{GPU: 2}},
		{"gpus: extra names", makePod("p").req("nvidia.com/gpu", "2", "amd.com/gpu", "1").obj(), GraphOptions{ExtraGPUResources: []string{"amd.com/gpu"}},
			Requests{GPU: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.opts.PodRequests(tt.pod); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if got := PodRequests(makePod("p").req("nvidia.com/gpu", "1").obj()); got.GPU != 1 {
		t.Errorf("PodRequests GPU = %d", got.GPU)
	}
}
