package gang

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// FuzzCore drives a core with a random sequence of events on a small
// cluster, decoded from the input: pods of a few labelled groups of any
// size (absurd ones too), with any requests, through the scheduling
// cycle's steps in and out of order, bound where they were placed or
// elsewhere, ending, deleted, nodes joining, changing and leaving, time
// passing. After every event it takes the effects and checks the core's
// invariants: no panic, no internal error, no violation.
func FuzzCore(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fz := newFuzzer(t, data)
		for step := 0; step < fuzzMaxSteps && fz.more(); step++ {
			fz.step()
		}
	})
}

// fuzzMaxSteps bounds one input's run: long inputs add nothing a shorter
// one cannot reach, and each step costs an invariant check.
const fuzzMaxSteps = 200

// fuzzSeeds: a group placed and bound whole, one refused by a node and
// placed again, one whose node goes away, and absurd sizes and requests.
var fuzzSeeds = [][]byte{
	// 3 nodes, easy; pods 0-2 of group 0 (size 3) seen, placed, reserved,
	// permitted, bound; then they end.
	{2, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 1, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1, 2, 2, 2, 3, 0, 3, 1, 3, 2, 4, 0, 4, 1, 4, 2, 12, 9, 8, 0, 8, 1, 8, 2},
	// 4 nodes, fcfs; a group turned away, a tick after the hold, a node gone.
	{3, 0, 1, 0, 3, 0, 3, 1, 0, 3, 1, 0, 1, 1, 2, 0, 6, 0, 12, 40, 1, 0, 1, 1, 11, 1, 12, 5, 1, 0, 1, 1},
	// absurd sizes: group 2 (MaxInt32) and 3 (2e9) with one pod each,
	// huge requests, foreign pods, a node reshaped.
	{5, 2, 6, 2, 7, 3, 0, 2, 0, 3, 1, 4, 1, 5, 14, 0, 7, 14, 1, 5, 10, 0, 6, 12, 3, 1, 4, 1, 5, 13, 2},
	// bound elsewhere, deleted, regrouped, gated.
	{2, 3, 0, 0, 0, 1, 1, 0, 1, 1, 1, 2, 3, 7, 0, 1, 9, 1, 16, 0, 2, 16, 2, 1, 1, 0, 12, 3, 15, 0},
}

// Choices the decoder picks from: ordinary values and the edges.
var (
	fuzzGroupSizes = []int32{1, 2, 3, 4, 5, 0, -1, math.MaxInt32, 2_000_000_000, math.MinInt32, 100_000}
	fuzzCPU        = []int64{0, 100, 500, 1000, 2000, 4000, 1 << 40, math.MaxInt64}
	fuzzMem        = []int64{0, 1 << 20, 1 << 30, 4 << 30, 1 << 50, math.MaxInt64}
	fuzzNodeCPU    = []int64{4000, 8000, 1000, 0, 1 << 50}
	fuzzNodeMem    = []int64{16 << 30, 4 << 30, 0, 1 << 60}
	fuzzNodePods   = []int64{0, 1, 2, 4, 110}
	fuzzPolicies   = []queue.Policy{queue.Easy, queue.FCFS, queue.Conservative, queue.Hybrid}
	// DRA devices of a node, and what a pod's claims ask (scriptDevices,
	// scriptRequests).
	fuzzDevices  = []string{"", "2xgpu:mem=80", "4xgpu:mem=40+2xgpu:mem=80", "1xnic"}
	fuzzRequests = []string{"", "1xgpu", "2xgpu:mem=80", "2xgpu:mem=80|1xgpu", "1xgpu+1xnic", "3xgpu"}
)

const (
	fuzzGroups = 4
	fuzzPods   = 16
	fuzzNodes  = 6
)

// fuzzPod is the test's view of one pod: what the cluster holds.
type fuzzPod struct {
	pod   Pod
	group int
	// born: seen by the core; gone: ended or deleted (never seen again).
	born, gone bool
	// placed is the node the last Place answered, reserved the node
	// Reserve succeeded on, allowed: Permit let it through.
	placed, reserved string
	allowed          bool
	// held: out of the scheduling queue (Hold said so) and not activated
	// since.
	held bool
}

type fuzzer struct {
	t     *testing.T
	data  []byte
	core  *Core
	now   int64
	nodes []Node
	up    []bool // the node is in the cluster
	ids   [fuzzGroups]GroupID
	pods  [fuzzPods]*fuzzPod
	// foreign pods made so far (their UIDs are never reused).
	foreign int
	trace   []string
	// plan: a graph plan taken at the last Tick, installed at the next
	// (BuildOutside).
	plan *GraphPlan
}

func newFuzzer(t *testing.T, data []byte) *fuzzer {
	fz := &fuzzer{t: t, data: data}
	n := 2 + int(fz.byte())%5
	pb := fz.byte()
	// The policy byte's top bit, unused by the policy: new nodes join
	// graphs built outside (plan at one Tick, install at the next, with
	// whatever happened between).
	cfg := Config{Queue: queue.Config{Policy: fuzzPolicies[int(pb)%len(fuzzPolicies)]}, RunID: "fuzz", DefaultDuration: 60, BuildOutside: pb&0x80 != 0}
	if b := fz.byte(); b%2 == 1 {
		cfg.RackLabel = "rack"
	} else if b&2 != 0 {
		// The same byte, so the seeds found before preemption still
		// read the same sequences.
		cfg.Preemption = &Preemption{After: int64(b>>2) % 4 * 20, MinRuntime: int64(b>>4) % 2 * 30, Timeout: 10}
	}
	core, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fz.core = core
	fz.nodes = make([]Node, fuzzNodes)
	fz.up = make([]bool, fuzzNodes)
	for i := range fuzzNodes {
		fz.nodes[i] = Node{Name: fmt.Sprintf("n%d", i), Labels: map[string]string{ZoneLabel: fmt.Sprintf("z%d", i%2), "rack": fmt.Sprintf("r%d", i%3)},
			Allocatable: Resources{MilliCPU: 8000, MemoryBytes: 16 << 30, GPU: int64(i % 2), Pods: 110}}
	}
	for i := range n {
		fz.up[i] = true
		fz.do(fmt.Sprintf("NodeSet %s", fz.nodes[i].Name), func() { core.NodeSet(fz.nodes[i], fz.now) })
	}
	for i := range fuzzGroups {
		size := fuzzGroupSizes[int(fz.byte())%len(fuzzGroupSizes)]
		id := NewGroupID("ns", fmt.Sprintf("g%d", i), 1, SourceLabel)
		id.Size = size // as a caller that bypasses NewGroupID would: 0 and negative too
		if i == 3 {
			id = NewGroupID("ns", "pg", 1, SourcePodGroup)
			id.Size = size
			// Its PodGroup asks for three nodes' CPUs in all: rejected
			// and judged again as nodes come and go (no byte read).
			id.MinResources = Resources{MilliCPU: 3 * 8000}
		}
		// One group's pods may be preempted one by one (no byte read: the
		// seeds found before keep their sequences).
		id.DisruptionSingle = cfg.Preemption != nil && i == 1
		fz.ids[i] = id
	}
	for i := range fuzzPods {
		fz.pods[i] = &fuzzPod{group: i % fuzzGroups}
	}
	return fz
}

func (fz *fuzzer) more() bool { return len(fz.data) > 0 }

// byte takes the next input byte; 0 once the input is spent.
func (fz *fuzzer) byte() byte {
	if len(fz.data) == 0 {
		return 0
	}
	b := fz.data[0]
	fz.data = fz.data[1:]
	return b
}

func (fz *fuzzer) pick(n int) int { return int(fz.byte()) % n }

// do runs one event, then takes the effects and checks the core.
func (fz *fuzzer) do(what string, event func()) {
	fz.trace = append(fz.trace, what)
	event()
	fx := fz.core.Ready()
	for _, e := range fx.Errors {
		fz.t.Fatalf("after %s: internal error: %v\nevents:\n%s", what, e, strings.Join(fz.trace, "\n"))
	}
	fz.effects(fx)
	if err := fz.core.CheckInvariants(); err != nil {
		fz.t.Fatalf("after %s: invariants violated:\n%v\nevents:\n%s", what, err, strings.Join(fz.trace, "\n"))
	}
	for _, p := range fz.pods {
		if p == nil || !p.held || p.gone {
			continue
		}
		if _, ok := fz.core.heldKey[p.pod.UID]; !ok {
			fz.t.Fatalf("after %s: pod %s was held out of the queue and forgotten, never activated\nevents:\n%s", what, p.pod.Name, strings.Join(fz.trace, "\n"))
		}
	}
	fz.core.Wakeup()
	if err := checkPublished(fz.core, fz.now); err != nil {
		fz.t.Fatalf("after %s: %v\nevents:\n%s", what, err, strings.Join(fz.trace, "\n"))
	}
}

// effects carries out what a caller must: a pod turned away at Permit is
// unreserved, a pod let through is free to bind.
func (fz *fuzzer) effects(fx Effects) {
	var again []*fuzzPod
	for _, r := range fx.Activate {
		if p := fz.byUID(r.UID); p != nil && p.held {
			p.held = false
			again = append(again, p)
		}
	}
	for _, p := range again {
		fz.hold(p) // activated: its PreEnqueue runs again
	}
	for _, r := range fx.Allow {
		if p := fz.byUID(r.UID); p != nil && p.reserved != "" {
			p.allowed = true
		}
	}
	for _, r := range fx.Reject {
		if p := fz.byUID(r.Pod.UID); p != nil && p.reserved != "" {
			node := p.reserved
			p.reserved, p.allowed = "", false
			fz.do("Unreserve (rejected) "+p.pod.Name, func() { fz.core.Unreserve(p.pod.UID, node, fz.now) })
		}
	}
}

func (fz *fuzzer) byUID(uid string) *fuzzPod {
	for _, p := range fz.pods {
		if p.born && p.pod.UID == uid {
			return p
		}
	}
	return nil
}

// node picks a node name, sometimes one not in the cluster.
func (fz *fuzzer) node() string { return fz.nodes[fz.pick(fuzzNodes)].Name }

// step decodes and runs one event.
func (fz *fuzzer) step() {
	c := fz.core
	op := fz.pick(17)
	p := fz.pods[fz.pick(fuzzPods)]
	uid := p.pod.UID
	switch op {
	case 0: // a pod is created (or, if it exists, seen again unchanged)
		if !p.born && !p.gone {
			fz.newPod(p)
			// The scheduling queue may see it before the core does.
			fz.hold(p)
		}
		if p.born && !p.gone {
			pod := p.pod
			fz.do("PodSeen "+pod.Name, func() { c.PodSeen(pod, fz.now) })
		}
	case 1: // its scheduling cycle
		if !p.born || p.gone || p.pod.NodeName != "" {
			return
		}
		id := fz.ids[p.group]
		if fz.byte()%8 == 0 { // the group's object now says another size
			id.Size = fuzzGroupSizes[fz.pick(len(fuzzGroupSizes))]
			if p.group != 3 {
				p.pod.Labeled.Size = id.Size
			}
		}
		pod := p.pod
		p.held = false
		fz.do("Place "+pod.Name, func() {
			v := c.Place(pod, id, fz.now)
			if v.Node != "" && p.reserved == "" {
				p.placed = v.Node
			}
		})
	case 2: // Reserve, on its node or another
		if !p.born || p.gone || p.pod.NodeName != "" {
			return
		}
		node := p.placed
		if node == "" || fz.byte()%4 == 0 {
			node = fz.node()
		}
		fz.do("Reserve "+p.pod.Name+" "+node, func() {
			if c.Reserve(uid, node) == nil {
				p.reserved = node
			}
		})
	case 3: // Permit
		if p.reserved == "" || p.gone {
			return
		}
		fz.do("Permit "+p.pod.Name, func() {
			if ok, err := c.Permit(uid); err == nil && ok {
				p.allowed = true
			}
		})
	case 4: // the binding succeeds (or, out of turn, for a pod not let through)
		if !p.born || p.gone || p.pod.NodeName != "" || (!p.allowed && fz.byte()%4 != 0) {
			return
		}
		node := p.reserved
		if node == "" {
			node = fz.node()
		}
		fz.do("Bound "+p.pod.Name, func() { c.Bound(uid) })
		fz.bind(p, node, c.Record(uid))
		if len(p.pod.Devices) > 0 && fz.byte()%2 == 0 {
			fz.allocate(p)
		}
	case 5: // Unreserve (the binding failed, Permit timed out)
		if !p.born || p.gone {
			return
		}
		node := p.reserved
		if node == "" {
			node = fz.node()
		}
		p.reserved, p.allowed = "", false
		fz.do("Unreserve "+p.pod.Name+" "+node, func() { c.Unreserve(uid, node, fz.now) })
	case 6: // its node's filters turn it away
		if !p.born || p.gone || p.pod.NodeName != "" {
			return
		}
		lagging := fz.byte()%2 == 0
		fz.do("TurnedAway "+p.pod.Name, func() { c.TurnedAway(uid, "node(s) had untolerated taint", lagging, fz.now) })
	case 7: // bound without this scheduler's say: where placed, or elsewhere
		if !p.born || p.gone || p.pod.NodeName != "" {
			return
		}
		node := p.placed
		if node == "" || fz.byte()%2 == 0 {
			node = fz.node()
		}
		rec := ""
		if fz.byte()%2 == 0 {
			rec = fz.ids[p.group].Key + "@old-1"
		}
		fz.bind(p, node, rec)
	case 8: // it ends
		if !p.born || p.gone {
			return
		}
		p.gone = true
		pod := p.pod
		pod.Done = true
		fz.do("PodSeen done "+pod.Name, func() { c.PodSeen(pod, fz.now) })
	case 9: // it is deleted
		if !p.born || p.gone {
			return
		}
		p.gone = true
		fz.do("PodRemoved "+p.pod.Name, func() { c.PodRemoved(uid, fz.now) })
	case 10: // a node joins or changes
		i := fz.pick(fuzzNodes)
		n := fz.nodes[i]
		n.Labels = map[string]string{ZoneLabel: fmt.Sprintf("z%d", fz.pick(3)), "rack": fmt.Sprintf("r%d", fz.pick(3))}
		switch fz.pick(5) {
		case 0:
			n.Allocatable = Resources{MilliCPU: fuzzNodeCPU[fz.pick(len(fuzzNodeCPU))], MemoryBytes: fuzzNodeMem[fz.pick(len(fuzzNodeMem))],
				GPU: int64(fz.pick(3)), Pods: fuzzNodePods[fz.pick(len(fuzzNodePods))]}
		case 1:
			n.Down = !n.Down
		case 2:
			n.Taints = []Taint{{Key: "t", Effect: "NoSchedule"}}
		case 3: // its DRA devices change: published, withdrawn, a claim takes one
			n.Devices = scriptDevices(n.Name, fuzzDevices[fz.pick(len(fuzzDevices))])
			for k := range n.Devices {
				if fz.byte()%4 == 0 {
					n.Devices[k].Holder = fmt.Sprintf("ns/claim-%d", fz.pick(fuzzPods+2))
				}
			}
		}
		fz.nodes[i], fz.up[i] = n, true
		fz.do("NodeSet "+n.Name, func() { c.NodeSet(n, fz.now) })
	case 11: // a node leaves
		i := fz.pick(fuzzNodes)
		fz.up[i] = false
		fz.do("NodeRemoved "+fz.nodes[i].Name, func() { c.NodeRemoved(fz.nodes[i].Name, fz.now) })
	case 12: // time passes; the periodic loop
		fz.now += int64(fz.byte()) * int64(1+fz.pick(100))
		if fz.plan != nil {
			b := fz.plan.Build()
			fz.plan = nil
			fz.do("InstallGraph", func() { c.InstallGraph(b, fz.now) })
		}
		if c.cfg.BuildOutside {
			fz.do("PlanGraph", func() { fz.plan = c.PlanGraph(fz.now) })
		}
		fz.do(fmt.Sprintf("Tick %d", fz.now), func() { c.Tick(fz.now) })
	case 13: // the group's object changed
		id := fz.ids[p.group]
		fz.do("GroupChanged "+id.Name, func() { c.GroupChanged(id.Namespace, id.Name, fz.now) })
	case 14: // another scheduler binds a pod
		fz.foreign++
		pod := Pod{UID: fmt.Sprintf("foreign-%d", fz.foreign), Namespace: "other", Name: fmt.Sprintf("f%d", fz.foreign), NodeName: fz.node(),
			Requests: Resources{MilliCPU: fuzzCPU[fz.pick(len(fuzzCPU))], MemoryBytes: fuzzMem[fz.pick(len(fuzzMem))]}}
		fz.do("PodSeen foreign "+pod.Name+" on "+pod.NodeName, func() { c.PodSeen(pod, fz.now) })
		if fz.byte()%2 == 0 {
			fz.do("PodSeen done "+pod.Name, func() { pod.Done = true; c.PodSeen(pod, fz.now) })
		}
	case 15: // a tentative Reserve taken back (a workload cycle)
		if p.reserved == "" || p.gone {
			return
		}
		node := p.reserved
		p.reserved, p.allowed = "", false
		fz.do("Unreserved "+p.pod.Name, func() { c.Unreserved(uid, node) })
	case 16: // the pod changes while it waits: gates, deletion, requests, labels, an object it names
		if !p.born || p.gone || p.pod.NodeName != "" {
			return
		}
		switch fz.pick(5) {
		case 0:
			p.pod.Gated = !p.pod.Gated
		case 1:
			p.pod.Deleting = true
		case 2:
			p.pod.Requests.MilliCPU = fuzzCPU[fz.pick(len(fuzzCPU))]
		case 3:
			p.group = fz.pick(fuzzGroups)
			p.pod.Labeled = fz.labelOf(p.group)
		case 4: // its claim's template seen, or not yet
			if p.pod.Waiting == "" {
				p.pod.Waiting = "resource claim template ns/t does not exist"
			} else {
				p.pod.Waiting = ""
			}
		}
		pod := p.pod
		fz.do("PodSeen changed "+pod.Name, func() { c.PodSeen(pod, fz.now) })
	}
}

// hold asks whether the pod stays out of the scheduling queue, as its
// PreEnqueue does.
func (fz *fuzzer) hold(p *fuzzPod) {
	if p.gone || p.pod.NodeName != "" {
		return
	}
	pod := p.pod
	fz.do("Hold "+pod.Name, func() {
		held, why := fz.core.Hold(pod, fz.now)
		if held && why == "" {
			fz.t.Fatalf("pod %s held without a reason", pod.Name)
		}
		p.held = held
	})
}

// labelOf is a group's id as its pods' labels say it; the PodGroup's pods
// carry none.
func (fz *fuzzer) labelOf(group int) GroupID {
	if group == 3 {
		return GroupID{}
	}
	return fz.ids[group]
}

func (fz *fuzzer) newPod(p *fuzzPod) {
	i := slices.Index(fz.pods[:], p)
	p.born = true
	p.pod = Pod{UID: fmt.Sprintf("uid-%d", i), Namespace: "ns", Name: fmt.Sprintf("p%d", i), Created: fz.now*100 + int64(i), Owned: true,
		Requests: Resources{MilliCPU: fuzzCPU[fz.pick(len(fuzzCPU))], MemoryBytes: fuzzMem[fz.pick(len(fuzzMem))], GPU: int64(fz.pick(3)) / 2},
		Duration: int64(fz.pick(4)) * 30, Priority: int32(fz.pick(3)), Apart: fz.byte()%5 == 0, Gated: fz.byte()%7 == 0,
		Labeled: fz.labelOf(p.group)}
	if r := fuzzRequests[fz.pick(len(fuzzRequests))]; r != "" {
		p.pod.Devices, p.pod.Claims = scriptRequests(r), []string{fmt.Sprintf("ns/claim-%d", i)}
	}
}

// allocate gives a bound pod's claim devices of its node, as the DRA
// plugin would (not always those the engine took): the pod then asks for
// exactly them, and the node shows them held by its claim.
func (fz *fuzzer) allocate(p *fuzzPod) {
	i := slices.IndexFunc(fz.nodes[:], func(n Node) bool { return n.Name == p.pod.NodeName })
	if i < 0 || len(fz.nodes[i].Devices) == 0 {
		return
	}
	n := fz.nodes[i]
	n.Devices = slices.Clone(n.Devices)
	var ids []string
	for k := range n.Devices {
		if n.Devices[k].Holder == "" && fz.byte()%2 == 0 {
			n.Devices[k].Holder = p.pod.Claims[0]
			ids = append(ids, n.Devices[k].ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	fz.nodes[i] = n
	fz.do("NodeSet "+n.Name+" claims", func() { fz.core.NodeSet(n, fz.now) })
	p.pod.Devices = []DeviceRequest{{Name: "claim", Choices: []DeviceChoice{{Name: "allocated", Count: int64(len(ids)), Filter: NewExactDevices(ids...)}}}}
	pod := p.pod
	fz.do("PodSeen allocated "+pod.Name, func() { fz.core.PodSeen(pod, fz.now) })
}

// bind records a pod bound to node, as the informer then shows it.
func (fz *fuzzer) bind(p *fuzzPod, node, record string) {
	p.pod.NodeName, p.pod.Allocation = node, record
	p.reserved, p.allowed = "", false
	pod := p.pod
	fz.do("PodSeen bound "+pod.Name+" on "+node, func() { fz.core.PodSeen(pod, fz.now) })
}
