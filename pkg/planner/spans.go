package planner

// spanRec is one span. dur == 0 marks a removed span (a tombstone); live
// spans always have dur >= 1.
type spanRec[T any] struct {
	id         SpanID
	start, dur int64
	val        T
}

// spanTable maps span IDs to spans. IDs are handed out in increasing order
// and appended, so recs stays sorted by ID and lookup is a binary search.
// Removal leaves a tombstone that is compacted away once tombstones
// outnumber live spans, which keeps removal amortized O(1) and the table
// a single small allocation for the common planner with a few spans.
type spanTable[T any] struct {
	recs []spanRec[T]
	last SpanID // highest ID handed out
	dead int32  // tombstones in recs
}

// add appends a span and returns its ID and slot.
func (s *spanTable[T]) add(start, dur int64, val T) (SpanID, int) {
	s.last++
	s.recs = append(s.recs, spanRec[T]{id: s.last, start: start, dur: dur, val: val})
	return s.last, len(s.recs) - 1
}

// find returns the slot of a live span, or -1.
func (s *spanTable[T]) find(id SpanID) int {
	lo, hi := 0, len(s.recs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.recs[m].id < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(s.recs) || s.recs[lo].id != id || s.recs[lo].dur == 0 {
		return -1
	}
	return lo
}

// kill removes the span in slot i and reports whether tombstones now
// outnumber live spans, in which case the caller should compact.
func (s *spanTable[T]) kill(i int) bool {
	var zero T
	s.recs[i].dur = 0
	s.recs[i].val = zero
	s.dead++
	// Trailing tombstones cost nothing to drop; this makes LIFO use free.
	n := len(s.recs)
	for n > 0 && s.recs[n-1].dur == 0 {
		n--
		s.dead--
	}
	s.recs = s.recs[:n]
	return int(s.dead)*2 > n
}

// compact drops all tombstones. Slots of live spans change; move, if not
// nil, is told about every relocation so parallel arrays can follow.
func (s *spanTable[T]) compact(move func(from, to int)) {
	n := len(s.recs)
	j := 0
	for k := range n {
		if s.recs[k].dur == 0 {
			continue
		}
		if j != k {
			s.recs[j] = s.recs[k]
			if move != nil {
				move(k, j)
			}
		}
		j++
	}
	clear(s.recs[j:n])
	s.recs = s.recs[:j]
	s.dead = 0
}

// live returns the number of live spans.
func (s *spanTable[T]) live() int { return len(s.recs) - int(s.dead) }

// reset drops every span but keeps the ID sequence.
func (s *spanTable[T]) reset() {
	s.recs = nil
	s.dead = 0
}
