package integration

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fluence-sched/fluence/pkg/plugin"
	"github.com/fluence-sched/fluence/pkg/sim"
)

// The simulator and the scheduler run one gang core: the same small
// workload (20 groups of mixed sizes, two nodes joining mid-run) replayed
// through `fluence sim` and through the scheduler on a real API server
// starts its groups in the same order on the same nodes.
func TestSimulatorMatchesScheduler(t *testing.T) {
	w := stretched(sim.PoolGrowWorkload(), equivalenceStretch)
	// The simulator runs with the configuration the scheduler derives
	// from the same plugin arguments: its defaults, easy backfill.
	cfg, err := plugin.Args{QueuePolicy: "easy"}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.NewFluence(sim.FluenceConfig{MatchPolicy: cfg.MatchPolicy, Queue: cfg.Queue, DefaultDuration: cfg.DefaultDuration})
	if err != nil {
		t.Fatal(err)
	}
	r, err := sim.Run(w, s, sim.Options{PodReleaseGap: -1})
	if err != nil {
		t.Fatal(err)
	}
	var simulated []groupStart
	for _, j := range r.Jobs {
		if !j.Completed {
			t.Fatalf("simulated: %s did not complete", j.Name)
		}
		simulated = append(simulated, groupStart{name: j.Name, at: j.Start, nodes: j.Nodes})
	}

	c := newCluster(t)
	for _, n := range w.Cluster.Nodes {
		c.addNode(n.Name, fmt.Sprintf("%dm", n.CPU), "16Gi", 0, n.Labels)
	}
	inv, ns, _ := c.runFluence(map[string]string{"queuePolicy": "easy"})
	pods := map[string][]string{}
	start := time.Now()
	at := func(sec float64) {
		if d := time.Duration(sec*float64(time.Second)) - time.Since(start); d > 0 {
			time.Sleep(d)
		}
	}
	nextNode := 0
	for _, g := range w.Groups {
		for nextNode < len(w.NodeArrivals) && w.NodeArrivals[nextNode].At < g.Arrival {
			at(w.NodeArrivals[nextNode].At)
			n := w.NodeArrivals[nextNode].Node
			c.addNode(n.Name, fmt.Sprintf("%dm", n.CPU), "16Gi", 0, n.Labels)
			nextNode++
		}
		at(g.Arrival)
		runtime := time.Duration(g.Runtime * float64(time.Second))
		gp := groupPods(g.Name, len(g.Pods), fmt.Sprintf("%dm", g.Pods[0].CPU), runtime, time.Duration(g.Duration*float64(time.Second)))
		c.createPods(gp...)
		pods[g.Name] = names(gp)
	}
	var all []string
	for _, g := range w.Groups {
		all = append(all, pods[g.Name]...)
	}
	c.waitForPodPhase(equivalenceStretch*2*time.Minute, corev1.PodSucceeded, all...)
	c.checkInvariants(inv)

	recs := ns.Records()
	var real []groupStart
	for _, g := range w.Groups {
		gs := groupStart{name: g.Name}
		var first time.Time
		for _, p := range pods[g.Name] {
			rec := recs[c.NS+"/"+p]
			gs.nodes = append(gs.nodes, rec.Node)
			if first.IsZero() || rec.Bound.After(first) {
				first = rec.Bound
			}
		}
		gs.at = first.Sub(start).Seconds()
		real = append(real, gs)
	}
	want, got := startOrder(simulated), startOrder(real)
	if want != got {
		t.Errorf("the scheduler started the groups differently from the simulator:\nsimulated: %s\nscheduler: %s", want, got)
	}
	t.Logf("start order and nodes: %s", got)
}

// equivalenceStretch slows the workload down for the live run. Its
// closest events (a group's end and another's arrival) are 1.5 s apart;
// on a loaded machine the API server, the node simulator and the
// scheduler took longer than that to carry a pod's end to the scheduler
// once, and the live run then decided on a different state than the
// simulator. Stretched twice, they were 3 s apart, and a run still
// diverged (from its 14th group of 20) with nothing else on the machine.
// One difference the simulator does not model, and a likely cause: the
// scheduler takes a new node into its graph on its loop's next pass, up
// to a second after the node arrives. Stretched three times, they are
// 4.5 s apart.
const equivalenceStretch = 3

// stretched returns w with every time (arrivals, runtimes, declared
// durations, release delays, node arrivals) multiplied by k.
func stretched(w *sim.Workload, k float64) *sim.Workload {
	for i := range w.Groups {
		g := &w.Groups[i]
		g.Arrival *= k
		g.Runtime *= k
		g.Duration *= k
		g.ReleaseDelay *= k
	}
	for i := range w.NodeArrivals {
		w.NodeArrivals[i].At *= k
	}
	return w
}

type groupStart struct {
	name  string
	at    float64 // seconds from the first arrival
	nodes []string
}

// startOrder lists the groups by start, with their pods' nodes. Groups
// started within 0.3 s of each other were placed in one decision (the
// simulator gives them the same instant), so they are listed by name.
func startOrder(gs []groupStart) string {
	gs = slices.Clone(gs)
	slices.SortStableFunc(gs, func(a, b groupStart) int {
		if d := a.at - b.at; d > 0.3 || d < -0.3 {
			return cmp.Compare(a.at, b.at)
		}
		return cmp.Compare(a.name, b.name)
	})
	var parts []string
	for _, g := range gs {
		parts = append(parts, g.name+"@"+strings.Join(g.nodes, ","))
	}
	return strings.Join(parts, " ")
}
