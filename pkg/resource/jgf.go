package resource

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// JGF (JSON Graph Format, RFC 40) reading. See docs/reference/fluxion.md
// section 2 for the format and the defaults applied here; WriteJGF is the
// inverse.
//
// The reader is lenient where Fluence-generated graphs need it:
//
//   - metadata.paths may be absent (structure comes from the edges only);
//   - edges without metadata.subsystem are containment edges; edges of
//     other subsystems are dropped;
//   - two-way edges are accepted: an edge whose relation (or
//     metadata.name value) is "in", an edge whose target is an ancestor of
//     its source by containment path, and a repeat or pure reverse of an
//     edge already read are all dropped;
//   - graph.edges may be absent, null for optional fields means absent, an
//     empty name means the default name (Vertex.Name ""), and unknown keys
//     are ignored.
//
// Everything else that Fluxion would reject, and a few things it would
// silently accept (a second containment parent, a containment cycle, a
// duplicate uniq_id, a non-integer size), is an error naming the node or
// edge by position and id.

// ReadJGF reads a JGF document from r and returns the finalized graph.
func ReadJGF(r io.Reader) (*Graph, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("jgf: read: %w", err)
	}
	return ParseJGF(data)
}

// ReadJGFFile reads a JGF file and returns the finalized graph. Errors name
// the file.
func ReadJGFFile(path string) (*Graph, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	g, err := ParseJGF(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return g, nil
}

// ParseJGF parses a JGF document and returns the finalized graph.
func ParseJGF(data []byte) (*Graph, error) {
	r := &jgfReader{s: scanner{data: data}}
	g, err := r.read()
	if err != nil {
		var se *syntaxError
		if errors.As(err, &se) {
			return nil, errors.New("jgf: " + se.describe(data))
		}
		return nil, err
	}
	return g, nil
}

// span locates a string: off >= 0 is an offset into the input, off < 0 is
// -(offset+1) into the reader's side buffer. n < 0 means absent.
type span struct {
	off int
	n   int
}

var noSpan = span{n: -1}

// intIndex maps int64 keys to int32 values: dense small keys go to a slice,
// others to a map.
type intIndex struct {
	dense []int32 // value+1; 0 = absent
	m     map[int64]int32
}

func (x *intIndex) get(k int64) (int32, bool) {
	if k >= 0 && k < int64(len(x.dense)) && x.dense[k] != 0 {
		return x.dense[k] - 1, true
	}
	v, ok := x.m[k]
	return v, ok
}

// put stores k -> v; count is how many keys are stored so far, bounding
// the dense slice to a small multiple of it.
func (x *intIndex) put(k int64, v int32, count int) {
	if k >= 0 && k <= int64(2*count+1024) {
		if k >= int64(len(x.dense)) {
			x.dense = slices.Grow(x.dense, int(k)+1-len(x.dense))
			x.dense = x.dense[:cap(x.dense)]
		}
		x.dense[k] = v + 1
		return
	}
	if x.m == nil {
		x.m = map[int64]int32{}
	}
	x.m[k] = v
}

type jgfReader struct {
	s scanner

	verts []Vertex // Type holds an index into ltypes until build
	outer []span   // outer id of each node
	cpath []span   // containment path of each node, noSpan if absent
	side  []byte

	ltypes   []string
	ltypeIdx map[string]TypeID
	lastType TypeID
	hasLast  bool
	strs     map[string]string

	numIDs intIndex         // canonical decimal outer ids
	strIDs map[string]int32 // other outer ids
	uniqs  intIndex

	nodesDone bool
	edgesOff  int // offset of a graph.edges array met before graph.nodes, or -1

	parent     []int32
	parentEdge []int32
}

// text returns the bytes of a span.
func (r *jgfReader) text(sp span) []byte {
	if sp.n < 0 {
		return nil
	}
	if sp.off >= 0 {
		return r.s.data[sp.off : sp.off+sp.n]
	}
	o := -sp.off - 1
	return r.side[o : o+sp.n]
}

func (r *jgfReader) spanOf(v strVal) span {
	if v.off >= 0 {
		return span{off: v.off, n: len(v.b)}
	}
	o := len(r.side)
	r.side = append(r.side, v.b...)
	return span{off: -o - 1, n: len(v.b)}
}

// nodeRef names node i for messages: graph.nodes[i] (id "x").
func (r *jgfReader) nodeRef(i int32) string {
	return fmt.Sprintf("graph.nodes[%d] (id %s)", i, strconv.Quote(string(r.text(r.outer[i]))))
}

func (r *jgfReader) read() (*Graph, error) {
	s := &r.s
	r.edgesOff = -1
	sawGraph := false
	err := s.object(func(key []byte) error {
		if string(key) != "graph" {
			return s.skipValue(0)
		}
		if sawGraph {
			return errors.New("jgf: graph: duplicate key")
		}
		sawGraph = true
		if s.peek() != '{' {
			return fmt.Errorf("jgf: graph: must be an object, got %s", kindOf(s.peek()))
		}
		return r.graphObject()
	})
	if err != nil {
		return nil, err
	}
	if s.peek() != 0 {
		return nil, s.unexpected("end of input")
	}
	if !sawGraph {
		return nil, errors.New("jgf: graph: missing")
	}
	if !r.nodesDone {
		return nil, errors.New("jgf: graph.nodes: missing")
	}
	return r.build()
}

func (r *jgfReader) graphObject() error {
	s := &r.s
	sawEdges := false
	return s.object(func(key []byte) error {
		switch string(key) {
		case "nodes":
			if r.nodesDone {
				return errors.New("jgf: graph.nodes: duplicate key")
			}
			if err := r.nodes(); err != nil {
				return err
			}
			r.nodesDone = true
			if r.edgesOff >= 0 {
				// Edges came first; read them now that ids are known.
				save := s.pos
				s.pos = r.edgesOff
				r.edgesOff = -1
				if err := r.edges(); err != nil {
					return err
				}
				s.pos = save
			}
			return nil
		case "edges":
			if sawEdges {
				return errors.New("jgf: graph.edges: duplicate key")
			}
			sawEdges = true
			if s.isNull() {
				return nil
			}
			if s.peek() != '[' {
				return fmt.Errorf("jgf: graph.edges: must be an array, got %s", kindOf(s.peek()))
			}
			if r.nodesDone {
				return r.edges()
			}
			r.edgesOff = s.pos
			return s.skipValue(0)
		default:
			return s.skipValue(0)
		}
	})
}

// nodeFields collects one node's fields before defaults are applied.
type nodeFields struct {
	outer                     strVal
	hasOuter, hasMeta         bool
	typ, basename, name, unit strVal
	hasType, hasBase, hasName bool
	hasUnit                   bool
	id, uniq, rank, size      int64
	hasID, hasUniq, hasRank   bool
	hasSize                   bool
	status                    Status
	cpath                     span
	paths, props              map[string]string
	err                       error // first field error
}

func (r *jgfReader) nodes() error {
	s := &r.s
	if s.peek() != '[' {
		return fmt.Errorf("jgf: graph.nodes: must be an array, got %s", kindOf(s.peek()))
	}
	if r.ltypeIdx == nil {
		r.ltypeIdx = map[string]TypeID{}
		r.strs = map[string]string{}
		r.strIDs = map[string]int32{}
		// A vertex written by WriteJGF takes about 285 bytes of JGF with
		// its edge, more in other producers' output.
		est := min(len(s.data)/250, 1<<24)
		r.verts = make([]Vertex, 0, est)
		r.outer = make([]span, 0, est)
		r.cpath = make([]span, 0, est)
	}
	s.pos++ // '['
	for i := 0; ; i++ {
		more, err := s.arrNext(i == 0)
		if err != nil || !more {
			return err
		}
		if len(r.verts) >= 1<<31-2 {
			return errors.New("jgf: graph.nodes: too many nodes")
		}
		if err := r.node(i); err != nil {
			return err
		}
	}
}

// keep records the first field error and swallows it; syntax errors pass.
func keep(first *error, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*fieldError); ok {
		if *first == nil {
			*first = err
		}
		return nil
	}
	return err
}

func (r *jgfReader) node(i int) error {
	s := &r.s
	if s.peek() != '{' {
		return fmt.Errorf("jgf: graph.nodes[%d]: must be an object, got %s", i, kindOf(s.peek()))
	}
	var f nodeFields
	f.cpath = noSpan
	s.pos++ // '{'
	for first := true; ; first = false {
		key, more, err := s.objKey(first)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		switch string(key) {
		case "id":
			var v strVal
			v, err = s.stringField("id")
			if err == nil {
				f.outer, f.hasOuter = v, true
			}
		case "metadata":
			if s.peek() != '{' {
				err = s.typeError("metadata", "an object")
				break
			}
			f.hasMeta = true
			err = r.metadata(&f)
		default:
			err = s.skipValue(0)
		}
		if err != nil && keep(&f.err, err) != nil {
			return err
		}
	}
	if !f.hasOuter {
		if f.err != nil && strings.HasPrefix(f.err.Error(), "id:") {
			return fmt.Errorf("jgf: graph.nodes[%d]: %w", i, f.err)
		}
		return fmt.Errorf("jgf: graph.nodes[%d]: id: missing", i)
	}
	fail := func(format string, args ...any) error {
		where := fmt.Sprintf("graph.nodes[%d] (id %s)", i, strconv.Quote(string(f.outer.b)))
		return fmt.Errorf("jgf: %s: "+format, append([]any{where}, args...)...)
	}
	if f.err != nil {
		return fail("%w", f.err)
	}
	if !f.hasMeta {
		return fail("metadata: missing")
	}
	if !f.hasType {
		return fail("metadata.type: missing")
	}
	if len(f.typ.b) == 0 {
		return fail("metadata.type: must not be empty")
	}
	if f.hasSize && f.size < 1 {
		return fail("metadata.size: must be at least 1, got %d", f.size)
	}
	idx := int32(len(r.verts))

	// Outer id: must be unique.
	outer := f.outer.b
	if n, ok := canonicalInt(outer); ok {
		if prev, dup := r.numIDs.get(n); dup {
			return fail("duplicate id, first used by graph.nodes[%d]", prev)
		}
		r.numIDs.put(n, idx, len(r.verts))
	} else {
		if prev, dup := r.strIDs[string(outer)]; dup {
			return fail("duplicate id, first used by graph.nodes[%d]", prev)
		}
		r.strIDs[string(outer)] = idx
	}

	// Defaults, in Fluxion's order (docs/reference/fluxion.md 2.2).
	v := Vertex{Rank: -1, Size: 1, Status: f.status}
	if f.hasUniq {
		v.UniqID = f.uniq
	} else {
		n, err := strconv.ParseInt(string(outer), 10, 64)
		if err != nil {
			return fail("metadata.uniq_id: missing, and id %q is not an integer", outer)
		}
		v.UniqID = n
	}
	if prev, dup := r.uniqs.get(v.UniqID); dup {
		return fail("metadata.uniq_id: %d is also the uniq_id of %s", v.UniqID, r.nodeRef(prev))
	}
	r.uniqs.put(v.UniqID, idx, len(r.verts))
	lt, ok := r.lastType, r.hasLast && string(f.typ.b) == r.ltypes[r.lastType]
	if !ok {
		lt, ok = r.ltypeIdx[string(f.typ.b)] // no allocation
	}
	if !ok {
		if len(r.ltypes) >= 1<<16-1 {
			return fail("metadata.type: too many distinct types")
		}
		lt = TypeID(len(r.ltypes))
		t := string(f.typ.b)
		r.ltypes = append(r.ltypes, t)
		r.ltypeIdx[t] = lt
	}
	r.lastType, r.hasLast = lt, true
	typ := r.ltypes[lt]
	v.Type = lt
	switch {
	case f.hasID:
		v.ID = f.id
	case typ == "node" && f.hasName && trailingDigits(f.name.b) > 0:
		d := f.name.b[len(f.name.b)-trailingDigits(f.name.b):]
		n, err := strconv.ParseInt(string(d), 10, 64)
		if err != nil {
			return fail("metadata.id: missing, and the trailing integer of name %q is out of range", f.name.b)
		}
		v.ID = n
	default:
		v.ID = v.UniqID
	}
	if f.hasRank {
		v.Rank = f.rank
	}
	if f.hasSize {
		v.Size = f.size
	}
	switch {
	case !f.hasBase || string(f.basename.b) == typ:
		v.Basename = typ
	default:
		v.Basename = r.intern(f.basename.b)
	}
	if f.hasUnit && len(f.unit.b) > 0 {
		v.Unit = r.intern(f.unit.b)
	}
	switch {
	case f.hasName && len(f.name.b) > 0 && !isDefaultName(f.name.b, v.Basename, v.ID):
		v.Name = string(f.name.b)
	case !f.hasName && v.ID < 0:
		// Fluxion's default name is basename + id, even for id -1;
		// DisplayName would give the bare basename.
		v.Name = v.Basename + strconv.FormatInt(v.ID, 10)
	}
	v.Properties = f.props
	v.Paths = f.paths

	r.verts = append(r.verts, v)
	r.outer = append(r.outer, r.spanOf(f.outer))
	r.cpath = append(r.cpath, f.cpath)
	return nil
}

// intern returns a shared string equal to b.
func (r *jgfReader) intern(b []byte) string {
	if s, ok := r.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(r.strs) < 1<<16 {
		r.strs[s] = s
	}
	return s
}

func (r *jgfReader) metadata(f *nodeFields) error {
	s := &r.s
	s.pos++ // '{'
	for first := true; ; first = false {
		key, more, err := s.objKey(first)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		if s.cur() == 'n' && s.isNull() {
			continue // null means absent
		}
		switch string(key) {
		case "type":
			f.typ, err = s.stringField("metadata.type")
			f.hasType = err == nil
		case "basename":
			f.basename, err = s.stringField("metadata.basename")
			f.hasBase = err == nil
		case "name":
			f.name, err = s.stringField("metadata.name")
			f.hasName = err == nil
		case "unit":
			f.unit, err = s.stringField("metadata.unit")
			f.hasUnit = err == nil
		case "id":
			f.id, err = s.intField("metadata.id")
			f.hasID = err == nil
		case "uniq_id":
			f.uniq, err = s.intField("metadata.uniq_id")
			f.hasUniq = err == nil
		case "rank":
			f.rank, err = s.intField("metadata.rank")
			f.hasRank = err == nil
		case "size":
			f.size, err = s.intField("metadata.size")
			f.hasSize = err == nil
		case "exclusive":
			_, err = s.boolField("metadata.exclusive")
		case "status":
			f.status, err = r.status()
		case "properties":
			f.props, err = s.stringMap("metadata.properties")
		case "paths":
			err = r.paths(f)
		default:
			err = s.skipValue(0)
		}
		if err != nil && keep(&f.err, err) != nil {
			return err
		}
	}
}

// status reads Fluxion's integer status (0 up, 1 down) or "up"/"down".
func (r *jgfReader) status() (Status, error) {
	s := &r.s
	const field = "metadata.status"
	bad := func(got string) error {
		return &fieldError{field, `must be 0 (up), 1 (down), "up" or "down", got ` + got}
	}
	switch c := s.peek(); {
	case c == '"':
		v, err := s.str()
		if err != nil {
			return Up, err
		}
		switch strings.ToLower(string(v.b)) {
		case "up":
			return Up, nil
		case "down":
			return Down, nil
		}
		return Up, bad(strconv.Quote(string(v.b)))
	case c == '-' || (c >= '0' && c <= '9'):
		start, end, _, err := s.number()
		if err != nil {
			return Up, err
		}
		switch string(s.data[start:end]) {
		case "0":
			return Up, nil
		case "1":
			return Down, nil
		}
		return Up, bad(string(s.data[start:end]))
	default:
		return Up, s.typeError(field, "an integer or a string")
	}
}

func (r *jgfReader) paths(f *nodeFields) error {
	return r.s.stringFields("metadata.paths", func(key []byte, v strVal) {
		if string(key) == "containment" {
			f.cpath = noSpan
			if len(v.b) > 0 { // Fluence writes "" for unset paths
				f.cpath = r.spanOf(v)
			}
			return
		}
		if f.paths == nil {
			f.paths = map[string]string{}
		}
		f.paths[string(key)] = string(v.b)
	})
}

// canonicalInt parses a non-negative decimal integer written without sign or
// leading zeros, so that the text is a function of the value.
func canonicalInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// trailingDigits is the length of the run of ASCII digits ending b.
func trailingDigits(b []byte) int {
	n := 0
	for n < len(b) && b[len(b)-1-n] >= '0' && b[len(b)-1-n] <= '9' {
		n++
	}
	return n
}

// isDefaultName reports whether name is what DisplayName computes for an
// empty Name, i.e. basename + id (basename alone when id < 0).
func isDefaultName(name []byte, basename string, id int64) bool {
	if len(name) < len(basename) || string(name[:len(basename)]) != basename {
		return false
	}
	rest := name[len(basename):]
	if id < 0 {
		return len(rest) == 0
	}
	var buf [20]byte
	return string(rest) == string(strconv.AppendInt(buf[:0], id, 10))
}

// lookup resolves an outer id.
func (r *jgfReader) lookup(b []byte) (int32, bool) {
	if n, ok := canonicalInt(b); ok {
		return r.numIDs.get(n)
	}
	i, ok := r.strIDs[string(b)]
	return i, ok
}

type edgeFields struct {
	src, tgt       strVal
	hasSrc, hasTgt bool
	subsystem      strVal
	hasSubsystem   bool
	reverse        bool // relation or metadata.name says "in"
	err            error
}

func (r *jgfReader) edges() error {
	s := &r.s
	n := len(r.verts)
	r.parent = make([]int32, n)
	r.parentEdge = make([]int32, n)
	for i := range r.parent {
		r.parent[i] = None
	}
	s.pos++ // '['
	for i := 0; ; i++ {
		more, err := s.arrNext(i == 0)
		if err != nil || !more {
			return err
		}
		if err := r.edge(i); err != nil {
			return err
		}
	}
}

func (r *jgfReader) edge(i int) error {
	s := &r.s
	if s.peek() != '{' {
		return fmt.Errorf("jgf: graph.edges[%d]: must be an object, got %s", i, kindOf(s.peek()))
	}
	var f edgeFields
	s.pos++ // '{'
	for first := true; ; first = false {
		key, more, err := s.objKey(first)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		switch string(key) {
		case "source":
			f.src, err = s.stringField("source")
			f.hasSrc = err == nil
		case "target":
			f.tgt, err = s.stringField("target")
			f.hasTgt = err == nil
		case "relation":
			if s.isNull() {
				break
			}
			var v strVal
			v, err = s.stringField("relation")
			if err == nil && string(v.b) == "in" {
				f.reverse = true
			}
		case "metadata":
			err = r.edgeMetadata(&f)
		default:
			err = s.skipValue(0)
		}
		if err != nil && keep(&f.err, err) != nil {
			return err
		}
	}
	fail := func(format string, args ...any) error {
		where := fmt.Sprintf("graph.edges[%d]", i)
		if f.hasSrc && f.hasTgt {
			where += fmt.Sprintf(" (source %s, target %s)", strconv.Quote(string(f.src.b)), strconv.Quote(string(f.tgt.b)))
		}
		return fmt.Errorf("jgf: %s: "+format, append([]any{where}, args...)...)
	}
	switch {
	case f.err != nil:
		return fail("%w", f.err)
	case !f.hasSrc:
		return fail("source: missing")
	case !f.hasTgt:
		return fail("target: missing")
	}
	src, ok := r.lookup(f.src.b)
	if !ok {
		return fail("source: no node has id %q", f.src.b)
	}
	tgt, ok := r.lookup(f.tgt.b)
	if !ok {
		return fail("target: no node has id %q", f.tgt.b)
	}
	if f.hasSubsystem && string(f.subsystem.b) != "containment" {
		return nil // other subsystems are not modelled
	}
	if f.reverse {
		return nil // child -> parent edge of a two-way pair
	}
	if src == tgt {
		return fail("source and target are the same node")
	}
	if isPathAncestor(r.text(r.cpath[tgt]), r.text(r.cpath[src])) {
		return nil // points up the tree
	}
	if r.parent[src] == tgt || r.parent[tgt] == src {
		return nil // reverse or repeat of an edge already read
	}
	if p := r.parent[tgt]; p != None {
		return fail("%s has two containment parents: %s (graph.edges[%d]) and %s",
			r.nodeRef(tgt), r.nodeRef(p), r.parentEdge[tgt], r.nodeRef(src))
	}
	r.parent[tgt] = src
	r.parentEdge[tgt] = int32(i)
	return nil
}

func (r *jgfReader) edgeMetadata(f *edgeFields) error {
	s := &r.s
	if s.peek() != '{' {
		if s.isNull() {
			return nil
		}
		return s.typeError("metadata", "an object")
	}
	var ferr error
	s.pos++ // '{'
	for first := true; ; first = false {
		key, more, err := s.objKey(first)
		if err != nil {
			return err
		}
		if !more {
			return ferr
		}
		switch string(key) {
		case "subsystem":
			if s.isNull() {
				break
			}
			f.subsystem, err = s.stringField("metadata.subsystem")
			f.hasSubsystem = err == nil
		case "name":
			// Older producers: {"containment": "contains"|"in"} or a string.
			err = r.relationNames(f)
		default:
			err = s.skipValue(0)
		}
		if err != nil && keep(&ferr, err) != nil {
			return err
		}
	}
}

// relationNames reads an edge's metadata.name, a relation string or an
// object subsystem -> relation, and notes whether any relation is "in".
func (r *jgfReader) relationNames(f *edgeFields) error {
	s := &r.s
	switch s.cur() {
	case '"':
		v, err := s.str()
		if err == nil && string(v.b) == "in" {
			f.reverse = true
		}
		return err
	case '{':
		return s.stringFields("metadata.name", func(_ []byte, v strVal) {
			if string(v.b) == "in" {
				f.reverse = true
			}
		})
	default:
		return s.skipValue(0)
	}
}

// isPathAncestor reports whether path a is a proper ancestor of path b.
func isPathAncestor(a, b []byte) bool {
	return len(a) > 0 && len(a) < len(b) && b[len(a)] == '/' && string(b[:len(a)]) == string(a)
}

// build checks the tree and adds the vertices to a new Graph in pre-order.
func (r *jgfReader) build() (*Graph, error) {
	n := len(r.verts)
	if n == 0 {
		return nil, errors.New("jgf: graph.nodes: no nodes")
	}
	if r.parent == nil { // no edges at all
		r.parent = make([]int32, n)
		for i := range r.parent {
			r.parent[i] = None
		}
	}
	root := None
	for i, p := range r.parent {
		if p != None {
			continue
		}
		if root != None {
			return nil, fmt.Errorf("jgf: two roots: %s and %s have no containment parent",
				r.nodeRef(root), r.nodeRef(int32(i)))
		}
		root = int32(i)
	}
	if root == None {
		return nil, errors.New("jgf: no root: every node has a containment parent (the edges form a cycle)")
	}

	order := preorder(r.parent, func(v int32) int64 { return r.verts[v].UniqID }, root)
	if len(order) != n {
		// Some nodes hang off a cycle that the root cannot reach.
		reached := make([]bool, n)
		for _, v := range order {
			reached[v] = true
		}
		for i := range n {
			if !reached[i] {
				return nil, fmt.Errorf("jgf: %s: not reachable from the root %s: its containment parents form a cycle",
					r.nodeRef(int32(i)), r.nodeRef(root))
			}
		}
	}
	identity := true
	for i, v := range order {
		if int32(i) != v {
			identity = false
			break
		}
	}

	// Add the vertices in pre-order, interning types in that order so that
	// TypeIDs do not depend on the order of nodes in the file.
	g := New()
	if identity {
		// The file is already in pre-order: AddVertex(r.verts[i]) writes
		// slot i of the same array, so reuse it instead of copying.
		g.vertices = r.verts[:0]
	} else {
		g.vertices = make([]Vertex, 0, n)
	}
	g.parent = make([]int32, 0, n)
	gtype := make([]TypeID, len(r.ltypes))
	seen := make([]bool, len(r.ltypes))
	newIdx := make([]int32, n)
	for _, v := range order {
		vx := r.verts[v]
		if !seen[vx.Type] {
			seen[vx.Type] = true
			gtype[vx.Type] = g.Intern(r.ltypes[vx.Type])
		}
		vx.Type = gtype[vx.Type]
		p := None
		if r.parent[v] != None {
			p = newIdx[r.parent[v]]
		}
		idx, err := g.AddVertex(vx, p)
		if err != nil {
			return nil, fmt.Errorf("jgf: %s: %w", r.nodeRef(v), err)
		}
		newIdx[v] = idx
	}
	r.verts = nil
	if err := g.Finalize(); err != nil {
		return nil, fmt.Errorf("jgf: %w", err)
	}
	return g, nil
}
