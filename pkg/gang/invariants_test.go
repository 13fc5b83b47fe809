package gang

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// invariantCore returns a core with a placed group (ns/a, 2 pods on n0
// and n1, one reserved), a queued one (ns/b, 2 pods of 3 CPUs each
// waiting for a foreign pod to end) and a foreign pod on n0.
func invariantCore(t *testing.T) *Core {
	t.Helper()
	c, err := New(Config{Queue: queue.Config{Policy: queue.Easy}, RunID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"n0", "n1"} {
		c.NodeSet(Node{Name: n, Allocatable: Resources{MilliCPU: 4000, MemoryBytes: 8 << 30, Pods: 110}}, 0)
	}
	c.PodSeen(Pod{UID: "f", Namespace: "x", Name: "f", NodeName: "n0", Requests: Resources{MilliCPU: 1500}}, 0)
	pod := func(name, group string, size int32, cpu int64) (Pod, GroupID) {
		id := NewGroupID("ns", group, size, SourceLabel)
		p := Pod{UID: "uid-" + name, Namespace: "ns", Name: name, Owned: true, Requests: Resources{MilliCPU: cpu}, Labeled: id, Duration: 60}
		c.PodSeen(p, 0)
		return p, id
	}
	a0, aid := pod("a0", "a", 2, 1000)
	pod("a1", "a", 2, 1000)
	pod("b0", "b", 2, 3000)
	pod("b1", "b", 2, 3000)
	c.Tick(1)
	v := c.Place(a0, aid, 1)
	if v.Node == "" {
		t.Fatalf("a0 not placed: %+v", v)
	}
	if err := c.Reserve(a0.UID, v.Node); err != nil {
		t.Fatal(err)
	}
	c.Ready()
	if g := c.groups["ns/b"]; g == nil || g.queuedPods() != 2 {
		t.Fatalf("group b is not queued: %+v", g)
	}
	if err := c.CheckInvariants(); err != nil {
		t.Fatalf("a sound core: %v", err)
	}
	return c
}

// Each corruption of a sound core is reported: the rules can fail.
func TestCheckInvariantsFindsCorruption(t *testing.T) {
	running := func(c *Core) (*group, *alloc) {
		g := c.groups["ns/a"]
		return g, g.allocs[0]
	}
	queued := func(c *Core) (*group, *alloc) {
		g := c.groups["ns/b"]
		return g, g.allocs[0]
	}
	for _, tc := range []struct {
		name, want string
		corrupt    func(c *Core)
	}{
		{"slot pod not a member", "not a member", func(c *Core) {
			g, _ := running(c)
			delete(g.members, "uid-a1")
			delete(c.podKey, "uid-a1")
		}},
		{"member maps elsewhere", `maps to group "ns/b"`, func(c *Core) { c.podKey["uid-a1"] = "ns/b" }},
		{"podKey to no group", "does not exist", func(c *Core) { c.podKey["ghost"] = "ns/ghost" }},
		{"podKey to no member", "no such member", func(c *Core) { c.podKey["ghost"] = "ns/a" }},
		{"byAlloc stale", "not in the core", func(c *Core) { c.byAlloc[999] = newGroup(NewGroupID("ns", "z", 1, SourceLabel), 0) }},
		{"byAlloc wrong group", "does not hold it", func(c *Core) { c.byAlloc[999] = c.groups["ns/a"] }},
		{"alloc not indexed", "maps to group <nil>", func(c *Core) {
			_, a := running(c)
			delete(c.byAlloc, a.id)
		}},
		{"placed and queued", "placed and queued at once", func(c *Core) {
			g, a := queued(c)
			placed := &alloc{id: c.newID(), running: true, slots: []*slot{{node: "n1", pod: a.pods[0]}}}
			g.allocs = append(g.allocs, placed)
			c.byAlloc[placed.id] = g
		}},
		{"two slots", "holds two slots", func(c *Core) {
			_, a := running(c)
			a.slots[1].pod = a.slots[0].pod
		}},
		{"queued request not in queue", "queued in the core but", func(c *Core) {
			_, a := queued(c)
			if err := c.q.Remove(a.id); err != nil {
				t.Fatal(err)
			}
		}},
		{"running alloc not in engine", "matcher holds no job", func(c *Core) {
			_, a := running(c)
			if err := c.q.Remove(a.id); err != nil {
				t.Fatal(err)
			}
		}},
		{"unknown engine job", "the core does not know", func(c *Core) {
			_, a := running(c)
			delete(c.byAlloc, a.id)
			g := c.groups["ns/a"]
			g.allocs = nil
		}},
		{"over-committed node", "is not marked overloaded", func(c *Core) {
			c.foreign["n1"] = map[string]Resources{"uid-big": {MilliCPU: 4001}}
			c.foreignNode["uid-big"] = "n1"
		}},
		{"gated count", "gated pods counted", func(c *Core) { c.gatedCount["ns/a"] = 2 }},
		{"foreign index", "indexed on", func(c *Core) { c.foreignNode["f"] = "n1" }},
		{"foreign and member", "also a member", func(c *Core) { c.foreignNode["uid-a0"] = "n0"; c.foreign["n0"]["uid-a0"] = Resources{} }},
		{"unplaced but held", "recorded as unplaced, yet", func(c *Core) {
			_, a := running(c)
			c.setUnplaced(a.id)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := invariantCore(t)
			tc.corrupt(c)
			err := c.CheckInvariants()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckInvariants() = %v, want a violation saying %q", err, tc.want)
			}
			if again := c.CheckInvariants(); again == nil || again.Error() != err.Error() {
				t.Errorf("a second check says otherwise (not deterministic or not read-only):\n%v\n%v", err, again)
			}
		})
	}
}

// The engine starting a job the core cannot read as its allocation is
// reported, and the job is taken out of the engine and asked for again:
// nothing is left holding nodes.
func TestStartedMismatchReportedAndRequeued(t *testing.T) {
	c := invariantCore(t)
	g := c.groups["ns/b"]
	a := g.allocs[0]
	a.slots = append(a.slots, &slot{}) // the engine will place 2 slots, the core expects 3
	c.PodSeen(Pod{UID: "f", Namespace: "x", Name: "f", NodeName: "n0", Done: true}, 2)
	for _, uid := range []string{"uid-a0", "uid-a1"} {
		c.PodSeen(Pod{UID: uid, Namespace: "ns", Name: strings.TrimPrefix(uid, "uid-"), Done: true}, 2)
	}
	c.Tick(3)
	fx := c.Ready()
	if len(fx.Errors) != 1 || fx.Errors[0].Op != "started" || fx.Errors[0].Group != "ns/b" {
		t.Fatalf("errors = %v, want one from started for ns/b", fx.Errors)
	}
	if _, ok := c.m.Info(a.id); ok {
		t.Errorf("the matcher still holds job %d", a.id)
	}
	if _, _, ok := c.q.StateOf(a.id); ok {
		t.Errorf("the queue still holds job %d", a.id)
	}
	if err := c.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if g.queuedPods() != 2 {
		t.Fatalf("group b asks again for %d pods, want 2", g.queuedPods())
	}
	c.Tick(4)
	if fx := c.Ready(); len(fx.Errors) != 0 || g.liveSlots() != 2 {
		t.Fatalf("after the next loop: %d live slots, errors %v; want the group placed", g.liveSlots(), fx.Errors)
	}
}

// A group expecting two billion pods, of which one exists, costs the core
// no memory per pod it expects (pkg/groups caps sizes, but the core must
// stay bounded when driven directly).
func TestHugeGroupBounded(t *testing.T) {
	for _, size := range []int32{2_000_000_000, math.MaxInt32} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			c, err := New(Config{Queue: queue.Config{Policy: queue.Easy}})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				c.NodeSet(Node{Name: fmt.Sprintf("n%d", i), Allocatable: Resources{MilliCPU: 4000, MemoryBytes: 8 << 30}}, 0)
			}
			id := NewGroupID("ns", "huge", size, SourceLabel)
			p := Pod{UID: "u0", Namespace: "ns", Name: "p0", Owned: true, Requests: Resources{MilliCPU: 100}, Labeled: id}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			c.PodSeen(p, 0)
			c.Tick(1)
			v := c.Place(p, id, 1)
			c.Tick(2)
			runtime.ReadMemStats(&after)
			fx := c.Ready()
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
				t.Errorf("the core allocated %d MiB for one pod of a group of %d", grew>>20, size)
			}
			if !v.Final || !strings.Contains(v.Reason, "cannot be placed") {
				t.Errorf("verdict %+v, want the group rejected from its first pod", v)
			}
			if len(fx.Errors) != 0 {
				t.Errorf("internal errors: %v", fx.Errors)
			}
			if err := c.CheckInvariants(); err != nil {
				t.Error(err)
			}
		})
	}
}
