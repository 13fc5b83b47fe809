package jobspec

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// IDSet is a set of non-negative integer ids (RFC 22), kept as sorted,
// disjoint, non-adjacent closed ranges so that "0-1000000000" costs two
// words and membership is a binary search.
type IDSet struct {
	ranges []idRange
}

type idRange struct{ lo, hi int64 }

// maxIDDigits bounds the digits of one id so parsing never overflows int64.
const maxIDDigits = 18

// ParseIDSet parses an RFC 22 idset such as "0-3,5,7-9", optionally in
// square brackets ("[0-3]"). The empty string is the empty set. Ids may be
// listed in any order and may repeat; RFC 22 asks writers for ascending,
// unique ids without leading zeros, but a reader loses nothing by accepting
// more. A descending range ("3-1") is an error, as is anything but digits,
// commas and hyphens.
func ParseIDSet(s string) (*IDSet, error) {
	body := s
	if strings.HasPrefix(body, "[") {
		if !strings.HasSuffix(body, "]") || len(body) < 2 {
			return nil, fmt.Errorf("idset %q: unbalanced brackets", clip(s))
		}
		body = body[1 : len(body)-1]
	}
	set := &IDSet{}
	if body == "" {
		return set, nil
	}
	for _, elem := range strings.Split(body, ",") {
		lo, hi, err := parseIDRange(elem)
		if err != nil {
			return nil, fmt.Errorf("idset %q: %v", clip(s), err)
		}
		set.ranges = append(set.ranges, idRange{lo, hi})
	}
	set.normalize()
	return set, nil
}

// parseIDRange parses "N" or "N-M" with N <= M.
func parseIDRange(elem string) (lo, hi int64, err error) {
	a, b, isRange := strings.Cut(elem, "-")
	if lo, err = parseID(a); err != nil {
		return 0, 0, err
	}
	if !isRange {
		return lo, lo, nil
	}
	if hi, err = parseID(b); err != nil {
		return 0, 0, err
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("range %q is descending", elem)
	}
	return lo, hi, nil
}

func parseID(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("empty id")
	}
	if len(s) > maxIDDigits {
		return 0, fmt.Errorf("id %q is too large", clip(s))
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("invalid character %q", rune(c))
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}

// normalize sorts the ranges and merges overlapping or adjacent ones.
func (s *IDSet) normalize() {
	sort.Slice(s.ranges, func(i, j int) bool { return s.ranges[i].lo < s.ranges[j].lo })
	out := s.ranges[:0]
	for _, r := range s.ranges {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			if r.hi > out[n-1].hi {
				out[n-1].hi = r.hi
			}
			continue
		}
		out = append(out, r)
	}
	s.ranges = out
}

// Add merges other into s.
func (s *IDSet) Add(other *IDSet) {
	if other == nil || len(other.ranges) == 0 {
		return
	}
	s.ranges = append(s.ranges, other.ranges...)
	s.normalize()
}

// Contains reports whether id is in the set.
func (s *IDSet) Contains(id int64) bool {
	if s == nil {
		return false
	}
	i := sort.Search(len(s.ranges), func(i int) bool { return s.ranges[i].hi >= id })
	return i < len(s.ranges) && s.ranges[i].lo <= id
}

// Count returns the number of ids in the set.
func (s *IDSet) Count() int64 {
	if s == nil {
		return 0
	}
	var n int64
	for _, r := range s.ranges {
		n += r.hi - r.lo + 1
	}
	return n
}

// IDs expands the set in ascending order. It fails for sets larger than
// MaxExpansion rather than allocate without bound.
func (s *IDSet) IDs() ([]int64, error) {
	n := s.Count()
	if n > MaxExpansion {
		return nil, fmt.Errorf("idset has %d ids, more than the limit of %d", n, MaxExpansion)
	}
	out := make([]int64, 0, n)
	if s == nil {
		return out, nil
	}
	for _, r := range s.ranges {
		for id := r.lo; id <= r.hi; id++ {
			out = append(out, id)
		}
	}
	return out, nil
}

// String renders the set in RFC 22 form without brackets, e.g. "0-3,5".
func (s *IDSet) String() string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	for i, r := range s.ranges {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(r.lo, 10))
		if r.hi > r.lo {
			b.WriteByte('-')
			b.WriteString(strconv.FormatInt(r.hi, 10))
		}
	}
	return b.String()
}
