package sim

// Binding is one pod's stay on a node: bound at Bound, its resources
// given back at Freed (its release, or the end of its eviction's grace
// period), -1 while it still held them when the run ended. An evicted
// pod's replacement is a new stay.
type Binding struct {
	Group, Pod, Node int
	// GPU is what the pod requested: the GPUs (devices or a count) it
	// held on the node.
	GPU          int64
	Bound, Freed float64
}

// openBinding records that pod of g was bound to node now.
func (e *Env) openBinding(g *Group, pod, node int, gpu int64) {
	if e.open == nil {
		e.open = map[[2]int]int{}
	}
	e.open[[2]int{g.ID, pod}] = len(e.bindings)
	e.bindings = append(e.bindings, Binding{Group: g.ID, Pod: pod, Node: node, GPU: gpu, Bound: e.now, Freed: -1})
}

// closeBinding records that pod of g gave its node back now.
func (e *Env) closeBinding(g *Group, pod int) {
	k := [2]int{g.ID, pod}
	if i, ok := e.open[k]; ok {
		e.bindings[i].Freed = e.now
		delete(e.open, k)
	}
}
