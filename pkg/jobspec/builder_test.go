package jobspec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuilder(t *testing.T) {
	js, err := New(
		R("node", 2).Exclusive().With(
			Slot(4, "task").With(R("core", 8), R("gpu", 1)),
		),
	).Duration(3600).Constraint(Properties("batch")).Build()
	if err != nil {
		t.Fatal(err)
	}
	want := &Jobspec{
		Version: VersionCanonical,
		Resources: []*Resource{{
			Type: "node", Count: Fixed(2), Exclusive: ExclusiveTrue,
			With: []*Resource{{
				Type: "slot", Count: Fixed(4), Label: "task",
				With: []*Resource{{Type: "core", Count: Fixed(8)}, {Type: "gpu", Count: Fixed(1)}},
			}},
		}},
		Tasks:      []Task{{Command: []string{"true"}, Slot: "task", Count: TaskCount{PerSlot: 1}}},
		Duration:   3600,
		Constraint: &Constraint{Op: OpProperties, Values: []string{"batch"}},
		Attributes: sysAttrs("duration", int64(3600), "constraints", map[string]any{"properties": []any{"batch"}}),
	}
	if diff := cmp.Diff(want, js); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	roundTrip(t, js)
}

func TestBuilderVariants(t *testing.T) {
	// A heterogeneous pod group: two slot kinds side by side, ranges, units,
	// explicit tasks, user and system attributes.
	js, err := New(
		Slot(1, "driver").With(R("core", 2), R("memory", 4).Unit("GB")),
		Slot(1, "worker").Range(2, 16, '*', 2).With(R("core", 4), R("gpu", 1)),
	).Task(Task{Command: []string{"drive"}, Slot: "driver", Count: TaskCount{PerSlot: 1}}).
		Task(Task{Command: []string{"work"}, Slot: "worker", Count: TaskCount{Total: 16}}).
		System("queue", "gpu").User("labels", map[string]string{"app": "x"}).
		User("ids", []string{"a", "b"}).User("n", 3).
		Build()
	if err != nil {
		t.Fatal(err)
	}
	if js.Queue() != "gpu" || len(js.Tasks) != 2 || js.SlotByLabel("worker").Count.Lattice(11) != 8 {
		t.Errorf("got %+v", js)
	}
	roundTrip(t, js)

	// Version 1 from the builder.
	v1, err := New(R("node", 4).Exclusive().With(Slot(1, "task").With(R("core", 1)))).Version(1).Duration(60).Build()
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, v1)

	// The builder does not check; Build does, with Parse's paths.
	_, err = New(R("node", 1).With(Slot(1, "s").With(R("core", 1).Shared()))).Build()
	if je, ok := err.(*Error); !ok || je.Path != "resources[0].with[0].with[0].exclusive" {
		t.Errorf("got %v", err)
	}
	_, err = New(R("node", 1).With(R("core", 1))).Build()
	if je, ok := err.(*Error); !ok || je.Path != "resources" {
		t.Errorf("no slot: got %v", err)
	}
	_, err = New(Slot(1, "s").With(R("core", 1))).Constraint(Or(Hosts("n[2-1]"))).Build()
	if je, ok := err.(*Error); !ok || je.Path != "attributes.system.constraints.or[0].hostlist[0]" {
		t.Errorf("bad hostlist: got %v", err)
	}
	r := R("core", 1).Label("c").ID("0").Res()
	if r.Label != "c" || r.ID != "0" || r.IsSlot() {
		t.Errorf("resource %+v", r)
	}
}
