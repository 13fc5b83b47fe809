package resource

import (
	"fmt"
	"strconv"
)

// MaxGenerateVertices caps the number of vertices a Generate spec may
// describe.
const MaxGenerateVertices = 50_000_000

// maxSpecDepth bounds the nesting of chains and brace groups in a spec.
const maxSpecDepth = 1000

// Generate builds a regular graph from a one-line spec such as
//
//	cluster[1]->rack[2]->node[64]->socket[2]->{core[16],gpu[2],memory[4]:16GB}
//
// The grammar (white space between tokens is ignored):
//
//	spec  = chain
//	chain = item [ "->" chain ]
//	item  = TYPE "[" COUNT "]" [ ":" SIZE [ UNIT ] ]
//	      | "{" chain { "," chain } "}"
//	TYPE  = [a-z_][a-z0-9_]*      COUNT, SIZE = decimal integer >= 1
//	UNIT  = [A-Za-z]+
//
// "a->b" puts COUNT b vertices under each a vertex; a brace group puts
// several sibling chains under the previous item, and may only be followed
// by the end of the spec, "," or an enclosing "}". The first item must be a
// single TYPE[1] vertex, the root. SIZE sets the pool size of each vertex
// (default 1) and UNIT its unit.
//
// Vertices are created in pre-order (a vertex, then its whole subtree, then
// its next sibling) and uniq_id is the creation index. Names are left to the
// default basename + id, with basename = type. Vertices of type node, and
// vertices not below any node, get ids numbered per type across the whole
// graph (node0..node127 across racks); vertices below a node get ids
// numbered per type within that node (core0..core31 across both sockets of
// a node). Each node and everything below it has the node's id as rank;
// other vertices have rank -1.
//
// Errors give the 1-based column, e.g.
// `graph spec: at column 17: expected "]"`. See docs/graph-spec.md.
func Generate(spec string) (*Graph, error) {
	root, total, err := parseSpec(spec)
	if err != nil {
		return nil, err
	}
	return generate(root, total)
}

// MustGenerate is Generate for specs known to be valid; it panics on error.
func MustGenerate(spec string) *Graph {
	g, err := Generate(spec)
	if err != nil {
		panic(err)
	}
	return g
}

// specItem is one TYPE[COUNT] item of a parsed spec.
type specItem struct {
	typ   string
	count int64
	size  int64
	unit  string
	col   int // 1-based column of the type name
	kids  []*specItem
}

type specParser struct {
	s     string
	pos   int
	depth int
}

func (p *specParser) errAt(pos int, format string, args ...any) error {
	return fmt.Errorf("graph spec: at column %d: "+format, append([]any{pos + 1}, args...)...)
}

func (p *specParser) ws() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r', '\v', '\f':
			p.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (p *specParser) peek() byte {
	p.ws()
	if p.pos >= len(p.s) {
		return 0
	}
	return p.s[p.pos]
}

// found names what is at the current position, for error messages.
func (p *specParser) found() string {
	if p.pos >= len(p.s) {
		return "end of spec"
	}
	if c := p.s[p.pos]; c >= 0x80 || c < 0x20 {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return strconv.QuoteRune(rune(p.s[p.pos]))
}

// parseSpec parses a spec into its root item and the total vertex count.
func parseSpec(spec string) (*specItem, int64, error) {
	p := &specParser{s: spec}
	if p.peek() != 0 && !isTypeStart(p.s[p.pos]) {
		if p.s[p.pos] == '{' {
			return nil, 0, p.errAt(p.pos, "the root must be a single TYPE[1] item, not a group")
		}
		return nil, 0, p.errAt(p.pos, "expected a type name, found %s", p.found())
	}
	if p.pos >= len(p.s) {
		return nil, 0, p.errAt(p.pos, "empty spec")
	}
	items, err := p.chain(false)
	if err != nil {
		return nil, 0, err
	}
	root := items[0]
	if root.count != 1 {
		return nil, 0, p.errAt(root.col-1, "the root must have count 1 (a single root), got %d", root.count)
	}
	total, err := countVertices(p, items, 1, 0)
	if err != nil {
		return nil, 0, err
	}
	return root, total, nil
}

// countVertices adds up the vertices of items, each repeated mult times.
func countVertices(p *specParser, items []*specItem, mult, total int64) (int64, error) {
	for _, it := range items {
		m := mult * it.count // both <= MaxGenerateVertices: no overflow
		total += m
		if m > MaxGenerateVertices || total > MaxGenerateVertices {
			return 0, p.errAt(it.col-1, "too many vertices: the spec describes more than %d", MaxGenerateVertices)
		}
		var err error
		if total, err = countVertices(p, it.kids, m, total); err != nil {
			return 0, err
		}
	}
	return total, nil
}

func isTypeStart(c byte) bool { return c == '_' || (c >= 'a' && c <= 'z') }
func isTypeChar(c byte) bool  { return isTypeStart(c) || (c >= '0' && c <= '9') }
func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isLetter(c byte) bool    { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// chain parses chain = item [ "->" chain ] and returns its top items (one,
// or several when the chain is a brace group).
func (p *specParser) chain(inGroup bool) ([]*specItem, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxSpecDepth {
		return nil, p.errAt(p.pos, "spec nested deeper than %d levels", maxSpecDepth)
	}
	c := p.peek()
	if c == '{' {
		items, err := p.group()
		if err != nil {
			return nil, err
		}
		switch c := p.peek(); {
		case c == 0 || (inGroup && (c == ',' || c == '}')):
			return items, nil
		case inGroup:
			return nil, p.errAt(p.pos, `expected "," or "}" after "}", found %s`, p.found())
		default:
			return nil, p.errAt(p.pos, `expected end of spec after "}", found %s`, p.found())
		}
	}
	it, err := p.item()
	if err != nil {
		return nil, err
	}
	switch c := p.peek(); {
	case c == '-':
		if p.pos+1 >= len(p.s) || p.s[p.pos+1] != '>' {
			return nil, p.errAt(p.pos, `expected "->"`)
		}
		p.pos += 2
		kids, err := p.chain(inGroup)
		if err != nil {
			return nil, err
		}
		it.kids = kids
	case c == 0 || (inGroup && (c == ',' || c == '}')):
	case inGroup:
		return nil, p.errAt(p.pos, `expected "->", "," or "}", found %s`, p.found())
	default:
		return nil, p.errAt(p.pos, `expected "->" or end of spec, found %s`, p.found())
	}
	return []*specItem{it}, nil
}

// group parses "{" chain { "," chain } "}".
func (p *specParser) group() ([]*specItem, error) {
	p.pos++ // '{'
	var items []*specItem
	for {
		if c := p.peek(); c != '{' && (c == 0 || !isTypeStart(c)) {
			return nil, p.errAt(p.pos, `expected a type name or "{", found %s`, p.found())
		}
		chain, err := p.chain(true)
		if err != nil {
			return nil, err
		}
		items = append(items, chain...)
		switch p.peek() {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return items, nil
		default:
			return nil, p.errAt(p.pos, `expected "," or "}", found %s`, p.found())
		}
	}
}

// item parses TYPE "[" COUNT "]" [ ":" SIZE [ UNIT ] ].
func (p *specParser) item() (*specItem, error) {
	c := p.peek()
	if c == 0 || !isTypeStart(c) {
		return nil, p.errAt(p.pos, `expected a type name or "{", found %s`, p.found())
	}
	start := p.pos
	for p.pos < len(p.s) && isTypeChar(p.s[p.pos]) {
		p.pos++
	}
	it := &specItem{typ: p.s[start:p.pos], size: 1, col: start + 1}
	if p.peek() != '[' {
		return nil, p.errAt(p.pos, `expected "[", found %s`, p.found())
	}
	p.pos++
	n, err := p.number("count")
	if err != nil {
		return nil, err
	}
	it.count = n
	if p.peek() != ']' {
		return nil, p.errAt(p.pos, `expected "]", found %s`, p.found())
	}
	p.pos++
	if p.peek() == ':' {
		p.pos++
		if it.size, err = p.number("size"); err != nil {
			return nil, err
		}
		p.ws()
		u := p.pos
		for p.pos < len(p.s) && isLetter(p.s[p.pos]) {
			p.pos++
		}
		it.unit = p.s[u:p.pos]
	}
	return it, nil
}

// number parses a decimal integer >= 1 and <= MaxGenerateVertices (counts)
// or <= 1<<53 (sizes).
func (p *specParser) number(what string) (int64, error) {
	if c := p.peek(); !isDigit(c) {
		return 0, p.errAt(p.pos, "expected a %s (a positive integer), found %s", what, p.found())
	}
	start := p.pos
	limit := int64(MaxGenerateVertices)
	if what == "size" {
		limit = 1 << 53
	}
	var n int64
	for p.pos < len(p.s) && isDigit(p.s[p.pos]) {
		if n <= limit {
			n = n*10 + int64(p.s[p.pos]-'0')
		}
		p.pos++
	}
	if n > limit {
		return 0, p.errAt(start, "%s %s is too large (at most %d)", what, p.s[start:p.pos], limit)
	}
	if n < 1 {
		return 0, p.errAt(start, "%s must be at least 1, got %d", what, n)
	}
	return n, nil
}

// generate builds the graph of a parsed spec.
func generate(root *specItem, total int64) (*Graph, error) {
	g := New()
	// Intern types in pre-order of the spec, which is the order in which
	// generation first meets them.
	var intern func(items []*specItem)
	intern = func(items []*specItem) {
		for _, it := range items {
			g.Intern(it.typ)
			intern(it.kids)
		}
	}
	intern([]*specItem{root})
	g.vertices = make([]Vertex, 0, total)
	g.parent = make([]int32, 0, total)
	gs := &genState{
		g:      g,
		global: make([]int64, g.NumTypes()),
	}
	gs.nodeType, gs.hasNode = g.LookupType("node")
	if err := gs.gen([]*specItem{root}, None, nil, -1); err != nil {
		return nil, err
	}
	if err := g.Finalize(); err != nil {
		return nil, err
	}
	return g, nil
}

type genState struct {
	g        *Graph
	uniq     int64
	global   []int64   // next global id per type
	scopes   [][]int64 // per-node id counters, by node nesting level
	nodeType TypeID
	hasNode  bool
}

// gen creates count copies of each item (and their subtrees) under parent.
// local holds the per-type counters of the enclosing node (nil above nodes)
// and rank its rank.
func (gs *genState) gen(items []*specItem, parent int32, local []int64, rank int64) error {
	for _, it := range items {
		t, _ := gs.g.LookupType(it.typ)
		isNode := gs.hasNode && t == gs.nodeType
		for range it.count {
			v := Vertex{Type: t, Basename: it.typ, UniqID: gs.uniq, Size: it.size, Unit: it.unit, Rank: rank}
			gs.uniq++
			kidLocal, kidRank := local, rank
			switch {
			case isNode:
				v.ID = gs.global[t]
				gs.global[t]++
				v.Rank = v.ID
				kidLocal, kidRank = gs.scope(local), v.ID
			case local != nil:
				v.ID = local[t]
				local[t]++
			default:
				v.ID = gs.global[t]
				gs.global[t]++
			}
			idx, err := gs.g.AddVertex(v, parent)
			if err != nil {
				return err
			}
			if len(it.kids) > 0 {
				if err := gs.gen(it.kids, idx, kidLocal, kidRank); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// scope returns zeroed per-type counters for a node nested inside the node
// whose counters are outer (nil for a top-level node). Counters are reused
// across sibling nodes.
func (gs *genState) scope(outer []int64) []int64 {
	level := 0
	for l, s := range gs.scopes {
		if len(outer) > 0 && len(s) > 0 && &s[0] == &outer[0] {
			level = l + 1
			break
		}
	}
	if outer == nil {
		level = 0
	}
	for len(gs.scopes) <= level {
		gs.scopes = append(gs.scopes, make([]int64, gs.g.NumTypes()))
	}
	s := gs.scopes[level]
	clear(s)
	return s
}
