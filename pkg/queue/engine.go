package queue

import (
	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// engine is what the queue asks of its matcher (a *match.Matcher). It is
// an interface so that tests can make any call fail and check that the
// queue and the matcher still agree afterwards (Check).
type engine interface {
	Match(op match.Op, js *jobspec.Jobspec, id, now int64) (*match.Result, error)
	MatchRequest(op match.Op, rq *match.Request, id, now int64) (*match.Result, error)
	FitsRequest(rq *match.Request, id, now int64) (*match.Result, error)
	ReserveFrom(js *jobspec.Jobspec, id, now, from int64) (*match.Result, error)
	Place(js *jobspec.Jobspec, id, now int64, slotNodes []int32) (*match.Result, error)
	Cancel(id int64) error
	PartialCancel(id int64, vertices []int32) (bool, error)
	Extend(id, duration int64) error
	MarkDown(v int32) error
	MarkUp(v int32) error

	Info(id int64) (match.JobInfo, bool)
	JobIDs() []int64
	Compile(js *jobspec.Jobspec) *match.Request
	Share(js *jobspec.Jobspec) float64
	Policy() match.Policy
	Graph() *resource.Graph
}

// cancel releases what the matcher holds for id. gone says whether it
// holds nothing for id afterwards, which is what the queue records
// whatever the error: the matcher refuses to cancel a job it does not
// hold, and a failure that left the job in place must leave it counted.
func (q *Manager) cancel(id int64) (gone bool, err error) {
	err = q.m.Cancel(id)
	if err == nil {
		return true, nil
	}
	_, held := q.m.Info(id)
	return !held, err
}
