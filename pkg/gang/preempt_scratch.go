package gang

// preemptScratch holds the buffers a preemption search fills and drops:
// reused, not allocated per try. With ten thousand lone pods running, a
// try's victim list and per-node candidates were about 1.6 MB, and live
// (in a scheduler process whose heap is large and mostly idle) a third
// of a try's time went to the runtime handing such large blocks back
// from the operating system. A buffer is valid until the next try
// refills it; the core runs one try at a time.
type preemptScratch struct {
	victims []victim
	base    []int64
	// units and unitAt are podUnits': the single-mode pods on each node,
	// and one allocation's units by node.
	units  []podUnit
	unitAt map[string]int
	// victimNodes and unitNodes are nodeRoom's, one per candidate type.
	victimNodes nodeScratch[victim]
	unitNodes   nodeScratch[podUnit]
}

// nodeScratch is nodeRoom's: node indexes by name, the nodes with
// candidates, their counts, the one array their candidates are cut
// from, and the nodes kept for the search.
type nodeScratch[T priced] struct {
	at     map[string]int32
	nodes  []nodeCands[T]
	counts []int
	all    []onNode[T]
	kept   []*nodeCands[T]
}

// reset empties the buffers for a search over up to nodes nodes.
func (sc *nodeScratch[T]) reset(nodes int) {
	if sc.at == nil {
		sc.at = make(map[string]int32, nodes)
	}
	clear(sc.at)
	// Entries past the lengths would keep groups alive: cleared.
	clear(sc.nodes[:cap(sc.nodes)])
	clear(sc.all[:cap(sc.all)])
	sc.nodes, sc.counts, sc.all, sc.kept = sc.nodes[:0], sc.counts[:0], sc.all[:0], sc.kept[:0]
}

// cut is an array of total candidates, reused when it is large enough.
func (sc *nodeScratch[T]) cut(total int) []onNode[T] {
	if cap(sc.all) < total {
		sc.all = make([]onNode[T], 0, total)
	}
	return sc.all[:0]
}
