package match

import (
	"fmt"
	"slices"

	"github.com/fluence-sched/fluence/pkg/planner"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// Job is a committed allocation or reservation.
type Job struct {
	ID       int64
	At       int64
	Duration int64
	Reserved bool

	claims []claim
	// planSpans is parallel to claims: the span holding the claim's
	// units, 0 where amt == 0 or an earlier claim's span holds them.
	planSpans []planner.SpanID
	aggs      []aggSpan
	touched   []int32 // every vertex tagged by the job: claims and ancestors
	slots     []SlotPlacement
}

type aggSpan struct {
	v  int32
	id planner.SpanID
}

// commit turns the selector's claims into a job: plan spans on claimed
// vertices, one aggregate span on every inner vertex at or above a claim,
// and tags. All or nothing: on an internal error everything is undone.
func (m *Matcher) commit(id, at, dur int64, reserved bool, claims []claim) (*Job, error) {
	j := &Job{ID: id, At: at, Duration: dur, Reserved: reserved, claims: append([]claim(nil), claims...)}
	j.planSpans = make([]planner.SpanID, len(j.claims))
	if err := m.apply(j); err != nil {
		return nil, err
	}
	return j, nil
}

// apply writes the job's spans and tags.
func (m *Matcher) apply(j *Job) error {
	g := m.g
	// A job claims a pool once per slot it packs there; one span holding
	// their sum plans the same and costs one planner update, not one per
	// slot. sum[i] is the total of the claims whose span is claim i's.
	u := &m.acc
	u.reset(m)
	sum := slices.Grow(m.spanSum[:0], len(j.claims))[:len(j.claims)]
	m.spanSum = sum
	for i, cl := range j.claims {
		j.planSpans[i], sum[i] = 0, 0
		if cl.amt == 0 {
			continue
		}
		if u.stamp[cl.v] == u.epoch {
			sum[u.index[cl.v]] += cl.amt
			continue
		}
		u.stamp[cl.v], u.index[cl.v] = u.epoch, int32(i)
		sum[i] = cl.amt
	}
	for i, cl := range j.claims {
		if sum[i] == 0 {
			continue
		}
		p := m.plan[cl.v]
		if p == nil {
			p = planner.New(g.Vertex(cl.v).Size)
			m.plan[cl.v] = p
		}
		sid, err := p.Add(j.At, j.Duration, sum[i])
		if err != nil {
			for k := 0; k < i; k++ {
				if j.planSpans[k] != 0 {
					_ = m.plan[j.claims[k].v].Remove(j.planSpans[k])
					j.planSpans[k] = 0
				}
			}
			return fmt.Errorf("match: job %d: internal error: claim on %s: %w", j.ID, g.Path(cl.v), err)
		}
		j.planSpans[i] = sid
	}
	// Accumulate what the job uses in each touched subtree.
	acc := m.accumulate(j)
	// Sized once: growing them vertex by vertex was much of a commit's
	// garbage.
	j.touched = slices.Grow(j.touched[:0], len(acc.order))
	j.aggs = slices.Grow(j.aggs[:0], len(acc.order))
	for _, v := range acc.order {
		j.touched = append(j.touched, v)
		i := m.inner[v]
		if i < 0 {
			continue
		}
		a := m.agg[i]
		if a == nil {
			a = planner.NewMulti(m.totalsOf(v))
			m.agg[i] = a
		}
		vec := acc.vec(v)
		vec[m.jobDim] = 1
		m.forgetStart(i)
		sid, err := a.Add(j.At, j.Duration, vec)
		if err != nil {
			m.unapply(j)
			return fmt.Errorf("match: job %d: internal error: aggregate of %s: %w", j.ID, g.Path(v), err)
		}
		j.aggs = append(j.aggs, aggSpan{v: v, id: sid})
	}
	if !j.Reserved {
		m.maxAllocAt = max(m.maxAllocAt, j.At)
	}
	for _, v := range j.touched {
		m.tags[v]++
		if m.tags[v] == 1 {
			m.setTouched(v, true)
		}
		if !j.Reserved {
			m.allocs[v]++
		}
	}
	return nil
}

// unapply removes everything apply wrote (spans and, when tagged, tags).
func (m *Matcher) unapply(j *Job) {
	for i, cl := range j.claims {
		if j.planSpans[i] != 0 {
			_ = m.plan[cl.v].Remove(j.planSpans[i])
		}
	}
	for _, a := range j.aggs {
		i := m.inner[a.v]
		m.forgetStart(i)
		_ = m.agg[i].Remove(a.id)
	}
	j.aggs = j.aggs[:0]
}

func (m *Matcher) untag(j *Job) {
	for _, v := range j.touched {
		m.tags[v]--
		if m.tags[v] == 0 {
			m.setTouched(v, false)
		}
		if !j.Reserved {
			m.allocs[v]--
		}
	}
	j.touched = j.touched[:0]
}

// usage accumulates per-vertex use vectors for one job. The matcher keeps
// one and reuses it: every commit used to build a map and grow a slice,
// which was a large part of the simulator's garbage.
type usage struct {
	m     *Matcher
	order []int32 // touched vertices in first-touch order
	// index[v] is v's position in order while stamp[v] == epoch.
	index []int32
	stamp []uint32
	epoch uint32
	vecs  []int64
}

func (u *usage) vec(v int32) []int64 {
	i := int(u.index[v])
	return u.vecs[i*u.m.dims : (i+1)*u.m.dims]
}

func (u *usage) at(v int32) []int64 {
	if u.stamp[v] == u.epoch {
		return u.vec(v)
	}
	u.stamp[v] = u.epoch
	u.index[v] = int32(len(u.order))
	u.order = append(u.order, v)
	n := len(u.vecs)
	u.vecs = slices.Grow(u.vecs, u.m.dims)[:n+u.m.dims]
	clear(u.vecs[n:])
	return u.vec(v)
}

// reset empties u for the next job.
func (u *usage) reset(m *Matcher) {
	if u.m == nil {
		n := m.g.Len()
		u.m, u.index, u.stamp = m, make([]int32, n), make([]uint32, n)
	}
	u.order, u.vecs = u.order[:0], u.vecs[:0]
	u.epoch++
	if u.epoch == 0 { // wrapped
		clear(u.stamp)
		u.epoch = 1
	}
}

// accumulate computes, for the claimed vertices and all their ancestors,
// the units of each dimension the job uses in their subtrees, in m.acc
// (valid until the next call).
func (m *Matcher) accumulate(j *Job) *usage {
	u := &m.acc
	u.reset(m)
	g := m.g
	var buf [16]int64
	add := buf[:0]
	if m.dims <= len(buf) {
		add = buf[:m.dims]
	} else {
		add = make([]int64, m.dims)
	}
	for _, cl := range j.claims {
		clear(add)
		vx := g.Vertex(cl.v)
		switch {
		case cl.subtree && m.inner[cl.v] >= 0:
			copy(add, m.totalsOf(cl.v))
			add[m.jobDim] = 0
		default:
			add[m.dimOf[vx.Type]] = cl.amt
		}
		for a := cl.v; a != resource.None; a = g.Parent(a) {
			vec := u.at(a)
			for d, n := range add {
				vec[d] += n
			}
		}
	}
	return u
}

// release drops a job's spans and tags.
func (m *Matcher) release(j *Job) {
	m.unapply(j)
	m.untag(j)
}
