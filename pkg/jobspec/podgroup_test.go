package jobspec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPodGroup(t *testing.T) {
	rs, slots, err := PodGroup([]PodShape{{Cores: 2}, {Cores: 1, GPU: 1}, {Cores: 2}, {Cores: 2, MemoryMiB: 512}})
	if err != nil {
		t.Fatal(err)
	}
	want := []ShapeSlots{{"shape0", []int{0, 2}}, {"shape1", []int{1}}, {"shape2", []int{3}}}
	if diff := cmp.Diff(want, slots); diff != "" {
		t.Fatalf("slots (-want +got):\n%s", diff)
	}
	js, err := New(rs...).Duration(60).Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(js.Resources) != 3 || js.Resources[0].Count.Min != 2 || js.Resources[2].With[1].Unit != "MiB" {
		t.Fatalf("resources: %+v", js.Resources)
	}
	for _, bad := range [][]PodShape{nil, {{}}, {{Cores: -1}}} {
		if _, _, err := PodGroup(bad); err == nil || !strings.Contains(err.Error(), "pod") {
			t.Errorf("%v: got %v", bad, err)
		}
	}
}
