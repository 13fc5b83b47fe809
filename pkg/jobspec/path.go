package jobspec

import (
	"strconv"
	"strings"
)

// path is a field path built while walking a document. It is a linked list
// so descending costs one small allocation and rendering happens only when an
// error is reported.
type path struct {
	parent *path
	key    string
	index  int
	isIdx  bool
}

// pathKeep is how many elements are kept at each end of a very long path.
const pathKeep = 24

// root is the empty path (the document itself).
var root *path

func (p *path) k(key string) *path { return &path{parent: p, key: key} }
func (p *path) i(index int) *path  { return &path{parent: p, index: index, isIdx: true} }

func (p *path) String() string {
	if p == nil {
		return ""
	}
	var elems []*path
	for q := p; q != nil; q = q.parent {
		elems = append(elems, q)
	}
	var b strings.Builder
	for j := len(elems) - 1; j >= 0; j-- {
		if len(elems) > 2*pathKeep && j == len(elems)-1-pathKeep {
			// Only pathological nesting gets here; keep both ends readable.
			b.WriteString("[...]")
			j = pathKeep - 1
		}
		e := elems[j]
		switch {
		case e.isIdx:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.index))
			b.WriteByte(']')
		case plainKey(e.key):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e.key)
		default:
			// Keys that would make the path ambiguous are quoted.
			b.WriteByte('[')
			b.WriteString(strconv.Quote(e.key))
			b.WriteByte(']')
		}
	}
	return b.String()
}

func plainKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// errorf builds an *Error at p.
func errorf(p *path, msg string) *Error { return &Error{Path: p.String(), Msg: msg} }
