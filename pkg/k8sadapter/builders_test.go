package k8sadapter

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeB builds a ready, schedulable Node.
type nodeB struct{ n *corev1.Node }

func makeNode(name string) *nodeB {
	return &nodeB{n: &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}}
}

func (b *nodeB) res(name corev1.ResourceName, q string) *nodeB {
	b.n.Status.Allocatable[name] = resource.MustParse(q)
	return b
}
func (b *nodeB) cpu(q string) *nodeB { return b.res(corev1.ResourceCPU, q) }
func (b *nodeB) mem(q string) *nodeB { return b.res(corev1.ResourceMemory, q) }
func (b *nodeB) gpu(n int) *nodeB {
	return b.res(DefaultGPUResource, resource.NewQuantity(int64(n), resource.DecimalSI).String())
}
func (b *nodeB) label(k, v string) *nodeB {
	if b.n.Labels == nil {
		b.n.Labels = map[string]string{}
	}
	b.n.Labels[k] = v
	return b
}
func (b *nodeB) cordoned() *nodeB { b.n.Spec.Unschedulable = true; return b }
func (b *nodeB) notReady() *nodeB {
	b.n.Status.Conditions[0].Status = corev1.ConditionFalse
	return b
}
func (b *nodeB) obj() *corev1.Node { return b.n }

// podB builds a Pod with one container by default.
type podB struct{ p *corev1.Pod }

func makePod(name string) *podB {
	return &podB{p: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
	}}
}

func reqs(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// req sets the requests of the first container ("cpu", "2", "memory", "1Gi").
func (b *podB) req(kv ...string) *podB {
	b.p.Spec.Containers[0].Resources.Requests = reqs(kv...)
	return b
}
func (b *podB) container(kv ...string) *podB {
	b.p.Spec.Containers = append(b.p.Spec.Containers, corev1.Container{Name: "c" + string(rune('0'+len(b.p.Spec.Containers))), Resources: corev1.ResourceRequirements{Requests: reqs(kv...)}})
	return b
}
func (b *podB) initContainer(sidecar bool, kv ...string) *podB {
	c := corev1.Container{Name: "init" + string(rune('0'+len(b.p.Spec.InitContainers))), Resources: corev1.ResourceRequirements{Requests: reqs(kv...)}}
	if sidecar {
		always := corev1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	b.p.Spec.InitContainers = append(b.p.Spec.InitContainers, c)
	return b
}
func (b *podB) overhead(kv ...string) *podB { b.p.Spec.Overhead = reqs(kv...); return b }
func (b *podB) label(k, v string) *podB {
	if b.p.Labels == nil {
		b.p.Labels = map[string]string{}
	}
	b.p.Labels[k] = v
	return b
}
func (b *podB) annotate(k, v string) *podB {
	if b.p.Annotations == nil {
		b.p.Annotations = map[string]string{}
	}
	b.p.Annotations[k] = v
	return b
}
func (b *podB) selector(k, v string) *podB {
	if b.p.Spec.NodeSelector == nil {
		b.p.Spec.NodeSelector = map[string]string{}
	}
	b.p.Spec.NodeSelector[k] = v
	return b
}

// affinity adds one required node selector term with the expressions.
func (b *podB) affinity(exprs ...corev1.NodeSelectorRequirement) *podB {
	if b.p.Spec.Affinity == nil {
		b.p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
	}
	ns := b.p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: exprs})
	return b
}
func (b *podB) deadline(s int64) *podB { b.p.Spec.ActiveDeadlineSeconds = &s; return b }
func (b *podB) obj() *corev1.Pod       { return b.p }

func expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func nodes(bs ...*nodeB) []*corev1.Node {
	out := make([]*corev1.Node, len(bs))
	for i, b := range bs {
		out[i] = b.obj()
	}
	return out
}
