package queue

import "github.com/fluence-sched/fluence/pkg/match"

// request returns the group's jobspec compiled for the matcher, compiling
// it at its first match. A waiting group is matched at many loops; the
// queue already takes its jobspec as fixed once submitted (its slot shapes
// and share are read once), so it is checked and compiled once too.
func (q *Manager) request(e *entry) *match.Request {
	if e.req == nil {
		e.req = q.m.Compile(e.g.Jobspec)
	}
	return e.req
}
