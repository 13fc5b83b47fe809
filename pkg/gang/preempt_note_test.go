package gang

import "testing"

// The messages fluence's preemption writes into its victims'
// DisruptionTarget condition name the preemptor, and say whether a pod
// went alone; a restarted core reads both back. Other schedulers'
// messages name no preemptor of fluence's.
func TestPreemptorOf(t *testing.T) {
	g := &group{id: GroupID{Key: "ns/h:job-7"}, priority: 100000}
	for _, tc := range []struct {
		name, note string
		by         string
		single     bool
	}{
		{"whole group", preemptedByPrefix + g.id.Key + " (priority 100000), which needs its nodes to start; pod group ns/b (priority 10) is evicted whole", g.id.Key, false},
		{"single pods", preemptedByPrefix + g.id.Key + " (priority 100000), which needs node n3 to start; pod group ns/b (priority 10, " + singleNote + ") loses its pods there and runs on without them", g.id.Key, true},
		{"kube-scheduler's", "Preempted by pod 0f0e... on node n1", "", false},
		{"empty key", preemptedByPrefix + " (priority 1)", "", false},
		{"no priority", preemptedByPrefix + "ns/h", "", false},
		{"nothing", "", "", false},
	} {
		by, single := preemptorOf(tc.note)
		if by != tc.by || single != tc.single {
			t.Errorf("%s: preemptorOf = %q, %v; want %q, %v", tc.name, by, single, tc.by, tc.single)
		}
	}
}
