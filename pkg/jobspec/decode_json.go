package jobspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// decodeJSON reads one JSON object with encoding/json's tokenizer rather than
// json.Unmarshal, because Unmarshal silently keeps the last of two duplicate
// keys and we want to reject them, and because we want int64 and float64
// kept apart (2 and 2.0 are different values in a round trip).
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	jd := &jsonDecoder{dec: dec, data: data}
	v, err := jd.value(root, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, jd.syntax(err, "unexpected data after the top-level object")
	}
	return v, nil
}

type jsonDecoder struct {
	dec  *json.Decoder
	data []byte
	b    budget
}

// syntax turns a tokenizer error into an *Error with line and column.
func (jd *jsonDecoder) syntax(err error, fallback string) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		line, col := lineCol(jd.data, se.Offset)
		return &Error{Msg: fmt.Sprintf("invalid JSON at line %d, column %d: %s", line, col, se.Error())}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return &Error{Msg: "invalid JSON: unexpected end of input"}
	case err == nil:
		line, col := lineCol(jd.data, jd.dec.InputOffset())
		return &Error{Msg: fmt.Sprintf("invalid JSON at line %d, column %d: %s", line, col, fallback)}
	}
	return &Error{Msg: "invalid JSON: " + err.Error()}
}

func (jd *jsonDecoder) value(p *path, depth int) (any, error) {
	if err := jd.b.take(p, depth); err != nil {
		return nil, err
	}
	tok, err := jd.dec.Token()
	if err != nil {
		return nil, jd.syntax(err, "")
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return jd.object(p, depth)
		case '[':
			return jd.array(p, depth)
		}
		return nil, jd.syntax(nil, "unexpected "+t.String())
	case json.Number:
		return jsonNumber(p, string(t))
	case string:
		return t, checkString(p, t)
	case bool:
		return t, nil
	case nil:
		return nil, nil
	}
	return nil, jd.syntax(nil, fmt.Sprintf("unexpected token %v", tok))
}

func (jd *jsonDecoder) object(p *path, depth int) (any, error) {
	m := map[string]any{}
	for jd.dec.More() {
		tok, err := jd.dec.Token()
		if err != nil {
			return nil, jd.syntax(err, "")
		}
		key, ok := tok.(string)
		if !ok {
			return nil, jd.syntax(nil, "object key is not a string")
		}
		kp := p.k(key)
		if err := checkString(kp, key); err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup {
			return nil, errorf(kp, "duplicate key")
		}
		v, err := jd.value(kp, depth+1)
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
	if _, err := jd.dec.Token(); err != nil { // the closing brace
		return nil, jd.syntax(err, "")
	}
	return m, nil
}

func (jd *jsonDecoder) array(p *path, depth int) (any, error) {
	list := []any{}
	for jd.dec.More() {
		v, err := jd.value(p.i(len(list)), depth+1)
		if err != nil {
			return nil, err
		}
		list = append(list, v)
	}
	if _, err := jd.dec.Token(); err != nil { // the closing bracket
		return nil, jd.syntax(err, "")
	}
	return list, nil
}

// jsonNumber keeps integers written without a fraction or exponent as int64
// and everything else as float64.
func jsonNumber(p *path, s string) (any, error) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, errorf(p, fmt.Sprintf("number %s is out of range", s))
	}
	return checkFloat(p, f)
}

// lineCol converts a byte offset into 1-based line and column numbers.
func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}
