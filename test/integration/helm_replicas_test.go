package integration

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// checkChartReplicas: one replica renders neither a PodDisruptionBudget
// nor anti-affinity; more than one renders both (soft by default, hard
// or none on request), and an affinity of the user's own replaces the
// anti-affinity.
func checkChartReplicas(t *testing.T, helm string) {
	for _, tc := range []struct {
		name    string
		set     []string
		pdb     bool
		anti    string // the anti-affinity rule rendered, "" for none
		ownRule bool   // the user's own affinity is rendered as given
	}{
		{name: "one replica", set: nil},
		{name: "two replicas", set: []string{"replicas=2"}, pdb: true, anti: "preferredDuringSchedulingIgnoredDuringExecution"},
		{name: "hard", set: []string{"replicas=3", "antiAffinity=hard"}, pdb: true, anti: "requiredDuringSchedulingIgnoredDuringExecution"},
		{name: "none, no budget", set: []string{"replicas=2", "antiAffinity=none", "podDisruptionBudget.enabled=false"}},
		{name: "own affinity", set: []string{"replicas=2", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool",
			"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists"}, pdb: true, ownRule: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			objs := renderChart(t, helm, args...)
			var pdb *unstructured.Unstructured
			for _, o := range objs {
				if o.GetKind() == "PodDisruptionBudget" {
					pdb = o
				}
			}
			if (pdb != nil) != tc.pdb {
				t.Errorf("PodDisruptionBudget rendered: %v, want %v", pdb != nil, tc.pdb)
			}
			dep := findObject(t, objs, "Deployment", releaseName)
			selector, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "selector", "matchLabels")
			if pdb != nil {
				if got, _, _ := unstructured.NestedStringMap(pdb.Object, "spec", "selector", "matchLabels"); !equalMaps(got, selector) {
					t.Errorf("the budget selects %v, the Deployment's pods are %v", got, selector)
				}
				if n, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "maxUnavailable"); fmt.Sprint(n) != "1" {
					t.Errorf("maxUnavailable %v, want 1", n)
				}
			}
			anti, _, _ := unstructured.NestedMap(dep.Object, "spec", "template", "spec", "affinity", "podAntiAffinity")
			switch {
			case tc.anti == "" && anti != nil:
				t.Errorf("anti-affinity rendered: %v", anti)
			case tc.anti != "":
				rules, _, _ := unstructured.NestedSlice(anti, tc.anti)
				if len(rules) != 1 {
					t.Fatalf("podAntiAffinity %v: want one %s rule", anti, tc.anti)
				}
				term, _ := rules[0].(map[string]any)
				if pat, ok := term["podAffinityTerm"].(map[string]any); ok {
					term = pat
				}
				labels, _, _ := unstructured.NestedStringMap(term, "labelSelector", "matchLabels")
				if term["topologyKey"] != "kubernetes.io/hostname" || !equalMaps(labels, selector) {
					t.Errorf("anti-affinity term %v: want topologyKey kubernetes.io/hostname over the pods %v", term, selector)
				}
			}
			if _, own, _ := unstructured.NestedMap(dep.Object, "spec", "template", "spec", "affinity", "nodeAffinity"); own != tc.ownRule {
				t.Errorf("the user's nodeAffinity rendered: %v, want %v", own, tc.ownRule)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
