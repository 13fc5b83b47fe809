package resource

import (
	"fmt"

	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a small strict JSON reader over a byte slice, used by the JGF
// reader instead of encoding/json: it decodes a 600,000-vertex graph several
// times faster, returns strings as sub-slices of the input when they hold no
// escapes, and lets the reader report errors with the node position and id.
//
// It accepts exactly RFC 8259 JSON (like encoding/json, invalid UTF-8 inside
// strings is replaced by U+FFFD). It never panics on any input.
type scanner struct {
	data []byte
	pos  int
}

// maxJSONDepth bounds the nesting of skipped values.
const maxJSONDepth = 10000

// syntaxError is a JSON syntax error at a byte offset.
type syntaxError struct {
	off int
	msg string
}

func (s *scanner) errorf(off int, format string, args ...any) error {
	return &syntaxError{off: off, msg: fmt.Sprintf(format, args...)}
}

// describe renders a syntax error with line and column.
func (e *syntaxError) describe(data []byte) string {
	line, col := 1, 1
	for i := 0; i < e.off && i < len(data); i++ {
		if data[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("syntax error at line %d, column %d (offset %d): %s", line, col, e.off, e.msg)
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("syntax error at offset %d: %s", e.off, e.msg)
}

func (s *scanner) skipWS() {
	if s.pos < len(s.data) && s.data[s.pos] > ' ' {
		return // fast path: most tokens are not preceded by white space
	}
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// cur returns the byte at s.pos, 0 at end of input.
func (s *scanner) cur() byte {
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

// peek skips white space and returns the next byte, 0 at end of input.
func (s *scanner) peek() byte {
	s.skipWS()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// unexpected builds the error for an unexpected byte (or end) at s.pos.
func (s *scanner) unexpected(what string) error {
	if s.pos >= len(s.data) {
		return s.errorf(s.pos, "unexpected end of input, expected %s", what)
	}
	c := s.data[s.pos]
	if c >= 0x20 && c < 0x7f {
		return s.errorf(s.pos, "unexpected %q, expected %s", rune(c), what)
	}
	return s.errorf(s.pos, "unexpected byte 0x%02x, expected %s", c, what)
}

// kindOf names the JSON kind of a value starting with c, for type errors.
func kindOf(c byte) string {
	switch c {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// strVal is a decoded string: b is either a sub-slice of the input starting
// at off, or (off < 0) a freshly allocated unescaped copy.
type strVal struct {
	b   []byte
	off int
}

// str reads a string; s.pos must be at '"'.
func (s *scanner) str() (strVal, error) {
	start := s.pos
	if start >= len(s.data) || s.data[start] != '"' {
		return strVal{}, s.unexpected("string")
	}
	d := s.data
	i := start + 1
	// Eight bytes at a time: find the first quote, backslash, control or
	// non-ASCII byte. In each term below the lowest flagged byte is exact
	// (borrows only disturb bytes above a true hit), so the lowest flag of
	// their union is the first special byte.
	for i < len(d) && !strSpecial[d[i]] {
		i++
	}
	if i < len(d) && d[i] == '"' {
		s.pos = i + 1
		return strVal{b: d[start+1 : i], off: start + 1}, nil
	}
	// Escapes, non-ASCII bytes, control characters or the end of input.
	ascii := true
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			b := d[start+1 : i]
			if !ascii && !utf8.Valid(b) {
				return s.slowStr(start)
			}
			s.pos = i + 1
			return strVal{b: b, off: start + 1}, nil
		case c == '\\':
			return s.slowStr(start)
		case c < 0x20:
			s.pos = i
			return strVal{}, s.errorf(i, "control character 0x%02x in string", c)
		case c >= 0x80:
			ascii = false
		}
		i++
	}
	s.pos = len(d)
	return strVal{}, s.errorf(start, "unterminated string")
}

// strSpecial marks the bytes that end the fast path of str: the closing
// quote, backslash, control characters and non-ASCII bytes.
var strSpecial = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c < 0x20 || c >= 0x80 || c == '"' || c == '\\'
	}
	return t
}()

// slowStr decodes a string with escapes or invalid UTF-8 starting at the
// quote at start.
func (s *scanner) slowStr(start int) (strVal, error) {
	out := make([]byte, 0, 32)
	i := start + 1
	for i < len(s.data) {
		c := s.data[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return strVal{b: out, off: -1}, nil
		case c < 0x20:
			s.pos = i
			return strVal{}, s.errorf(i, "control character 0x%02x in string", c)
		case c == '\\':
			if i+1 >= len(s.data) {
				s.pos = len(s.data)
				return strVal{}, s.errorf(start, "unterminated string")
			}
			e := s.data[i+1]
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
				i += 2
			case 'b':
				out = append(out, '\b')
				i += 2
			case 'f':
				out = append(out, '\f')
				i += 2
			case 'n':
				out = append(out, '\n')
				i += 2
			case 'r':
				out = append(out, '\r')
				i += 2
			case 't':
				out = append(out, '\t')
				i += 2
			case 'u':
				r, ok := hex4(s.data, i+2)
				if !ok {
					s.pos = i
					return strVal{}, s.errorf(i, "invalid \\u escape")
				}
				i += 6
				if utf16.IsSurrogate(r) {
					r2, ok2 := rune(-1), false
					if i+1 < len(s.data) && s.data[i] == '\\' && s.data[i+1] == 'u' {
						r2, ok2 = hex4(s.data, i+2)
					}
					if ok2 {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r = d
							i += 6
						} else {
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				s.pos = i
				return strVal{}, s.errorf(i, "invalid escape \\%c", rune(e))
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(s.data[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, s.data[i:i+size]...)
			}
			i += size
		}
	}
	s.pos = len(s.data)
	return strVal{}, s.errorf(start, "unterminated string")
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number validates a JSON number at s.pos and reports whether it is written
// as an integer (no fraction, no exponent).
func (s *scanner) number() (start, end int, integer bool, err error) {
	start = s.pos
	i := start
	d := s.data
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		s.pos = i
		return 0, 0, false, s.unexpected("digit")
	}
	integer = true
	if i < len(d) && d[i] == '.' {
		integer = false
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			s.pos = i
			return 0, 0, false, s.unexpected("digit after decimal point")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		integer = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			s.pos = i
			return 0, 0, false, s.unexpected("digit in exponent")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	s.pos = i
	return start, i, integer, nil
}

// literal consumes true, false or null.
func (s *scanner) literal() error {
	d := s.data[s.pos:]
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(d) >= len(lit) && string(d[:len(lit)]) == lit {
			s.pos += len(lit)
			return nil
		}
	}
	return s.unexpected("value")
}

// skipValue consumes and validates any JSON value.
func (s *scanner) skipValue(depth int) error {
	switch c := s.peek(); c {
	case '"':
		_, err := s.str()
		return err
	case '{':
		if depth >= maxJSONDepth {
			return s.errorf(s.pos, "nesting deeper than %d", maxJSONDepth)
		}
		return s.object(func(key []byte) error { return s.skipValue(depth + 1) })
	case '[':
		if depth >= maxJSONDepth {
			return s.errorf(s.pos, "nesting deeper than %d", maxJSONDepth)
		}
		return s.array(func(int) error { return s.skipValue(depth + 1) })
	case 't', 'f', 'n':
		return s.literal()
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			_, _, _, err := s.number()
			return err
		}
		return s.unexpected("value")
	}
}

// object reads an object at s.pos, calling fn for each member with s.pos at
// the member's value; fn must consume the value.
func (s *scanner) object(fn func(key []byte) error) error {
	if s.peek() != '{' {
		return s.unexpected("'{'")
	}
	s.pos++
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.unexpected("string (object key)")
		}
		k, err := s.str()
		if err != nil {
			return err
		}
		if s.peek() != ':' {
			return s.unexpected("':' after object key")
		}
		s.pos++
		s.skipWS()
		if err := fn(k.b); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.unexpected("',' or '}' after object member")
		}
	}
}

// objKey reads the key of the next member of an object whose '{' has been
// consumed; first tells whether no member has been read yet. It returns
// ok == false once it has consumed the closing '}'. With ok, s.pos is at the
// member's value, which the caller must consume.
func (s *scanner) objKey(first bool) (key []byte, ok bool, err error) {
	// Fast path for compact JSON: [","] '"' plain-key '"' ':'.
	d, j := s.data, s.pos
	if !first && j < len(d) && d[j] == ',' {
		j++
	}
	if (first || j > s.pos) && j < len(d) && d[j] == '"' {
		k := j + 1
		for k < len(d) && !strSpecial[d[k]] {
			k++
		}
		if k+1 < len(d) && d[k] == '"' && d[k+1] == ':' {
			s.pos = k + 2
			s.skipWS()
			return d[j+1 : k], true, nil
		}
	}
	c := s.peek()
	switch {
	case c == '}':
		s.pos++
		return nil, false, nil
	case !first && c == ',':
		s.pos++
		c = s.peek()
	case !first:
		return nil, false, s.unexpected("',' or '}' after object member")
	}
	if c != '"' {
		return nil, false, s.unexpected("string (object key)")
	}
	k, err := s.str()
	if err != nil {
		return nil, false, err
	}
	if s.peek() != ':' {
		return nil, false, s.unexpected("':' after object key")
	}
	s.pos++
	s.skipWS()
	return k.b, true, nil
}

// arrNext moves to the next element of an array whose '[' has been
// consumed; first tells whether no element has been read yet. It returns
// false once it has consumed the closing ']'.
func (s *scanner) arrNext(first bool) (bool, error) {
	c := s.peek()
	switch {
	case c == ']':
		s.pos++
		return false, nil
	case !first && c == ',':
		s.pos++
		s.skipWS()
	case !first:
		return false, s.unexpected("',' or ']' after array element")
	}
	return true, nil
}

// array reads an array at s.pos, calling fn with the index of each element
// and s.pos at the element; fn must consume it.
func (s *scanner) array(fn func(i int) error) error {
	if s.peek() != '[' {
		return s.unexpected("'['")
	}
	s.pos++
	if s.peek() == ']' {
		s.pos++
		return nil
	}
	for i := 0; ; i++ {
		s.skipWS()
		if err := fn(i); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.unexpected("',' or ']' after array element")
		}
	}
}

// fieldError is a semantic error about one field of a node or edge; the
// reader prefixes it with the element's position.
type fieldError struct {
	field string
	msg   string
}

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

// typeError consumes the value at s.pos and returns a fieldError saying it
// should have been of kind want (or a syntax error if the value is invalid).
func (s *scanner) typeError(field, want string) error {
	got := kindOf(s.peek())
	if err := s.skipValue(0); err != nil {
		return err
	}
	return &fieldError{field, "must be " + want + ", got " + got}
}

// isNull consumes a null at s.pos and reports whether there was one.
func (s *scanner) isNull() bool {
	d := s.data[s.pos:]
	if len(d) >= 4 && string(d[:4]) == "null" {
		s.pos += 4
		return true
	}
	return false
}

// stringField reads a string value for field.
func (s *scanner) stringField(field string) (strVal, error) {
	if s.peek() != '"' {
		return strVal{}, s.typeError(field, "a string")
	}
	return s.str()
}

// intField reads an integer value for field.
func (s *scanner) intField(field string) (int64, error) {
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		return 0, s.typeError(field, "an integer")
	}
	// Fast path: a short integer followed by a delimiter.
	d := s.data
	i, neg := s.pos, false
	if d[i] == '-' {
		neg = true
		i++
	}
	j := i
	var v int64
	for j < len(d) && j-i < 18 && d[j] >= '0' && d[j] <= '9' {
		v = v*10 + int64(d[j]-'0')
		j++
	}
	if j > i && j-i < 18 && (d[i] != '0' || j == i+1) &&
		(j == len(d) || (d[j] != '.' && d[j] != 'e' && d[j] != 'E' && (d[j] < '0' || d[j] > '9'))) {
		s.pos = j
		if neg {
			v = -v
		}
		return v, nil
	}
	start, end, integer, err := s.number()
	if err != nil {
		return 0, err
	}
	if !integer {
		return 0, &fieldError{field, "must be an integer, got " + string(s.data[start:end])}
	}
	v, err = strconv.ParseInt(string(s.data[start:end]), 10, 64)
	if err != nil {
		return 0, &fieldError{field, "integer " + string(s.data[start:end]) + " out of range"}
	}
	return v, nil
}

// boolField reads a boolean value for field.
func (s *scanner) boolField(field string) (bool, error) {
	d := s.data[s.pos:]
	switch {
	case len(d) >= 4 && string(d[:4]) == "true":
		s.pos += 4
		return true, nil
	case len(d) >= 5 && string(d[:5]) == "false":
		s.pos += 5
		return false, nil
	}
	return false, s.typeError(field, "a boolean")
}

// stringFields walks an object whose values must all be strings, calling fn
// with each key and value. A value of another type is a field error: the
// first is returned once the whole object is read, so the rest of the
// vertex is still checked; a syntax error ends the walk at once. null means
// absent.
func (s *scanner) stringFields(field string, fn func(key []byte, v strVal)) error {
	if s.peek() != '{' {
		if s.isNull() {
			return nil
		}
		return s.typeError(field, "an object")
	}
	var ferr error
	err := s.object(func(key []byte) error {
		if s.peek() != '"' {
			return keep(&ferr, s.typeError(field+"."+string(key), "a string"))
		}
		v, err := s.str()
		if err != nil {
			return err
		}
		fn(key, v)
		return nil
	})
	if err != nil {
		return err
	}
	return ferr
}

// stringMap reads an object of strings (properties) into a map; nil when
// empty or null.
func (s *scanner) stringMap(field string) (map[string]string, error) {
	var m map[string]string
	err := s.stringFields(field, func(key []byte, v strVal) {
		if m == nil {
			m = map[string]string{}
		}
		m[string(key)] = string(v.b)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}
