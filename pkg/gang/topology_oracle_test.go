package gang

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// oracleCase is a small cluster of racks with some load, and one group
// that must be within one rack.
type oracleCase struct {
	racks [][]int64 // per rack, each node's free CPUs (cores)
	load  [][]int64 // per rack, each node's CPUs held by other pods
	pods  []int64   // the group's pods' CPUs (cores)
}

// feasible reports, by trying every assignment of the pods to the nodes
// of each rack, whether one rack can hold the whole group now.
func (oc oracleCase) feasible() bool { return someRackHolds(oc.racks, oc.pods) }

// someRackHolds reports, by trying every assignment of the pods' sizes to
// the nodes of each rack (what each has free), whether one rack can hold
// them all.
func someRackHolds(racks [][]int64, pods []int64) bool {
	for _, rack := range racks {
		free := slices.Clone(rack)
		var try func(i int) bool
		try = func(i int) bool {
			if i == len(pods) {
				return true
			}
			for n := range free {
				if free[n] >= pods[i] {
					free[n] -= pods[i]
					if try(i + 1) {
						return true
					}
					free[n] += pods[i]
				}
			}
			return false
		}
		if try(0) {
			return true
		}
	}
	return false
}

func randomOracleCase(rng *rand.Rand) oracleCase {
	var oc oracleCase
	for range 2 + rng.IntN(2) {
		var free, load []int64
		for range 1 + rng.IntN(3) {
			capacity := int64(2 + rng.IntN(7))
			held := int64(rng.IntN(int(capacity)))
			free, load = append(free, capacity-held), append(load, held)
		}
		oc.racks, oc.load = append(oc.racks, free), append(oc.load, load)
	}
	for range 2 + rng.IntN(5) {
		oc.pods = append(oc.pods, int64(1+rng.IntN(4)))
	}
	return oc
}

// TestTopologyPlacementIsExact checks the core against a brute-force
// oracle on small fragmented clusters: a group required within one rack
// is placed now exactly when some rack can hold it now, whatever the mix
// of its pods' sizes; and when placed it is within one rack, with no node
// over-committed.
func TestTopologyPlacementIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	checkRackOracle(t, func() (any, bool, bool, string) {
		oc := randomOracleCase(rng)
		got, rack := placeOracleCase(t, oc)
		return oc, oc.feasible(), got, rack
	})
}

// checkRackOracle runs 600 cases of trial, each a random case, whether a
// brute-force search finds a rack that holds its group, whether the core
// placed it now, and the one rack it went to ("" if several): the core
// must place exactly the groups a rack can hold, each in one rack. The
// cases must test both answers (100 to 500 of them feasible), and, where
// the generator mixes sizes, heterogeneous groups among the feasible.
func checkRackOracle(t *testing.T, trial func() (c any, want, got bool, rack string)) {
	t.Helper()
	const cases = 600
	feasible, placed := 0, 0
	for i := range cases {
		oc, want, got, rack := trial()
		if got != want {
			t.Fatalf("case %d %+v: placed=%v, but one rack can hold it: %v", i, oc, got, want)
		}
		if got && rack == "" {
			t.Fatalf("case %d %+v: placed across racks", i, oc)
		}
		if want {
			feasible++
		}
		if got {
			placed++
		}
	}
	if feasible < 100 || feasible > 500 {
		t.Fatalf("%d of %d cases feasible: the generator no longer tests both answers", feasible, cases)
	}
	t.Logf("%d of %d groups could be placed within one rack; the core placed %d", feasible, cases, placed)
}

// placeOracleCase runs the case on a core and returns whether the group
// was placed now, and the one rack its pods are in ("" if several).
func placeOracleCase(t *testing.T, oc oracleCase) (bool, string) {
	t.Helper()
	const rackKey = "example.com/rack"
	c, err := New(Config{Queue: queue.Config{Policy: queue.Easy}, RunID: "oracle", TopologyLevels: []string{rackKey}})
	if err != nil {
		t.Fatal(err)
	}
	rackOf := map[string]string{}
	for r, rack := range oc.racks {
		for n := range rack {
			name := fmt.Sprintf("r%d-n%d", r, n)
			rackOf[name] = fmt.Sprintf("r%d", r)
			c.NodeSet(Node{Name: name, Labels: map[string]string{rackKey: rackOf[name]},
				Allocatable: Resources{MilliCPU: 1000 * (rack[n] + oc.load[r][n]), MemoryBytes: 8 << 30, Pods: 110}}, 0)
			if held := oc.load[r][n]; held > 0 {
				c.PodSeen(Pod{UID: "load-" + name, Namespace: "other", Name: "load-" + name, NodeName: name,
					Requests: Resources{MilliCPU: 1000 * held}}, 0)
			}
		}
	}
	id := NewGroupID("ns", "g", int32(len(oc.pods)), SourceLabel)
	id.TopologyKey = rackKey
	nodeOf := map[string]string{}
	fw := NewFramework(c, func(p *Pod, node string) error { nodeOf[p.UID] = node; return nil })
	for i, cpu := range oc.pods {
		uid := fmt.Sprintf("g-%d", i)
		fw.Add(Pod{UID: uid, Namespace: "ns", Name: uid, Owned: true, Requests: Resources{MilliCPU: 1000 * cpu}, Labeled: id}, id, 0)
	}
	fw.Run(0)
	if err := c.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if fw.Pending() != 0 {
		return false, ""
	}
	racks := map[string]bool{}
	for _, n := range nodeOf {
		racks[rackOf[n]] = true
	}
	if len(racks) != 1 {
		return true, ""
	}
	return true, rackOf[nodeOf["g-0"]]
}
