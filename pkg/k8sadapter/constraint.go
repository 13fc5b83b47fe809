package k8sadapter

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/fluence-sched/fluence/pkg/jobspec"
)

// NoNodeMatches is the error NodeConstraint returns when no node satisfies
// the pod's requirements. The group cannot be placed until the nodes
// change; Reasons says which requirement excluded how many nodes.
type NoNodeMatches struct {
	Pod     string   // namespace/name
	Reasons []string // e.g. "arch=arm64: 0 of 8 nodes"
}

func (e *NoNodeMatches) Error() string {
	return fmt.Sprintf("pod %s: no node satisfies its requirements: %s", e.Pod, strings.Join(e.Reasons, "; "))
}

// check is one requirement evaluated node by node, for the reasons.
type check struct {
	desc  string
	match func(*corev1.Node) (bool, error)
}

// NodeConstraint turns the pod's nodeSelector, its required node affinity
// (requiredDuringSchedulingIgnoredDuringExecution) and the RequiresKey
// annotation into one constraint: a hostlist of the given nodes that
// satisfy all of them. RFC 31 has no version comparison and no Gt/Lt, so
// the requirements are evaluated here, against the nodes' labels (and
// metadata.name for affinity matchFields), with kube-scheduler's semantics
// for the selector and affinity.
//
// It returns nil, nil when the pod has no requirement. When no node
// matches it returns the constraint (which then matches nothing) together
// with a *NoNodeMatches. A malformed annotation or affinity is an error
// naming the pod.
func NodeConstraint(pod *corev1.Pod, nodes []*corev1.Node) (*jobspec.Constraint, error) {
	if pod == nil {
		return nil, fmt.Errorf("k8sadapter: NodeConstraint of a nil pod")
	}
	for i, n := range nodes {
		if n == nil {
			return nil, fmt.Errorf("k8sadapter: node %d is nil", i)
		}
	}
	podName := pod.Namespace + "/" + pod.Name
	var reqs []requirement
	if s, ok := pod.Annotations[RequiresKey]; ok && strings.TrimSpace(s) != "" {
		var err error
		if reqs, err = parseRequires(s); err != nil {
			return nil, fmt.Errorf("pod %s: annotation %s: %v", podName, RequiresKey, err)
		}
	}
	aff := pod.Spec.Affinity
	hasAffinity := aff != nil && aff.NodeAffinity != nil && aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil
	if len(pod.Spec.NodeSelector) == 0 && !hasAffinity && len(reqs) == 0 {
		return nil, nil
	}

	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	var names []string
	for _, n := range nodes {
		ok, err := required.Match(n)
		if err != nil {
			return nil, fmt.Errorf("pod %s: node affinity: %v", podName, err)
		}
		for _, r := range reqs {
			ok = ok && r.match(n.Labels)
		}
		if ok {
			names = append(names, n.Name)
		}
	}
	slices.Sort(names)
	c := jobspec.Hosts(names...)
	if len(names) > 0 {
		return c, nil
	}

	checks, err := podChecks(pod, reqs)
	if err != nil {
		return nil, fmt.Errorf("pod %s: node affinity: %v", podName, err)
	}
	e := &NoNodeMatches{Pod: podName}
	for _, ch := range checks {
		k := 0
		for _, n := range nodes {
			ok, err := ch.match(n)
			if err != nil {
				return nil, fmt.Errorf("pod %s: node affinity: %v", podName, err)
			}
			if ok {
				k++
			}
		}
		if k < len(nodes) || len(nodes) == 0 {
			e.Reasons = append(e.Reasons, fmt.Sprintf("%s: %d of %d nodes", ch.desc, k, len(nodes)))
		}
	}
	if len(e.Reasons) == 0 {
		e.Reasons = []string{fmt.Sprintf("each requirement is met by some node, but none meets all: 0 of %d nodes", len(nodes))}
	}
	return c, e
}

// podChecks splits the requirements into separately counted checks:
// each nodeSelector pair, each expression of a single affinity term (or
// the whole affinity when it has several terms, which are ORed), and each
// requires clause.
func podChecks(pod *corev1.Pod, reqs []requirement) ([]check, error) {
	var checks []check
	for _, k := range slices.Sorted(maps.Keys(pod.Spec.NodeSelector)) {
		v := pod.Spec.NodeSelector[k]
		checks = append(checks, check{
			desc:  fmt.Sprintf("nodeSelector %s=%s", k, v),
			match: func(n *corev1.Node) (bool, error) { w, ok := n.Labels[k]; return ok && w == v, nil },
		})
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) == 1 {
			t := terms[0]
			for _, e := range t.MatchExpressions {
				ch, err := selectorCheck("node affinity "+describeExpr(e), corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{e}})
				if err != nil {
					return nil, err
				}
				checks = append(checks, ch)
			}
			for _, e := range t.MatchFields {
				ch, err := selectorCheck("node affinity field "+describeExpr(e), corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{e}})
				if err != nil {
					return nil, err
				}
				checks = append(checks, ch)
			}
		} else {
			ns, err := nodeaffinity.NewNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
			if err != nil {
				return nil, err
			}
			checks = append(checks, check{
				desc:  fmt.Sprintf("node affinity (%d terms)", len(terms)),
				match: func(n *corev1.Node) (bool, error) { return ns.Match(n), nil },
			})
		}
	}
	for _, r := range reqs {
		checks = append(checks, check{
			desc:  r.String(),
			match: func(n *corev1.Node) (bool, error) { return r.match(n.Labels), nil },
		})
	}
	return checks, nil
}

func selectorCheck(desc string, term corev1.NodeSelectorTerm) (check, error) {
	ns, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}})
	if err != nil {
		return check{}, err
	}
	return check{desc: desc, match: func(n *corev1.Node) (bool, error) { return ns.Match(n), nil }}, nil
}

func describeExpr(e corev1.NodeSelectorRequirement) string {
	switch e.Operator {
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		return fmt.Sprintf("%s %s", e.Key, e.Operator)
	}
	return fmt.Sprintf("%s %s [%s]", e.Key, e.Operator, strings.Join(e.Values, ","))
}
