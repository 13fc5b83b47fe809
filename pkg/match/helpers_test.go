package match

import (
	"testing"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// newMatcher generates a graph and a matcher for it.
func newMatcher(t testing.TB, spec, policy string) *Matcher {
	t.Helper()
	g, err := resource.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(g, Options{Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// slotCores is slot[n]->core[c] with a duration.
func slotCores(n, c int64, dur int64) *jobspec.Jobspec {
	return jobspec.New(jobspec.Slot(n, "task").With(jobspec.R("core", c))).Duration(dur).Obj()
}

// nodesX is node[n] exclusive -> slot[1] -> core[1].
func nodesX(n int64, dur int64) *jobspec.Jobspec {
	return jobspec.New(jobspec.R("node", n).Exclusive().With(
		jobspec.Slot(1, "task").With(jobspec.R("core", 1)))).Duration(dur).Obj()
}
