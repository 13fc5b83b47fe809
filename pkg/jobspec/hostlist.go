package jobspec

import (
	"fmt"
	"strconv"
	"strings"
)

// Hostlist is a compiled RFC 29 hostlist. Membership is answered from the
// compressed form (prefix, id ranges, suffix) without expanding it, so a
// constraint like "node[0-999999999]" costs nothing to hold or to test.
type Hostlist struct {
	exprs []hostExpr
}

// hostExpr is one "prefix[idlist]suffix" expression. A plain name has no
// ids (bracketed is false) and matches only itself.
type hostExpr struct {
	prefix, suffix string
	bracketed      bool
	ids            []hostRange
}

// hostRange is lo..hi printed zero-padded to width digits (0: no padding).
type hostRange struct {
	lo, hi int64
	width  int
}

// ParseHostlist expands an RFC 29 hostlist such as
// "node[0-3,5],login[01-02],single" into names, in order and keeping
// repeats ("foo[1,1]" is "foo1,foo1"). Zero padding is preserved: the width
// of a leading-zero first id applies to the whole idlist ("[00-2]" is
// 00,01,02), and any id written with its own leading zeros keeps its width.
// It fails rather than return more than MaxExpansion names.
func ParseHostlist(s string) ([]string, error) {
	hl, err := CompileHostlist(s)
	if err != nil {
		return nil, err
	}
	return hl.Expand()
}

// CompileHostlist parses a hostlist without expanding it.
func CompileHostlist(s string) (*Hostlist, error) {
	hl := &Hostlist{}
	for _, text := range splitTopLevel(s) {
		if text == "" {
			continue // "" is the empty list; "a,,b" has an empty expression
		}
		e, err := parseHostExpr(text)
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %v", clip(s), err)
		}
		hl.exprs = append(hl.exprs, e)
	}
	return hl, nil
}

// splitTopLevel splits on commas outside square brackets. Unbalanced
// brackets are left for parseHostExpr to report.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func parseHostExpr(text string) (hostExpr, error) {
	open := strings.IndexByte(text, '[')
	if open < 0 {
		if err := checkHostChars(text); err != nil {
			return hostExpr{}, err
		}
		return hostExpr{prefix: text}, nil
	}
	end := strings.IndexByte(text[open:], ']')
	if end < 0 {
		return hostExpr{}, fmt.Errorf("missing ']' in %q", clip(text))
	}
	end += open
	e := hostExpr{prefix: text[:open], suffix: text[end+1:], bracketed: true}
	if err := checkHostChars(e.prefix); err != nil {
		return hostExpr{}, err
	}
	if err := checkHostChars(e.suffix); err != nil {
		return hostExpr{}, err
	}
	idlist := text[open+1 : end]
	if idlist == "" {
		return hostExpr{}, fmt.Errorf("empty brackets in %q", clip(text))
	}
	width := 0
	for i, elem := range strings.Split(idlist, ",") {
		a, b, isRange := strings.Cut(elem, "-")
		lo, err := parseID(a)
		if err != nil {
			return hostExpr{}, err
		}
		hi := lo
		if isRange {
			if hi, err = parseID(b); err != nil {
				return hostExpr{}, err
			}
			if hi < lo {
				return hostExpr{}, fmt.Errorf("range %q is descending", elem)
			}
		}
		w := 0
		if len(a) > 1 && a[0] == '0' {
			w = len(a)
		}
		if i == 0 {
			width = w
		}
		e.ids = append(e.ids, hostRange{lo: lo, hi: hi, width: max(width, w)})
	}
	return e, nil
}

// checkHostChars enforces RFC 29: prefix and suffix are printable,
// non-whitespace ASCII other than brackets and comma.
func checkHostChars(s string) error {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '[' || c == ']' || c == ',' {
			return fmt.Errorf("invalid character %q in %q", rune(c), clip(s))
		}
	}
	return nil
}

// Len returns the number of names in the list (with repeats).
func (hl *Hostlist) Len() int64 {
	if hl == nil {
		return 0
	}
	var n int64
	for _, e := range hl.exprs {
		if !e.bracketed {
			n++
			continue
		}
		for _, r := range e.ids {
			n += r.hi - r.lo + 1
			if n > 1<<62 {
				return n
			}
		}
	}
	return n
}

// Expand returns every name in order, or an error past MaxExpansion.
func (hl *Hostlist) Expand() ([]string, error) {
	n := hl.Len()
	if n > MaxExpansion {
		return nil, fmt.Errorf("hostlist has %d names, more than the limit of %d", n, MaxExpansion)
	}
	out := make([]string, 0, n)
	if hl == nil {
		return out, nil
	}
	for _, e := range hl.exprs {
		if !e.bracketed {
			out = append(out, e.prefix)
			continue
		}
		for _, r := range e.ids {
			for id := r.lo; id <= r.hi; id++ {
				out = append(out, e.prefix+padID(id, r.width)+e.suffix)
			}
		}
	}
	return out, nil
}

// Contains reports whether name is in the list.
func (hl *Hostlist) Contains(name string) bool {
	if hl == nil {
		return false
	}
	for i := range hl.exprs {
		if hl.exprs[i].contains(name) {
			return true
		}
	}
	return false
}

func (e *hostExpr) contains(name string) bool {
	if !e.bracketed {
		return name == e.prefix
	}
	if len(name) <= len(e.prefix)+len(e.suffix) ||
		!strings.HasPrefix(name, e.prefix) || !strings.HasSuffix(name, e.suffix) {
		return false
	}
	digits := name[len(e.prefix) : len(name)-len(e.suffix)]
	id, err := parseID(digits)
	if err != nil {
		return false
	}
	for _, r := range e.ids {
		if id >= r.lo && id <= r.hi && padID(id, r.width) == digits {
			return true
		}
	}
	return false
}

func padID(id int64, width int) string {
	s := strconv.FormatInt(id, 10)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}
