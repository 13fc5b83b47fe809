package match

import (
	"testing"

	"github.com/fluence-sched/fluence/pkg/jobspec"
)

// Share sums, per resource type requested, the units needed over the
// graph's total: on 4 nodes of 4 cores (16 cores), 3 slots of 2 cores need
// 6/16 of the cores; 2 exclusive nodes need 2/4 of the nodes and one core
// each, 2/16.
func TestShare(t *testing.T) {
	m := newMatcher(t, "cluster[1]->node[4]->core[4]", "lonode")
	tests := []struct {
		name string
		js   *jobspec.Jobspec
		want float64
	}{
		{"slots of cores", slotCores(3, 2, 10), 6.0 / 16},
		{"exclusive nodes", nodesX(2, 10), 2.0/4 + 2.0/16},
		{"invalid", &jobspec.Jobspec{}, 0},
		{"nil", nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.Share(tc.js); got < tc.want-1e-12 || got > tc.want+1e-12 {
				t.Errorf("share %g, want %g", got, tc.want)
			}
		})
	}
}
