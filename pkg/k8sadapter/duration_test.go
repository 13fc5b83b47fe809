package k8sadapter

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/fluence-sched/fluence/pkg/gang"
)

// A declared duration is checked in seconds against the longest the core
// plans in milliseconds, not after it was counted in milliseconds: the
// core's plan then holds exactly what the pod declared, and a duration it
// cannot hold is refused with the limit in seconds, never wrapped round
// into a plan of a moment.
func TestDurationLimitInSeconds(t *testing.T) {
	longest := strconv.FormatInt(MaxDuration, 10)
	tests := []struct {
		name    string
		pod     *podB
		want    int64  // DurationOf
		wantErr string // DurationOf's error, and the group's reason
		// planned is the placed group's planned end in core ticks; -1
		// when it is not placed.
		planned int64
	}{
		{"an hour", makePod("p").annotate(DurationKey, "1h"), 3600, "", 3600 * TicksPerSecond},
		{"the longest", makePod("p").annotate(DurationKey, longest), MaxDuration, "", MaxDuration * TicksPerSecond},
		{"one second more", makePod("p").annotate(DurationKey, strconv.FormatInt(MaxDuration+1, 10)), 0, "longer than " + longest + " s", -1},
		{"within 2^40 s, past it in ms", makePod("p").annotate(DurationKey, "400000h"), 0, "longer than " + longest + " s", -1},
		// 18446744073709552 s is 2^64 ms + 384 ms.
		{"wraps round in ms", makePod("p").annotate(DurationKey, "18446744073709552"), 0, "longer than " + longest + " s", -1},
		// Planned for the core's default hour.
		{"a deadline past the limit is none", makePod("p").deadline(MaxDuration + 1), 0, "", 3600 * TicksPerSecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DurationOf(tt.pod.obj())
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) || got != tt.want {
				t.Fatalf("DurationOf = %d, %v; want %d, error %q", got, err, tt.want, tt.wantErr)
			}
			st := plan(t, tt.pod.req("cpu", "1"))
			if st.PlannedEnd != tt.planned || (tt.wantErr != "" && !strings.Contains(st.Reason, tt.wantErr)) {
				t.Errorf("the core: %s, planned end %d, reason %q; want planned end %d, reason with %q",
					st.Phase, st.PlannedEnd, st.Reason, tt.planned, tt.wantErr)
			}
		})
	}
}

// plan places a one-pod group of the pod at time 0 on a core counting
// milliseconds, as the scheduler's does, and returns the group.
func plan(t *testing.T, pod *podB) gang.GroupStatus {
	t.Helper()
	c, err := gang.New(gang.Config{TicksPerSecond: TicksPerSecond})
	if err != nil {
		t.Fatal(err)
	}
	fw := gang.NewFramework(c, func(*gang.Pod, string) error { return nil })
	c.NodeSet(GraphOptions{}.CoreNode(makeNode("n1").cpu("4").mem("8Gi").res(corev1.ResourcePods, "10").obj()), 0)
	obj := pod.obj()
	obj.UID = "u1"
	p := GraphOptions{}.CorePod(obj, true)
	id := gang.NewGroupID(p.Namespace, "g", 1, gang.SourceLabel)
	p.Labeled = id
	fw.Add(p, id, 0)
	c.Tick(0)
	fw.Run(0)
	s := c.Snapshot(0)
	if len(s.Groups) != 1 {
		t.Fatalf("groups %+v", s.Groups)
	}
	return s.Groups[0]
}
