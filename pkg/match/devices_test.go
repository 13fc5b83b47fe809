package match

import (
	"testing"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// deviceGraph builds cluster -> node -> core pool + one device vertex per
// entry of mems (the device's memory in GiB, as a property), named
// dev0, dev1, ... across the nodes.
func deviceGraph(t *testing.T, mems ...[]string) *resource.Graph {
	t.Helper()
	g := resource.New()
	tc, tn, tcore, tdev := g.Intern("cluster"), g.Intern("node"), g.Intern("core"), g.Intern("device")
	uniq := int64(0)
	add := func(v resource.Vertex, parent int32) int32 {
		v.UniqID = uniq
		uniq++
		id, err := g.AddVertex(v, parent)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	root := add(resource.Vertex{Type: tc, Basename: "cluster", Rank: -1, Size: 1}, resource.None)
	k := int64(0)
	for i, ms := range mems {
		n := add(resource.Vertex{Type: tn, Basename: "node", ID: int64(i), Rank: int64(i), Size: 1}, root)
		add(resource.Vertex{Type: tcore, Basename: "core", Rank: int64(i), Size: 8}, n)
		for _, m := range ms {
			add(resource.Vertex{Type: tdev, Basename: "dev", ID: k, Rank: int64(i), Size: 1, Properties: map[string]string{"mem": m}}, n)
			k++
		}
	}
	if err := g.Finalize(); err != nil {
		t.Fatal(err)
	}
	return g
}

func deviceJob(slots int64, devs ...*jobspec.ResourceBuilder) *jobspec.Jobspec {
	with := append([]*jobspec.ResourceBuilder{jobspec.R("core", 1)}, devs...)
	return jobspec.New(jobspec.Slot(slots, "pod").With(with...)).Duration(10).Obj()
}

func devices(n int64, c *jobspec.Constraint) *jobspec.ResourceBuilder {
	return jobspec.R("device", n).Requires(c)
}

// A leaf request with requires takes only the vertices it admits, and
// leaves the others free for the next job.
func TestDeviceRequiresTakesOnlyAdmittedVertices(t *testing.T) {
	for _, policy := range []string{"first", "low", "high", "lonode", "hinode"} {
		t.Run(policy, func(t *testing.T) {
			m, err := New(deviceGraph(t, []string{"40", "80", "40", "80"}), Options{Policy: policy})
			if err != nil {
				t.Fatal(err)
			}
			big := jobspec.Properties("mem=80")
			steps := []struct {
				js   *jobspec.Jobspec
				want Status
			}{
				{deviceJob(1, devices(2, big)), Allocated},
				{deviceJob(1, devices(1, big)), Busy},
				{deviceJob(1, devices(2, jobspec.Properties("mem=40"))), Allocated},
				{deviceJob(1, devices(1, nil)), Busy},
			}
			for i, s := range steps {
				r, err := m.Match(Allocate, s.js, int64(i+1), 0)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if r.Status != s.want {
					t.Fatalf("step %d: status %v (%s), want %v", i, r.Status, r.Reason, s.want)
				}
			}
		})
	}
}

// A slot goes to the node whose devices its requests admit, each request
// of a pod taking its own devices.
func TestDeviceRequestsChooseTheNode(t *testing.T) {
	m, err := New(deviceGraph(t, []string{"40", "40", "80"}, []string{"80", "40", "80"}), Options{Policy: "first"})
	if err != nil {
		t.Fatal(err)
	}
	js := deviceJob(1, devices(2, jobspec.Properties("mem=80")), devices(1, jobspec.Properties("mem=40")))
	r, err := m.Match(Allocate, js, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != Allocated || len(r.Slots) != 1 || r.Slots[0].Node != "node1" {
		t.Fatalf("placed %+v (%s), want one slot on node1", r.Slots, r.Reason)
	}
	// The same again fits nowhere: node1's devices are taken, node0 has
	// one 80.
	r, err = m.Match(Allocate, js, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != Busy || r.Explain.VerticesRefused == 0 {
		t.Fatalf("second job %v (%s), want busy with refused vertices counted", r.Status, r.Reason)
	}
	// On the empty graph it is satisfiable; asking for three 80s per pod
	// is not.
	r, err = m.Match(Satisfiability, deviceJob(1, devices(3, jobspec.Properties("mem=80"))), 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != Unsatisfiable {
		t.Fatalf("three 80s on one node: %v, want unsatisfiable", r.Status)
	}
}
