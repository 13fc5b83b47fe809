package resource

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"
)

// WriteJGF writes g as JGF (RFC 40), the inverse of ReadJGF.
//
// Nodes are written in index order, one per line, with every metadata field
// in the order Fluxion's JGF writer uses (type, basename, name, id,
// uniq_id, rank, exclusive, unit, size) followed by status (0 up, 1 down, as
// Fluxion's reader expects), paths (containment plus Vertex.Paths) and, when
// non-empty, properties. The outer node id is the uniq_id, which must
// therefore be unique. There is one edge per parent -> child pair, tagged
// with subsystem "containment". Map keys are sorted, so the output is a
// function of the graph alone. g must be finalized.
func WriteJGF(w io.Writer, g *Graph) error {
	if g == nil || !g.Finalized() {
		return errors.New("resource: WriteJGF: graph is not finalized")
	}
	n := g.Len()
	var seen intIndex
	for i := range n {
		u := g.vertices[i].UniqID
		if prev, dup := seen.get(u); dup {
			return fmt.Errorf("resource: WriteJGF: uniq_id %d is used by both %s and %s",
				u, g.Path(prev), g.Path(int32(i)))
		}
		seen.put(u, int32(i), i)
	}

	var (
		buf   = make([]byte, 0, 80<<10) // flushed to w every 64 KiB
		path  []byte
		lens  []int // lens[d]: length of path up to the vertex at depth d
		keys  []string
		props []string
	)
	buf = append(buf, `{"graph":{"nodes":[`...)
	for i := range n {
		v := &g.vertices[i]
		// Containment path, built incrementally: in pre-order the parent's
		// path is always a prefix of the buffer.
		d := int(g.depth[i])
		if d == 0 {
			path = path[:0]
		} else {
			path = path[:lens[d-1]]
		}
		path = append(path, '/')
		nameStart := len(path)
		path = appendDisplayName(path, v)
		if d >= len(lens) {
			lens = append(lens, 0)
		}
		lens[d] = len(path)

		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, "\n{\"id\":\""...)
		buf = strconv.AppendInt(buf, v.UniqID, 10)
		buf = append(buf, `","metadata":{"type":`...)
		buf = appendJSONString(buf, g.typeNames[v.Type])
		buf = append(buf, `,"basename":`...)
		buf = appendJSONString(buf, v.Basename)
		buf = append(buf, `,"name":"`...)
		buf = appendJSONStringBody(buf, path[nameStart:])
		buf = append(buf, `","id":`...)
		buf = strconv.AppendInt(buf, v.ID, 10)
		buf = append(buf, `,"uniq_id":`...)
		buf = strconv.AppendInt(buf, v.UniqID, 10)
		buf = append(buf, `,"rank":`...)
		buf = strconv.AppendInt(buf, v.Rank, 10)
		buf = append(buf, `,"exclusive":false,"unit":`...)
		buf = appendJSONString(buf, v.Unit)
		buf = append(buf, `,"size":`...)
		buf = strconv.AppendInt(buf, v.Size, 10)
		buf = append(buf, `,"status":`...)
		if v.Status == Down {
			buf = append(buf, '1')
		} else {
			buf = append(buf, '0')
		}
		buf = append(buf, `,"paths":{"containment":"`...)
		buf = appendJSONStringBody(buf, path)
		buf = append(buf, '"')
		if len(v.Paths) > 0 {
			keys = sortedKeys(keys[:0], v.Paths)
			for _, k := range keys {
				if k == "containment" {
					continue // always the computed path
				}
				buf = append(buf, ',')
				buf = appendJSONString(buf, k)
				buf = append(buf, ':')
				buf = appendJSONString(buf, v.Paths[k])
			}
		}
		buf = append(buf, '}')
		if len(v.Properties) > 0 {
			props = sortedKeys(props[:0], v.Properties)
			buf = append(buf, `,"properties":{`...)
			for j, k := range props {
				if j > 0 {
					buf = append(buf, ',')
				}
				buf = appendJSONString(buf, k)
				buf = append(buf, ':')
				buf = appendJSONString(buf, v.Properties[k])
			}
			buf = append(buf, '}')
		}
		buf = append(buf, "}}"...)
		if len(buf) >= 64<<10 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, "\n],\"edges\":["...)
	for i := 1; i < n; i++ {
		if i > 1 {
			buf = append(buf, ',')
		}
		buf = append(buf, "\n{\"source\":\""...)
		buf = strconv.AppendInt(buf, g.vertices[g.parent[i]].UniqID, 10)
		buf = append(buf, `","target":"`...)
		buf = strconv.AppendInt(buf, g.vertices[i].UniqID, 10)
		buf = append(buf, `","metadata":{"subsystem":"containment"}}`...)
		if len(buf) >= 64<<10 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, "\n]}}\n"...)
	_, err := w.Write(buf)
	return err
}

// appendDisplayName appends v.DisplayName() without allocating.
func appendDisplayName(dst []byte, v *Vertex) []byte {
	if v.Name != "" {
		return append(dst, v.Name...)
	}
	dst = append(dst, v.Basename...)
	if v.ID >= 0 {
		dst = strconv.AppendInt(dst, v.ID, 10)
	}
	return dst
}

func sortedKeys(dst []string, m map[string]string) []string {
	for k := range m {
		dst = append(dst, k)
	}
	slices.Sort(dst)
	return dst
}

// appendJSONString appends s as a quoted JSON string.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendJSONStringBody(dst, s)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendJSONStringBody appends the escaped contents of a JSON string:
// quotes, backslashes and control characters are escaped and invalid UTF-8
// becomes U+FFFD, as encoding/json does.
func appendJSONStringBody[S ~string | ~[]byte](dst []byte, s S) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	return append(dst, s[start:]...)
}
