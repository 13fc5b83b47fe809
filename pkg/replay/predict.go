package replay

import (
	"time"

	"github.com/fluence-sched/fluence/pkg/sim"
)

// EndGap is the simulator's stand-in for the time between the ends of one
// Job's pods: the Launcher ends them one status write after another, a
// few milliseconds apart on a local API server.
const EndGap = 0.005

// Predict runs the simulator's prediction of s on the workload as
// replayed (Compress), so that everything kube-scheduler does in wall
// time (an attempt's few milliseconds, back-off of 1 to 10 s) keeps its
// proportion to the compressed jobs; the result, like Run's, is in the
// replayed seconds. With no model, it returns nil and the reason.
func Predict(s Scheduler, w *sim.Workload, stall time.Duration) (*sim.Result, string, error) {
	model, why, err := s.Model()
	if err != nil || model == nil {
		return nil, why, err
	}
	r, err := sim.Run(w, model, sim.Options{StallWindow: stall.Seconds(), PodReleaseGap: EndGap})
	if err != nil {
		return nil, "", err
	}
	r.LowerBound = sim.LowerBound(w)
	return r, "", nil
}
