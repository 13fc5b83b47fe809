//go:build schedperf

package schedperf

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Where a measured attempt's time goes. kube-scheduler times an attempt
// from just before it updates its snapshot to the end of the Bind call,
// over two goroutines: the scheduling cycle (PreFilter to Permit), then
// the binding cycle (WaitOnPermit, PreBind, Bind). The probe cuts each
// measured pod's last attempt, the one that bound it, at the calls it
// intercepts, so that a slow P99 can be put down to deciding, to waiting
// for the binding goroutine, or to the Binding itself.

// segments are one bound pod's last attempt, cut at the probe's calls.
type segments struct {
	// cycle: PreFilter's start to Permit's return (the scheduling cycle
	// after the snapshot: every plugin's PreFilter to Permit)
	cycle time.Duration
	// handoff: Permit's return to PreBind's return (the binding goroutine
	// starting, WaitOnPermit, PreBind)
	handoff time.Duration
	// bind: PreBind's return to PostBind (the Bind plugins: for fluence,
	// its Bindings' limiter and the API call; for in-tree, DefaultBinder)
	bind time.Duration
}

// marks are the times the probe saw one attempt reach.
type marks struct{ permit, preBind time.Time }

// noteSegments records pod's last attempt when it is measured (bound after
// every pod before the barrier was); the caller holds the probe's lock.
func (r *probeRun) noteSegments(uid types.UID, now time.Time) {
	m, ok := r.marks[uid]
	delete(r.marks, uid)
	if !ok || r.initPods < 0 || r.bound < r.initPods {
		return
	}
	r.segments = append(r.segments, segments{
		cycle:   m.permit.Sub(r.cycleStart[uid]),
		handoff: m.preBind.Sub(m.permit),
		bind:    now.Sub(m.preBind),
	})
}

// segmentLine renders the measured pods' segments, P50/P99/max ms each,
// and what the attempt histogram's mean holds beyond them (the snapshot
// update before PreFilter): "" when nothing was measured.
func segmentLine(r *probeRun) string {
	if len(r.segments) == 0 {
		return ""
	}
	var cyc, hand, bind, whole []float64
	var total float64
	for _, s := range r.segments {
		cyc, hand, bind = append(cyc, ms(s.cycle)), append(hand, ms(s.handoff)), append(bind, ms(s.bind))
		whole = append(whole, ms(s.cycle+s.handoff+s.bind))
		total += whole[len(whole)-1]
	}
	show := func(v []float64) string {
		st := summarize(v)
		return fmt.Sprintf("%.1f/%.1f/%.1f", st.p50, st.p99, v[len(v)-1])
	}
	var sb strings.Builder
	// The histogram's P99 is interpolated inside a bucket (128 to 256 ms,
	// say); the probe's own figure is each attempt's, exactly.
	fmt.Fprintf(&sb, "attempt %s = cycle %s, handoff %s, bind %s (%d pods)", show(whole), show(cyc), show(hand), show(bind), len(r.segments))
	if c := r.attempts["scheduled"]; c.total == uint64(len(r.segments)) {
		fmt.Fprintf(&sb, "; attempt mean %.1f, of it before PreFilter %.1f", 1e3*c.sum/float64(c.total), 1e3*c.sum/float64(c.total)-total/float64(len(r.segments)))
	}
	return sb.String()
}

// pooledExact renders the measured pods' attempts of every run together,
// as the probe timed them: P50/P99/max ms and how many.
func pooledExact(runs []*probeRun) string {
	var v []float64
	for _, r := range runs {
		for _, s := range r.segments {
			v = append(v, ms(s.cycle+s.handoff+s.bind))
		}
	}
	if len(v) == 0 {
		return "-"
	}
	st := summarize(v)
	return fmt.Sprintf("%.1f/%.1f/%.1f (%d)", st.p50, st.p99, v[len(v)-1], len(v))
}
