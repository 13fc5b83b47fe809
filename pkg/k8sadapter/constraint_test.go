package k8sadapter

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// pool is 8 nodes: n0..n3 amd64 with go 1.9, 1.20, 1.21, 1.21.3;
// n4..n7 also amd64, n6 and n7 with the gpu label, n7 without go.
func pool() []*corev1.Node {
	gos := []string{"1.9", "1.20", "1.21", "1.21.3", "v2.0", "1.20.0", "bad", ""}
	var out []*corev1.Node
	for i, v := range gos {
		b := makeNode("n"+itoa(int64(i))).cpu("4").label("arch", "amd64").label("disk", "ssd")
		if v != "" {
			b.label("go", v)
		}
		if i >= 6 {
			b.label("gpu", "a100").label("cores", itoa(int64(i*8)))
		}
		out = append(out, b.obj())
	}
	return out
}

// coreNodes translates nodes as the plugin does.
func coreNodes(ns []*corev1.Node) []*gang.Node {
	out := make([]*gang.Node, len(ns))
	for i, n := range ns {
		cn := GraphOptions{}.CoreNode(n)
		out[i] = &cn
	}
	return out
}

// hostsOf returns the nodes the pod's filter admits; nil when it admits
// them all.
func hostsOf(t *testing.T, pod *corev1.Pod, ns []*corev1.Node) []string {
	t.Helper()
	f, err := NewPodFilter(pod)
	if err != nil {
		t.Fatalf("NewPodFilter: %v", err)
	}
	var names []string
	for _, n := range coreNodes(ns) {
		if f.Admits(n) {
			names = append(names, n.Name)
		}
	}
	if len(names) == len(ns) {
		return nil
	}
	return names
}

func TestPodFilter(t *testing.T) {
	tests := []struct {
		name string
		pod  *podB
		want []string // nil: no constraint
	}{
		{"no requirement", makePod("p"), nil},
		{"empty requires annotation", makePod("p").annotate(RequiresKey, " "), nil},
		{"nodeSelector", makePod("p").selector("gpu", "a100"), []string{"n6", "n7"}},
		{"nodeSelector, two keys", makePod("p").selector("gpu", "a100").selector("go", "bad"), []string{"n6"}},
		{"affinity In", makePod("p").affinity(expr("go", corev1.NodeSelectorOpIn, "1.9", "1.21")), []string{"n0", "n2"}},
		{"affinity NotIn (absent label matches)", makePod("p").affinity(expr("go", corev1.NodeSelectorOpNotIn, "1.9", "1.21", "bad")),
			[]string{"n1", "n3", "n4", "n5", "n7"}},
		{"affinity Exists", makePod("p").affinity(expr("gpu", corev1.NodeSelectorOpExists)), []string{"n6", "n7"}},
		{"affinity DoesNotExist", makePod("p").affinity(expr("go", corev1.NodeSelectorOpDoesNotExist)), []string{"n7"}},
		{"affinity Gt", makePod("p").affinity(expr("cores", corev1.NodeSelectorOpGt, "50")), []string{"n7"}},
		{"affinity terms are ORed", makePod("p").affinity(expr("go", corev1.NodeSelectorOpIn, "1.9")).affinity(expr("gpu", corev1.NodeSelectorOpExists)),
			[]string{"n0", "n6", "n7"}},
		{"affinity expressions are ANDed", makePod("p").affinity(expr("gpu", corev1.NodeSelectorOpExists), expr("go", corev1.NodeSelectorOpExists)),
			[]string{"n6"}},
		{"affinity matchFields metadata.name", makePod("p").affinity(), nil},
		{"requires =", makePod("p").annotate(RequiresKey, "go=1.21"), []string{"n2"}},
		{"requires !=", makePod("p").annotate(RequiresKey, "gpu!=a100"), []string{"n0", "n1", "n2", "n3", "n4", "n5"}},
		{"requires >= compares numerically", makePod("p").annotate(RequiresKey, "go>=1.20"), []string{"n1", "n2", "n3", "n4", "n5"}},
		{"requires >", makePod("p").annotate(RequiresKey, "go>1.20"), []string{"n2", "n3", "n4"}},
		{"requires <", makePod("p").annotate(RequiresKey, "go<1.20"), []string{"n0"}},
		{"requires <=, missing components are 0", makePod("p").annotate(RequiresKey, "go<=1.20"), []string{"n0", "n1", "n5"}},
		{"requires several clauses with spaces", makePod("p").annotate(RequiresKey, " arch=amd64 , go>=1.21, go<2 "), []string{"n2", "n3"}},
		{"all three combined", makePod("p").selector("disk", "ssd").affinity(expr("go", corev1.NodeSelectorOpNotIn, "1.21")).annotate(RequiresKey, "go>=1.20.5"),
			[]string{"n3", "n4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod.obj()
			if tt.name == "affinity matchFields metadata.name" {
				pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "n5")}}},
				}}}
				tt.want = []string{"n5"}
			}
			got := hostsOf(t, pod, pool())
			if !slices.Equal(got, tt.want) {
				t.Errorf("hosts = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPodFilterNoMatch(t *testing.T) {
	tests := []struct {
		name    string
		pod     *podB
		reasons []string
	}{
		{"arch", makePod("p").annotate(RequiresKey, "arch=arm64"), []string{"arch=arm64: 0 of 8 nodes"}},
		{"selector and requires, each reported",
			makePod("p").selector("gpu", "a100").annotate(RequiresKey, "arch=amd64,go>=3"),
			[]string{"nodeSelector gpu=a100: 2 of 8 nodes", "go>=3: 0 of 8 nodes"}},
		{"affinity expressions", makePod("p").affinity(expr("gpu", corev1.NodeSelectorOpIn, "h100"), expr("disk", corev1.NodeSelectorOpExists)),
			[]string{"node affinity gpu In [h100]: 0 of 8 nodes"}},
		{"several affinity terms", makePod("p").affinity(expr("gpu", corev1.NodeSelectorOpIn, "h100")).affinity(expr("go", corev1.NodeSelectorOpIn, "0.1")),
			[]string{"node affinity (2 terms): 0 of 8 nodes"}},
		{"only the combination fails", makePod("p").selector("gpu", "a100").annotate(RequiresKey, "go<1.20"),
			[]string{"nodeSelector gpu=a100: 2 of 8 nodes", "go<1.20: 1 of 8 nodes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewPodFilter(tt.pod.obj())
			if err != nil {
				t.Fatal(err)
			}
			if got := hostsOf(t, tt.pod.obj(), pool()); len(got) != 0 {
				t.Errorf("admitted %v, want none", got)
			}
			if got, want := f.Why(coreNodes(pool())), strings.Join(tt.reasons, "; "); got != want {
				t.Errorf("Why = %q, want %q", got, want)
			}
		})
	}
	// No nodes at all.
	f, err := NewPodFilter(makePod("p").selector("a", "b").obj())
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Why(nil); got != "nodeSelector a=b: 0 of 0 nodes" {
		t.Errorf("no nodes: %q", got)
	}
}

// Taints a pod does not tolerate (NoSchedule, NoExecute) exclude their
// nodes; the explanation names them.
func TestPodFilterTaints(t *testing.T) {
	nodes := pool()
	for _, n := range nodes[:6] {
		n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	}
	nodes[6].Spec.Taints = []corev1.Taint{{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}}
	if got := hostsOf(t, makePod("p").obj(), nodes); !slices.Equal(got, []string{"n6", "n7"}) {
		t.Errorf("untolerating pod admitted on %v, want n6 n7 (PreferNoSchedule does not exclude)", got)
	}
	tolerating := makePod("p").obj()
	tolerating.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	if got := hostsOf(t, tolerating, nodes); got != nil {
		t.Errorf("tolerating pod admitted on %v, want every node", got)
	}
	f, err := NewPodFilter(makePod("p").selector("disk", "ssd").obj())
	if err != nil {
		t.Fatal(err)
	}
	why := f.Why(coreNodes(nodes[:6]))
	if !strings.Contains(why, "untolerated taints on 6 of 6 nodes (n0 has dedicated=gpu:NoSchedule") {
		t.Errorf("Why = %q", why)
	}
}

func TestPodFilterErrors(t *testing.T) {
	tests := []struct {
		annotation string
		want       string
	}{
		{"arch", `clause "arch": no operator`},
		{"arch=arm64,,go>=1", `clause "": empty requirement`},
		{"=arm64", `clause "=arm64": missing label key`},
		{"go>=1.x", `clause "go>=1.x": "1.x" is not a version`},
		{"go>=", `clause "go>=": "" is not a version`},
		{"go=>1", `clause "go=>1": invalid label value ">1"`},
		{"bad key!=1", `clause "bad key!=1": invalid label key`},
		{"go!1", `clause "go!1": unknown operator at "!1"`},
	}
	for _, tt := range tests {
		t.Run(tt.annotation, func(t *testing.T) {
			_, err := NewPodFilter(makePod("p").annotate(RequiresKey, tt.annotation).obj())
			prefix := "pod default/p: annotation fluence.flux-framework.org/requires: "
			if err == nil || !strings.Contains(err.Error(), prefix+tt.want) {
				t.Errorf("err = %v, want %q", err, prefix+tt.want)
			}
		})
	}
	_, err := NewPodFilter(makePod("p").affinity(expr("cores", corev1.NodeSelectorOpGt, "many")).obj())
	if err == nil || !strings.Contains(err.Error(), "pod default/p: node affinity") {
		t.Errorf("bad Gt value: err = %v", err)
	}
}

func TestCompareVersions(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"1.21", "1.20", 1}, {"1.9", "1.20", -1}, {"1.20", "1.20.0", 0}, {"2", "1.99.99", 1}, {"1.020", "1.20", 0},
	}
	for _, tt := range tests {
		a, _ := parseVersion(tt.a)
		b, _ := parseVersion(tt.b)
		if got := compareVersions(a, b); got != tt.want {
			t.Errorf("compare(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
