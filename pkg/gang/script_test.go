package gang

import (
	"bufio"
	"cmp"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestScripts runs every testdata/scripts/*.txt through the core and the
// Framework and compares the transcript with its .golden file: scripted
// event sequences as the specification of the gang lifecycle. Run with
// -update to rewrite the golden files after checking the diff.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/scripts/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(name, func(t *testing.T) {
			got := runScript(t, file)
			golden := strings.TrimSuffix(file, ".txt") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./pkg/gang -run TestScripts -update)", err)
			}
			if got != string(want) {
				t.Errorf("transcript differs from %s (go test ./pkg/gang -run TestScripts -update rewrites it):\n%s", golden, lineDiff(string(want), got))
			}
		})
	}
}

// script is the state of one script run.
type script struct {
	t     *testing.T
	cfg   Config
	core  *Core
	fw    *Framework
	now   int64
	out   strings.Builder
	nodes map[string]Node
	// pods by name: every pod the script made and not deleted.
	pods     map[string]*Pod
	groups   map[string]GroupID
	failBind int
	binds    int
	// apart: pods that may not share a node with each other (a required
	// pod anti-affinity on the hostname), which the framework's filter
	// enforces and the engine does not know.
	apart map[string]bool
	// plan: a graph plan taken by "plan", built and installed by
	// "install" (prebuild.go).
	plan *GraphPlan
	// preEnqueue: the framework asks the core before a pod enters the
	// queue (config preenqueue=true).
	preEnqueue bool
	// boundAt: when each bound pod was bound, so a restart tells the new
	// core how long it has run (Pod.Ran).
	boundAt map[string]int64
	// ended: the pods that succeeded or failed, which stay in the API
	// until deleted: a restart lists them.
	ended map[string]*Pod
}

func runScript(t *testing.T, file string) string {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := &script{t: t, nodes: map[string]Node{}, pods: map[string]*Pod{}, groups: map[string]GroupID{}, boundAt: map[string]int64{}, ended: map[string]*Pod{},
		cfg: Config{Queue: queue.Config{Policy: queue.Easy}, RunID: "run1"}}
	s.start()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fmt.Fprintf(&s.out, "> %s\n", line)
		if err := s.exec(strings.Fields(line)); err != nil {
			t.Fatalf("%s:%d: %s: %v", file, n, line, err)
		}
		if err := s.core.CheckInvariants(); err != nil {
			t.Fatalf("%s:%d: %s: invariants violated:\n%v", file, n, line, err)
		}
		if err := checkPublished(s.core, s.now); err != nil {
			t.Fatalf("%s:%d: %s: %v", file, n, line, err)
		}
	}
	return s.out.String()
}

func (s *script) start() {
	core, err := New(s.cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	s.core = core
	s.fw = NewFramework(core, s.bind)
	s.fw.Observe = func(fx Effects) {
		s.print(Effects{Events: fx.Events, Conditions: fx.Conditions, Placements: fx.Placements, Evictions: fx.Evictions, Errors: fx.Errors,
			Placed: fx.Placed, Rejected: fx.Rejected, Withdrawn: fx.Withdrawn})
	}
	s.fw.Filter = s.filter
	s.fw.PreEnqueue = s.preEnqueue
}

// filter turns a pod of the apart set away from a node where another of
// them is bound or waits at Permit.
func (s *script) filter(p *Pod, node string) string {
	if !s.apart[p.Name] {
		return ""
	}
	for _, name := range slices.Sorted(maps.Keys(s.apart)) {
		q := s.pods[name]
		if q == nil || q.UID == p.UID {
			continue
		}
		at := q.NodeName
		if fp := s.fw.pods[q.UID]; fp != nil && fp.waiting != "" {
			at = fp.waiting
		}
		if at == node {
			return "node(s) didn't match pod anti-affinity rules"
		}
	}
	return ""
}

func (s *script) bind(p *Pod, node string) error {
	s.binds++
	if s.failBind > 0 {
		s.failBind--
		return fmt.Errorf("injected failure")
	}
	return nil
}

func (s *script) exec(f []string) error {
	args := map[string]string{}
	var flags []string
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			args[k] = v
		} else {
			flags = append(flags, a)
		}
	}
	switch f[0] {
	case "config":
		if p, ok := args["policy"]; ok {
			s.cfg.Queue.Policy = queue.Policy(p)
		}
		if d, ok := args["default-duration"]; ok {
			s.cfg.DefaultDuration = atoi(d)
		}
		if l, ok := args["levels"]; ok { // topology levels, outermost first
			s.cfg.TopologyLevels = strings.Split(l, ",")
		}
		if r, ok := args["rack"]; ok {
			s.cfg.RackLabel = r
		}
		if o, ok := args["outside"]; ok { // new nodes join a graph built outside (plan, install)
			s.cfg.BuildOutside = o == "true"
		}
		if q, ok := args["preenqueue"]; ok { // pods ask the core before they enter the queue (Hold)
			s.preEnqueue = q == "true"
		}
		if n, ok := args["notice"]; ok { // seconds a held group waits before its pods are told
			s.cfg.GatherNotice = atoi(n)
		}
		if pr, ok := args["preempt"]; ok { // after[:min-runtime[:timeout]], seconds
			v := strings.Split(pr, ":")
			for len(v) < 3 {
				v = append(v, "0")
			}
			s.cfg.Preemption = &Preemption{After: atoi(v[0]), MinRuntime: atoi(v[1]), Timeout: atoi(v[2])}
		}
		s.start()
	case "at":
		s.now = atoi(f[1])
	case "node":
		n := Node{Name: f[1], Allocatable: Resources{MilliCPU: milli(args["cpu"]), MemoryBytes: bytes(args["mem"]), GPU: atoi(args["gpu"]), Pods: atoi(args["pods"])}, Down: slices.Contains(flags, "down")}
		if l := args["labels"]; l != "" {
			n.Labels = map[string]string{}
			for _, kv := range strings.Split(l, ",") {
				k, v, _ := strings.Cut(kv, ":")
				n.Labels[k] = v
			}
		}
		if tt := args["taint"]; tt != "" {
			n.Taints = []Taint{{Key: tt, Effect: "NoSchedule"}}
		}
		n.Devices = scriptDevices(n.Name, args["devs"])
		s.nodes[n.Name] = n
		s.core.NodeSet(n, s.now)
	case "slice":
		// The node's DRA devices change (a ResourceSlice published,
		// changed or withdrawn): devs= lists them as on node, empty for none.
		n, ok := s.nodes[f[1]]
		if !ok {
			return fmt.Errorf("no node %s", f[1])
		}
		n.Devices = scriptDevices(n.Name, args["devs"])
		s.nodes[n.Name] = n
		s.core.NodeSet(n, s.now)
	case "hold":
		// A claim's allocation changes: claim= now holds the node's
		// devices devs= (their names on the node, e.g. gpu-0,gpu-1);
		// none released it.
		n, ok := s.nodes[f[1]]
		if !ok {
			return fmt.Errorf("no node %s", f[1])
		}
		n.Devices = slices.Clone(n.Devices)
		for i, d := range n.Devices {
			if d.Holder == args["claim"] {
				n.Devices[i].Holder = ""
			}
			if args["devs"] != "" && slices.Contains(strings.Split(args["devs"], ","), strings.TrimPrefix(d.ID, n.Name+"/")) {
				n.Devices[i].Holder = args["claim"]
			}
		}
		s.nodes[n.Name] = n
		s.core.NodeSet(n, s.now)
		s.print(s.core.Ready())
	case "allocated":
		// The DRA plugin allocated the claims of the pod bound to node=:
		// it asks for exactly devs= (full IDs) from now on, as the
		// informer shows it.
		p := s.pods[f[1]]
		if p == nil {
			return fmt.Errorf("no pod %s", f[1])
		}
		ids := strings.Split(args["devs"], ",")
		p.Devices = []DeviceRequest{{Name: "claim", Choices: []DeviceChoice{{Name: "allocated", Count: int64(len(ids)), Filter: NewExactDevices(ids...)}}}}
		p.NodeName = args["node"]
		s.core.PodSeen(*p, s.now)
		s.print(s.core.Ready())
	case "devices":
		// Which group's allocation (or the node's foreign job) holds
		// each device of the node, in the engine.
		c := s.core
		g := c.m.Graph()
		for _, v := range g.Children(c.vertexOf[f[1]]) {
			d := c.deviceOf(g, v)
			if d == nil || g.Vertex(v).Basename != TypeDevice {
				continue
			}
			holder := "free"
			for _, key := range slices.Sorted(maps.Keys(c.groups)) {
				for _, a := range c.groups[key].allocs {
					if c.m.Holds(a.id, v) {
						holder = key
					}
				}
			}
			if id, ok := c.foreignJob[f[1]]; ok && c.m.Holds(id, v) {
				holder = "foreign"
			}
			fmt.Fprintf(&s.out, "  %s: %s\n", d.ID, holder)
		}
	case "rmnode":
		delete(s.nodes, f[1])
		s.core.NodeRemoved(f[1], s.now)
	case "pod":
		p := &Pod{UID: "uid-" + f[1], Namespace: "ns", Name: f[1], Created: s.now*1000 + int64(len(s.pods)), Owned: true,
			Requests: Resources{MilliCPU: milli(args["cpu"]), MemoryBytes: bytes(args["mem"]), GPU: atoi(args["gpu"])},
			Duration: atoi(args["dur"]), Priority: int32(atoi(args["prio"]))}
		if sel, tol := args["sel"], args["tol"]; sel != "" || tol != "" {
			p.Filter = labelFilter{sel: sel, tol: tol}
		}
		p.Invalid = strings.ReplaceAll(args["bad"], "_", " ")
		p.Waiting = strings.ReplaceAll(args["wait"], "_", " ") // an object it names, not seen yet
		p.Devices = scriptRequests(args["req"])
		if c := args["claim"]; c != "" { // the claim its requests are made into
			p.Claims = []string{c}
		}
		p.Apart = args["apart"] == "true" // one per node, as the engine knows it
		p.Gated = args["gated"] == "true" // scheduling gates: see "ungate"
		p.PreemptNever = args["preempt"] == "Never"
		p.Movable = args["movable"] == "true" // its workload may be moved (the movable annotation)
		if v, ok := args["ckpt"]; ok {        // its workload's last checkpoint (the checkpointed-at annotation)
			p.Checkpointed, p.HasCheckpoint = atoi(v), true
		}
		p.Role = args["role"] // its part in a multi-role group
		id := NewGroupID("ns", f[1], 1, SourcePod)
		if g := args["group"]; g != "" {
			name, size, _ := strings.Cut(g, "/")
			id = NewGroupID("ns", name, int32(atoi(size)), SourceLabel)
			id.Roles = scriptRoles(args["roles"])
			p.Labeled = id
		}
		// A group defined by an object: its pods are not labelled, and the
		// core reports the group's condition.
		for arg, source := range map[string]string{"podgroup": SourcePodGroup, "native": SourceNativePodGroup, "composite": SourceCompositePodGroup} {
			if g := args[arg]; g != "" {
				name, size, _ := strings.Cut(g, "/")
				id = NewGroupID("ns", name, int32(atoi(size)), source)
			}
		}
		if gp, ok := args["gprio"]; ok { // the group object's own priority
			id.Priority, id.HasPriority = int32(atoi(gp)), true
		}
		if args["group"] == "" && args["roles"] != "" { // roles of a group defined by an object
			id.Roles = scriptRoles(args["roles"])
		}
		id.PreemptionPolicy = args["gpreempt"]            // the group object's preemptionPolicy
		id.DisruptionSingle = args["disrupt"] == "single" // ... and its disruptionMode
		id.TopologyKey = args["topo"]                     // the group's object asks for one domain of this label
		id.TopologyPreferred = args["pref"]               // ... or would rather have one
		if args["claims"] != "" {
			id.Unsupported = args["claims"] + " resource claims"
		}
		// The group object's minimum resources (a scheduler-plugins
		// PodGroup's spec.minResources): min=cpu:16,mem:8Gi,gpu:2,pods:10.
		if m := args["min"]; m != "" {
			var err error
			if id.MinResources, err = parseMin(m); err != nil {
				return err
			}
		}
		id.PermitTimeout = atoi(args["ptimeout"]) // ... and its Permit wait, seconds
		s.pods[f[1]] = p
		s.groups[f[1]] = id
		s.fw.Add(*p, id, s.now)
	case "update":
		// The pod changed, as the informer shows it: bad= sets or clears
		// its unreadable requirement, wait= what it waits for, cpu= its
		// request, ckpt= its last checkpoint.
		p := s.pods[f[1]]
		if p == nil {
			return fmt.Errorf("no pod %s", f[1])
		}
		if v, ok := args["bad"]; ok {
			p.Invalid = strings.ReplaceAll(v, "_", " ")
		}
		if v, ok := args["wait"]; ok {
			p.Waiting = strings.ReplaceAll(v, "_", " ")
		}
		if v, ok := args["cpu"]; ok {
			p.Requests.MilliCPU = milli(v)
		}
		if v, ok := args["ckpt"]; ok { // its workload checkpointed at v
			p.Checkpointed, p.HasCheckpoint = atoi(v), true
		}
		if fp := s.fw.pods[p.UID]; fp != nil {
			fp.pod = *p
		}
		s.core.PodSeen(*p, s.now)
		s.print(s.core.Ready())
	case "preempted":
		// Another scheduler's preemption marks the pods (DisruptionTarget,
		// reason PreemptionByScheduler).
		for _, name := range f[1:] {
			p := s.pods[name]
			if p == nil {
				return fmt.Errorf("no pod %s", name)
			}
			p.Preempted = true
			s.core.PodSeen(*p, s.now)
		}
		s.print(s.core.Ready())
	case "ungate":
		// The pod's scheduling gates are lifted.
		p := s.pods[f[1]]
		if p == nil {
			return fmt.Errorf("no pod %s", f[1])
		}
		p.Gated = false
		s.fw.Ungate(p.UID, s.now)
		s.print(s.core.Ready())
	case "nominate":
		// Another scheduler's unbound pod, nominated for node= by its
		// preemption (node= empty: the nomination is gone).
		p := &Pod{UID: "uid-" + f[1], Namespace: "ns", Name: f[1], Nominated: args["node"],
			Requests: Resources{MilliCPU: milli(args["cpu"]), MemoryBytes: bytes(args["mem"])}}
		s.pods[f[1]] = p
		s.core.PodSeen(*p, s.now)
	case "foreign":
		// held= names the devices its allocated claims hold (node/kind-i).
		p := &Pod{UID: "uid-" + f[1], Namespace: "ns", Name: f[1], NodeName: args["node"],
			Requests: Resources{MilliCPU: milli(args["cpu"]), MemoryBytes: bytes(args["mem"])}}
		if h := args["held"]; h != "" {
			ids := strings.Split(h, ",")
			p.Devices = []DeviceRequest{{Name: "claim", Choices: []DeviceChoice{{Count: int64(len(ids)), Filter: NewExactDevices(ids...)}}}}
		}
		s.pods[f[1]] = p
		s.core.PodSeen(*p, s.now)
	case "plan":
		// plan: take a plan for a graph with the waiting nodes, as the
		// scheduler does under its lock.
		s.plan = s.core.PlanGraph(s.now)
		if s.plan == nil {
			fmt.Fprintf(&s.out, "  no plan\n")
			break
		}
		fmt.Fprintf(&s.out, "  plan of %d nodes\n", len(s.plan.nodes))
	case "install":
		// install: build the plan taken last (as the scheduler does
		// outside its lock) and install it.
		if s.plan == nil {
			return fmt.Errorf("no plan to install")
		}
		ok := s.core.InstallGraph(s.plan.Build(), s.now)
		s.plan = nil
		fmt.Fprintf(&s.out, "  installed: %v\n", ok)
	case "run":
		s.run(false)
	case "tick":
		s.run(true)
	case "done", "delete", "fail":
		// done: the pods succeeded; fail [reason=R]: they failed (R is
		// the status reason, e.g. OutOfcpu); delete: they were deleted.
		for _, name := range f[1:] {
			if strings.Contains(name, "=") {
				continue
			}
			p := s.pods[name]
			if p == nil {
				return fmt.Errorf("no pod %s", name)
			}
			delete(s.pods, name)
			s.fw.Remove(p.UID)
			if f[0] != "delete" {
				p.Done, p.Succeeded, p.FailReason = true, f[0] == "done", args["reason"]
				s.ended[name] = p
				s.core.PodSeen(*p, s.now)
			} else {
				s.core.PodRemoved(p.UID, s.now)
			}
		}
		s.print(s.core.Ready())
	case "apart":
		// These pods may not share a node: the filter turns them away.
		if s.apart == nil {
			s.apart = map[string]bool{}
		}
		for _, name := range f[1:] {
			s.apart[name] = true
		}
	case "cycle":
		s.trace(s.fw.RunPod(s.pods[f[1]].UID, s.now))
	case "timeout":
		// timeout NAME: the pod's wait at Permit is over (the script says
		// when; the core says how long its group lets it wait).
		p := s.pods[f[1]]
		if p == nil {
			return fmt.Errorf("no pod %s", f[1])
		}
		wait := "the scheduler's permitTimeout"
		if t := s.core.PermitTimeout(p.UID); t > 0 {
			wait = fmt.Sprintf("%ds, its group's", t)
		}
		fmt.Fprintf(&s.out, "  %s: waits at Permit for %s\n", p, wait)
		s.trace(s.fw.TimeOut(p.UID, s.now))
		s.print(s.core.Ready())
	case "turnaway":
		// The pod's cycle, in which its node's filters turn it away.
		p := s.pods[f[1]]
		v := s.core.Place(*p, s.groups[f[1]], s.now)
		fmt.Fprintf(&s.out, "  %s: placed on %s, turned away there\n", p, v.Node)
		why := strings.Join(f[2:], " ")
		s.core.TurnedAway(p.UID, why, strings.HasPrefix(why, "Insufficient cpu"), s.now)
		var out []Trace
		s.fw.apply(s.core.Ready(), s.now, &out)
		s.trace(out)
	case "failbind":
		s.failBind = int(atoi(f[1]))
	case "bindlate":
		// A binding the previous run sent lands now.
		p := s.pods[f[1]]
		p.NodeName, p.Allocation = args["node"], args["record"]
		s.fw.Remove(p.UID)
		s.core.PodSeen(*p, s.now)
		s.print(s.core.Ready())
	case "regroup":
		// The pod's group labels change while it waits.
		name, size, _ := strings.Cut(args["group"], "/")
		id := NewGroupID("ns", name, int32(atoi(size)), SourceLabel)
		p := s.pods[f[1]]
		p.Labeled = id
		s.groups[f[1]] = id
		s.fw.Remove(p.UID)
		s.fw.Add(*p, id, s.now)
	case "resize":
		// resize NAME SIZE [roles=...] [changed=OBJECT]: the object
		// defining group NAME (a PodGroup, a Job) now says SIZE (and these
		// roles); its pods resolve to it from now on, and the core hears
		// that the object changed: NAME's, or OBJECT (a composite's child).
		size := int32(atoi(f[2]))
		for pod, id := range s.groups {
			if id.Name == f[1] && id.Source != SourceLabel {
				id.Size = size
				if r, ok := args["roles"]; ok {
					id.Roles = scriptRoles(r)
				}
				s.groups[pod] = id
				if fp := s.fw.pods[s.pods[pod].UID]; fp != nil {
					fp.group = id
				}
			}
		}
		s.core.GroupChanged("ns", cmp.Or(args["changed"], f[1]), s.now)
		s.run(false)
	case "podgroup":
		// podgroup NAME [min=...] [ptimeout=N]: the PodGroup defining group
		// NAME now asks these minimum resources and this Permit wait (an
		// option left out asks none); its pods resolve to it from now on,
		// and the core hears that the object changed.
		var min Resources
		if m := args["min"]; m != "" {
			var err error
			if min, err = parseMin(m); err != nil {
				return err
			}
		}
		for pod, id := range s.groups {
			if id.Name == f[1] && id.Source == SourcePodGroup {
				id.MinResources, id.PermitTimeout = min, atoi(args["ptimeout"])
				s.groups[pod] = id
				if fp := s.fw.pods[s.pods[pod].UID]; fp != nil {
					fp.group = id
				}
			}
		}
		s.core.GroupChanged("ns", f[1], s.now)
		s.run(false)
	case "restart":
		s.restart()
	case "state":
		s.state()
	case "inspect":
		s.inspect()
	case "explain":
		// explain NAME: the group ns/NAME, or the one group of ns named NAME.
		snap := s.core.Snapshot(s.now)
		keys := snap.Lookup("ns", f[1])
		if len(keys) != 1 {
			return fmt.Errorf("explain %s: groups %v", f[1], keys)
		}
		e, _ := snap.Explain(keys[0])
		printExplanation(&s.out, e)
	default:
		return fmt.Errorf("unknown command %q", f[0])
	}
	return nil
}

// restart starts a new core and framework that learn the cluster as a
// restarted scheduler does: nodes and bound pods first, then the pending
// pods enter the queue.
func (s *script) restart() {
	s.start()
	for _, name := range slices.Sorted(maps.Keys(s.nodes)) {
		s.core.NodeSet(s.nodes[name], s.now)
	}
	for _, name := range slices.Sorted(maps.Keys(s.pods)) {
		if p := s.pods[name]; p.NodeName != "" {
			p.Ran = s.now - s.boundAt[name]
			s.core.PodSeen(*p, s.now)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.ended)) {
		s.core.PodSeen(*s.ended[name], s.now)
	}
	for _, name := range slices.Sorted(maps.Keys(s.pods)) {
		if p := s.pods[name]; p.NodeName == "" {
			s.fw.Add(*p, s.groups[name], s.now)
		}
	}
}

func (s *script) run(tick bool) {
	if tick {
		s.core.Tick(s.now)
	}
	var out []Trace
	s.fw.apply(s.core.Ready(), s.now, &out)
	s.trace(append(out, s.fw.Run(s.now)...))
	s.print(s.core.Ready())
}

func (s *script) trace(traces []Trace) {
	for _, tr := range traces {
		switch {
		case tr.Bound != "":
			var domain string
			for _, p := range s.pods {
				if p.String() == tr.Pod {
					if d := s.core.Domain(p.UID); d != "" {
						domain = " (" + d + ")" // the domain annotation written at binding
					}
				}
			}
			fmt.Fprintf(&s.out, "  bound %s -> %s%s\n", tr.Pod, tr.Bound, domain)
			for name, p := range s.pods {
				if p.String() == tr.Pod {
					p.NodeName = tr.Bound
					p.Allocation = s.core.Record(p.UID)
					p.MovedAt, p.HasMovedAt = s.core.MovedAt(p.UID) // the moved-at annotation written at binding
					s.boundAt[name] = s.now
				}
			}
		case tr.Verdict.Node != "":
			fmt.Fprintf(&s.out, "  %s: placed on %s\n", tr.Pod, tr.Verdict.Node)
		default:
			final := ""
			if tr.Verdict.Final {
				final = " (final)"
			}
			fmt.Fprintf(&s.out, "  %s: %s%s\n", tr.Pod, tr.Verdict.Reason, final)
		}
	}
}

func (s *script) print(fx Effects) {
	for _, e := range fx.Errors {
		s.t.Errorf("internal error: %v", e)
	}
	for _, e := range fx.Events {
		kind := "normal"
		if e.Warning {
			kind = "warning"
		}
		fmt.Fprintf(&s.out, "  event %s %s %s: %s\n", kind, e.Pod, e.Reason, e.Note)
	}
	for _, c := range fx.Conditions {
		fmt.Fprintf(&s.out, "  condition %s %s: %s\n", c.Group.Key, c.Status, c.Message)
	}
	for _, e := range fx.Evictions {
		fmt.Fprintf(&s.out, "  evict %s of %s by %s\n", e.Pod, e.Group, e.By)
		// As the API shows an evicted pod until it is gone (a grace
		// period, a finalizer): its DisruptionTarget condition carries the
		// message, and it is being deleted. A restart reads it so.
		if p := s.pods[e.Pod.Name]; p != nil && p.UID == e.Pod.UID {
			p.Preempted, p.PreemptedNote, p.Deleting = true, e.Message, true
		}
	}
	for _, p := range fx.Placements {
		fmt.Fprintf(&s.out, "  placement %s %s level=%q\n", p.Group, p.Asked, p.Level)
	}
	// What the scheduler's metrics count (fluence_group_wait_seconds,
	// fluence_group_rejections_total, fluence_group_withdrawals_total).
	for _, p := range fx.Placed {
		fmt.Fprintf(&s.out, "  metric placed %s waited %d\n", p.Group, p.Waited)
	}
	for _, g := range fx.Rejected {
		fmt.Fprintf(&s.out, "  metric rejected %s\n", g)
	}
	for _, g := range fx.Withdrawn {
		fmt.Fprintf(&s.out, "  metric withdrawn %s\n", g)
	}
	for _, r := range fx.Activate {
		if _, ok := s.fw.pods[r.UID]; ok {
			s.fw.activate(r.UID)
		}
	}
}

// state prints every group: its phase, allocations and where their pods
// sit.
func (s *script) state() {
	for _, g := range s.core.sortedGroups() {
		if g.dormant() {
			continue
		}
		fmt.Fprintf(&s.out, "  group %s size %d %s", g.id.Key, g.id.Size, g.phase())
		if g.id.Roles != "" {
			fmt.Fprintf(&s.out, " roles %s", g.id.Roles)
		}
		if g.reason != "" {
			fmt.Fprintf(&s.out, " (%s)", g.reason)
		}
		s.out.WriteString("\n")
		if w := s.core.gathering[g.id.Key]; w != nil {
			var held []string
			for _, r := range w.pods {
				held = append(held, r.Name)
			}
			slices.Sort(held)
			fmt.Fprintf(&s.out, "    held out of the queue: %s\n", strings.Join(held, " "))
		}
		for _, a := range g.allocs {
			var slots []string
			for _, sl := range a.slots {
				st := "vacant"
				if sl.pod != "" || sl.done {
					st = sl.name
				}
				switch {
				case sl.done:
					st += " done"
				case sl.bound:
					st += " bound"
				case sl.reserved:
					st += " reserved"
				}
				slots = append(slots, sl.node+":"+st)
			}
			fmt.Fprintf(&s.out, "    alloc running=%v start=%d dur=%d [%s]\n", a.running, a.start, a.dur, strings.Join(slots, " "))
		}
	}
	for _, node := range slices.Sorted(maps.Keys(s.core.foreign)) {
		fmt.Fprintf(&s.out, "  foreign on %s: %d pods\n", node, len(s.core.foreign[node]))
	}
	for _, node := range slices.Sorted(maps.Keys(s.core.overloaded)) {
		fmt.Fprintf(&s.out, "  overloaded %s\n", node)
	}
}

// labelFilter admits nodes whose labels have sel (k:v) and whose taints
// are all tolerated (tol names tolerated keys).
type labelFilter struct{ sel, tol string }

func (f labelFilter) Admits(n *Node) bool {
	if f.sel != "" {
		k, v, _ := strings.Cut(f.sel, ":")
		if n.Labels[k] != v {
			return false
		}
	}
	for _, t := range n.Taints {
		if t.Key != f.tol {
			return false
		}
	}
	return true
}

func (f labelFilter) Why(nodes []*Node) string {
	return fmt.Sprintf("selector %s: 0 of %d nodes", f.sel, len(nodes))
}

func (f labelFilter) Key() string { return "sel=" + f.sel + ",tol=" + f.tol }

// scriptDevices reads a node's devices: groups joined by +, each
// <count>x<kind>[:attr=value...], e.g. 4xgpu:mem=80+2xgpu:mem=40. A
// device is named <node>/<kind>-<i>, i counting per kind on the node,
// and has the attribute kind besides those given.
func scriptDevices(node, spec string) []Device {
	if spec == "" {
		return nil
	}
	var ds []Device
	perKind := map[string]int{}
	for _, grp := range strings.Split(spec, "+") {
		n, rest, _ := strings.Cut(grp, "x")
		parts := strings.Split(rest, ":")
		attrs := map[string]string{"kind": parts[0]}
		for _, kv := range parts[1:] {
			k, v, _ := strings.Cut(kv, "=")
			attrs[k] = v
		}
		for range atoi(n) {
			ds = append(ds, Device{ID: fmt.Sprintf("%s/%s-%d", node, parts[0], perKind[parts[0]]), Attributes: attrs})
			perKind[parts[0]]++
		}
	}
	return ds
}

// scriptRequests reads a pod's device requests: requests joined by +,
// each one or more choices joined by | (firstAvailable), each
// <count>x<kind>[:attr=value...], e.g. 4xgpu:mem=80|8xgpu:mem=40.
func scriptRequests(spec string) []DeviceRequest {
	if spec == "" {
		return nil
	}
	var rs []DeviceRequest
	for i, r := range strings.Split(spec, "+") {
		req := DeviceRequest{Name: fmt.Sprintf("claim/r%d", i)}
		for j, ch := range strings.Split(r, "|") {
			n, rest, _ := strings.Cut(ch, "x")
			parts := strings.Split(rest, ":")
			req.Choices = append(req.Choices, DeviceChoice{Name: fmt.Sprintf("c%d", j), Count: atoi(n), Filter: attrFilter{kind: parts[0], attrs: parts[1:]}})
		}
		rs = append(rs, req)
	}
	return rs
}

// attrFilter admits devices of a kind whose attributes equal the given
// k=v pairs.
type attrFilter struct {
	kind  string
	attrs []string
}

func (f attrFilter) Admits(d *Device) bool {
	if d.Attributes["kind"] != f.kind {
		return false
	}
	for _, kv := range f.attrs {
		k, v, _ := strings.Cut(kv, "=")
		if d.Attributes[k] != v {
			return false
		}
	}
	return true
}

func (f attrFilter) Key() string { return f.kind + ":" + strings.Join(f.attrs, ":") }

func (f attrFilter) Describe() string {
	if len(f.attrs) == 0 {
		return f.kind + " devices"
	}
	return f.kind + " devices with " + strings.Join(f.attrs, ", ")
}

// scriptRoles reads a multi-role group's roles, launcher:1,workers:8, as
// GroupID.Roles spells them.
func scriptRoles(spec string) string {
	if spec == "" {
		return ""
	}
	var roles []Role
	for _, rc := range strings.Split(spec, ",") {
		name, n, _ := strings.Cut(rc, ":")
		roles = append(roles, Role{Name: name, Min: int32(atoi(n))})
	}
	return RoleSizes(roles)
}

// parseMin reads minimum resources: cpu:16,mem:8Gi,gpu:2,pods:10.
func parseMin(m string) (Resources, error) {
	var r Resources
	for _, kv := range strings.Split(m, ",") {
		k, v, _ := strings.Cut(kv, ":")
		switch k {
		case "cpu":
			r.MilliCPU = milli(v)
		case "mem":
			r.MemoryBytes = bytes(v)
		case "gpu":
			r.GPU = atoi(v)
		case "pods":
			r.Pods = atoi(v)
		default:
			return Resources{}, fmt.Errorf("min=: unknown resource %q", k)
		}
	}
	return r, nil
}

func atoi(s string) int64 {
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

// milli reads a CPU amount: "2" is 2000 millicores, "250m" is 250.
func milli(s string) int64 {
	if v, ok := strings.CutSuffix(s, "m"); ok {
		return atoi(v)
	}
	return atoi(s) * 1000
}

// bytes reads a memory amount in Gi or Mi.
func bytes(s string) int64 {
	if v, ok := strings.CutSuffix(s, "Gi"); ok {
		return atoi(v) << 30
	}
	if v, ok := strings.CutSuffix(s, "Mi"); ok {
		return atoi(v) << 20
	}
	return atoi(s)
}

// lineDiff shows the first lines where two transcripts differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, a, b)
		}
	}
	return "(same lines)"
}
