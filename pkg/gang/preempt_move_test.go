package gang

import (
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// TestMoveOncePerHour: a group moved is no candidate for a move again
// until MoveEvery (an hour unless configured) has passed.
func TestMoveOncePerHour(t *testing.T) {
	for _, tc := range []struct {
		name    string
		every   int64
		now     int64
		forgets bool
	}{
		{"default, within the hour", 0, 3599, false},
		{"default, an hour on", 0, 3600, true},
		{"configured, within", 600, 599, false},
		{"configured, past", 600, 600, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{Queue: queue.Config{Policy: queue.Easy}, RunID: "move"})
			if err != nil {
				t.Fatal(err)
			}
			p := &Preemption{MoveEvery: tc.every}
			g := &group{id: NewGroupID("ns", "m", 1, SourceLabel)}
			c.moves[g.id.Key] = &move{at: 0}
			c.now = tc.now
			c.forgetMoves(p)
			if _, kept := c.moves[g.id.Key]; kept == tc.forgets {
				t.Fatalf("at %d the move is kept: %v, want %v", tc.now, kept, !tc.forgets)
			}
		})
	}
}
