package k8sadapter

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// PodFilter is where a pod may run, as kube-scheduler's NodeAffinity and
// TaintToleration filters decide it, plus the fluence requires
// annotation: it is evaluated against each node's labels and taints when
// the gang core builds a request, so it follows the nodes as they change.
type PodFilter struct {
	pod         string
	affinity    nodeaffinity.RequiredNodeAffinity
	reqs        []requirement
	tolerations []corev1.Toleration
	checks      []check
	key         string
}

var _ gang.NodeFilter = (*PodFilter)(nil)

// NewPodFilter reads the pod's nodeSelector, required node affinity,
// requires annotation and tolerations. A malformed annotation or affinity
// is an error naming the pod.
func NewPodFilter(pod *corev1.Pod) (*PodFilter, error) {
	name := pod.Namespace + "/" + pod.Name
	f := &PodFilter{pod: name, affinity: nodeaffinity.GetRequiredNodeAffinity(pod), tolerations: pod.Spec.Tolerations}
	var rawReqs string
	if s, ok := pod.Annotations[RequiresKey]; ok && strings.TrimSpace(s) != "" {
		reqs, err := parseRequires(s)
		if err != nil {
			return nil, fmt.Errorf("pod %s: annotation %s: %v", name, RequiresKey, err)
		}
		f.reqs, rawReqs = reqs, s
	}
	checks, err := podChecks(pod, f.reqs)
	if err != nil {
		return nil, fmt.Errorf("pod %s: node affinity: %v", name, err)
	}
	// Validate the affinity once, against no labels, so a malformed term
	// is reported now rather than silently matching nothing.
	if _, err := f.affinity.Match(&corev1.Node{}); err != nil {
		return nil, fmt.Errorf("pod %s: node affinity: %v", name, err)
	}
	f.checks = checks
	var aff any
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		aff = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	key, err := json.Marshal(map[string]any{
		"selector": pod.Spec.NodeSelector, "affinity": aff, "requires": strings.TrimSpace(rawReqs), "tolerations": pod.Spec.Tolerations,
	})
	if err != nil {
		return nil, fmt.Errorf("pod %s: %v", name, err)
	}
	f.key = string(key)
	return f, nil
}

// Key is the canonical form of the pod's requirements.
func (f *PodFilter) Key() string { return f.key }

// Admits reports whether the pod may run on n.
func (f *PodFilter) Admits(n *gang.Node) bool {
	node := &corev1.Node{}
	node.Name, node.Labels = n.Name, n.Labels
	if ok, err := f.affinity.Match(node); err != nil || !ok {
		return false
	}
	for _, r := range f.reqs {
		if !r.match(n.Labels) {
			return false
		}
	}
	_, untolerated := f.untolerated(n)
	return !untolerated
}

func (f *PodFilter) untolerated(n *gang.Node) (corev1.Taint, bool) {
	if len(n.Taints) == 0 {
		return corev1.Taint{}, false
	}
	taints := make([]corev1.Taint, len(n.Taints))
	for i, t := range n.Taints {
		taints[i] = corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)}
	}
	return corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), taints, f.tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
}

// Why says, for a pod no node admits, which requirement excludes how many
// of the nodes.
func (f *PodFilter) Why(nodes []*gang.Node) string {
	var reasons []string
	for _, ch := range f.checks {
		k := 0
		for _, n := range nodes {
			node := &corev1.Node{}
			node.Name, node.Labels = n.Name, n.Labels
			if ok, err := ch.match(node); err == nil && ok {
				k++
			}
		}
		if k < len(nodes) || len(nodes) == 0 {
			reasons = append(reasons, fmt.Sprintf("%s: %d of %d nodes", ch.desc, k, len(nodes)))
		}
	}
	var tainted []string
	for _, n := range nodes {
		if t, bad := f.untolerated(n); bad && len(tainted) < 3 {
			tainted = append(tainted, n.Name+" has "+t.ToString())
		} else if bad {
			tainted = append(tainted, "")
		}
	}
	if len(tainted) > 0 {
		shown := slices.DeleteFunc(slices.Clone(tainted), func(s string) bool { return s == "" })
		reasons = append(reasons, fmt.Sprintf("untolerated taints on %d of %d nodes (%s)", len(tainted), len(nodes), strings.Join(shown, "; ")))
	}
	if len(reasons) == 0 {
		reasons = []string{fmt.Sprintf("each requirement is met by some node, but none meets all: 0 of %d nodes", len(nodes))}
	}
	return strings.Join(reasons, "; ")
}
