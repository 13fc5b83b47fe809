package resource

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// want describes the expected fields of one vertex.
type wantVertex struct {
	path     string
	typ      string
	basename string
	name     string // Vertex.Name (empty = default)
	id       int64
	uniq     int64
	rank     int64
	size     int64
	unit     string
	status   Status
	props    map[string]string
	paths    map[string]string
}

func checkVertices(t *testing.T, g *Graph, want []wantVertex) {
	t.Helper()
	if g.Len() != len(want) {
		t.Fatalf("Len = %d, want %d; paths %q", g.Len(), len(want), paths(g))
	}
	for i, w := range want {
		v := g.Vertex(int32(i))
		got := wantVertex{
			path: g.Path(int32(i)), typ: g.TypeName(v.Type), basename: v.Basename, name: v.Name,
			id: v.ID, uniq: v.UniqID, rank: v.Rank, size: v.Size, unit: v.Unit, status: v.Status,
			props: v.Properties, paths: v.Paths,
		}
		if got.path != w.path || got.typ != w.typ || got.basename != w.basename || got.name != w.name ||
			got.id != w.id || got.uniq != w.uniq || got.rank != w.rank || got.size != w.size ||
			got.unit != w.unit || got.status != w.status || !maps.Equal(got.props, w.props) ||
			!maps.Equal(got.paths, w.paths) {
			t.Errorf("vertex %d:\n got %+v\nwant %+v", i, got, w)
		}
	}
}

func TestReadJGFFileExample(t *testing.T) {
	g, err := ReadJGFFile("testdata/example.json")
	if err != nil {
		t.Fatal(err)
	}
	checkVertices(t, g, []wantVertex{
		{path: "/cluster0", typ: "cluster", basename: "cluster", id: 0, uniq: 0, rank: -1, size: 1},
		{path: "/cluster0/node0", typ: "node", basename: "node", id: 0, uniq: 1, rank: 0, size: 1,
			props: map[string]string{"pool": "batch"}},
		{path: "/cluster0/node0/core0", typ: "core", basename: "core", id: 0, uniq: 2, rank: 0, size: 1},
		{path: "/cluster0/node0/memory0", typ: "memory", basename: "memory", id: 0, uniq: 3, rank: 0, size: 16, unit: "GB"},
	})
	if got := g.Children(1); !slices.Equal(got, []int32{2, 3}) {
		t.Errorf("Children(node0) = %v, want [2 3]", got)
	}
	if g.Parent(0) != None || g.Parent(1) != 0 || g.Parent(3) != 1 {
		t.Errorf("parents = %d %d %d", g.Parent(0), g.Parent(1), g.Parent(3))
	}
	if g.NodesUp() != 1 {
		t.Errorf("NodesUp = %d, want 1", g.NodesUp())
	}
	for i, typ := range []string{"cluster", "node", "core", "memory"} {
		if g.TypeName(TypeID(i)) != typ {
			t.Errorf("TypeName(%d) = %q, want %q (types are interned in pre-order)", i, g.TypeName(TypeID(i)), typ)
		}
	}
}

func TestReadJGFFileErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(p, []byte(`{"graph":{"nodes":[]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadJGFFile(p)
	if err == nil || !strings.Contains(err.Error(), p+": jgf: graph.nodes: no nodes") {
		t.Errorf("err = %v, want it to name %s", err, p)
	}
	_, err = ReadJGFFile(filepath.Join(dir, "missing.json"))
	if err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("err = %v, want it to name the missing file", err)
	}
}

func TestReadJGFReader(t *testing.T) {
	data, err := os.ReadFile("testdata/example.json")
	if err != nil {
		t.Fatal(err)
	}
	g, err := ReadJGF(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if g.Len() != 4 || !g.Finalized() {
		t.Errorf("Len = %d, Finalized = %v", g.Len(), g.Finalized())
	}
}

// jgfDoc assembles a JGF document from node and edge fragments.
func jgfDoc(nodes, edges []string) string {
	return `{"graph":{"nodes":[` + strings.Join(nodes, ",") + `],"edges":[` + strings.Join(edges, ",") + `]}}`
}

func edge(src, tgt string) string { return fmt.Sprintf(`{"source":%q,"target":%q}`, src, tgt) }

func TestParseJGFDefaults(t *testing.T) {
	doc := jgfDoc([]string{
		`{"id":"10","metadata":{"type":"cluster","paths":{"containment":"/cluster10"}}}`,
		`{"id":"11","metadata":{"type":"node","name":"kind-worker3"}}`,
		`{"id":"12","metadata":{"type":"node","name":"worker"}}`,
		`{"id":"13","metadata":{"type":"node"}}`,
		`{"id":"14","metadata":{"type":"core","id":-1}}`,
		`{"id":"15","metadata":{"type":"core","uniq_id":99,"basename":"cpu","status":1,"properties":null,"unit":"","size":2,"exclusive":true}}`,
		`{"id":"16","metadata":{"type":"gpu","status":"down","name":""}}`,
		`{"id":"17","metadata":{"type":"node","name":"node007","rank":3,"status":"UP","label":"ignored"}}`,
		`{"id":"18","metadata":{"type":"memory","unit":null,"paths":{"containment":"/cluster10/node007/memory18","power":"/pdu0/memory18"}}}`,
	}, []string{
		edge("10", "11"), edge("10", "12"), edge("10", "13"), edge("11", "14"),
		edge("11", "15"), edge("12", "16"), edge("10", "17"), edge("17", "18"),
	})
	g, err := ParseJGF([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	checkVertices(t, g, []wantVertex{
		{path: "/cluster10", typ: "cluster", basename: "cluster", id: 10, uniq: 10, rank: -1, size: 1},
		// id from the trailing integer of a node's name; name differs from basename+id.
		{path: "/cluster10/kind-worker3", typ: "node", basename: "node", name: "kind-worker3", id: 3, uniq: 11, rank: -1, size: 1},
		// uniq_id 14 < 99: children sorted by uniq_id.
		{path: "/cluster10/kind-worker3/core-1", typ: "core", basename: "core", name: "core-1", id: -1, uniq: 14, rank: -1, size: 1},
		{path: "/cluster10/kind-worker3/cpu99", typ: "core", basename: "cpu", id: 99, uniq: 99, rank: -1, size: 2, status: Down},
		// no trailing integer: id = uniq_id.
		{path: "/cluster10/worker", typ: "node", basename: "node", name: "worker", id: 12, uniq: 12, rank: -1, size: 1},
		{path: "/cluster10/worker/gpu16", typ: "gpu", basename: "gpu", id: 16, uniq: 16, rank: -1, size: 1, status: Down},
		{path: "/cluster10/node13", typ: "node", basename: "node", id: 13, uniq: 13, rank: -1, size: 1},
		{path: "/cluster10/node007", typ: "node", basename: "node", name: "node007", id: 7, uniq: 17, rank: 3, size: 1},
		{path: "/cluster10/node007/memory18", typ: "memory", basename: "memory", id: 18, uniq: 18, rank: -1, size: 1,
			paths: map[string]string{"power": "/pdu0/memory18"}},
	})
	if g.NodesUp() != 4 {
		t.Errorf("NodesUp = %d, want 4", g.NodesUp())
	}
}

// fluenceVariant rewrites testdata/fluence.json with f applied to every edge.
func fluenceVariant(t *testing.T, dropPaths bool, f func(e map[string]any) []map[string]any) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/fluence.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string][]map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var edges []map[string]any
	for _, e := range doc["graph"]["edges"] {
		edges = append(edges, f(e)...)
	}
	doc["graph"]["edges"] = edges
	if dropPaths {
		for _, n := range doc["graph"]["nodes"] {
			delete(n["metadata"].(map[string]any), "paths")
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func isIn(e map[string]any) bool {
	return e["metadata"].(map[string]any)["name"].(map[string]any)["containment"] == "in"
}

func TestParseJGFFluenceStyle(t *testing.T) {
	wantPaths := []string{
		"/k8scluster0",
		"/k8scluster0/us-east-1a1",
		"/k8scluster0/us-east-1a1/kind-worker2",
		"/k8scluster0/us-east-1a1/kind-worker2/core0",
		"/k8scluster0/us-east-1a1/kind-worker2/core1",
		"/k8scluster0/us-east-1a1/kind-worker2/nvidiagpu0",
		"/k8scluster0/us-east-1a1/kind-worker2/memory0",
		"/k8scluster0/us-east-1b7",
		"/k8scluster0/us-east-1b7/kind-worker8",
		"/k8scluster0/us-east-1b7/kind-worker8/core0",
	}
	keep := func(e map[string]any) []map[string]any { return []map[string]any{e} }
	tests := []struct {
		name string
		data []byte
	}{
		{"as written (contains/in with metadata.name)", fluenceVariant(t, false, keep)},
		{"no subsystem (older Fluence)", fluenceVariant(t, false, func(e map[string]any) []map[string]any {
			delete(e["metadata"].(map[string]any), "subsystem")
			return []map[string]any{e}
		})},
		{"relation field instead of metadata.name", fluenceVariant(t, false, func(e map[string]any) []map[string]any {
			rel := "contains"
			if isIn(e) {
				rel = "in"
			}
			e["relation"], e["directed"] = rel, true
			e["metadata"] = map[string]any{"subsystem": "containment"}
			return []map[string]any{e}
		})},
		{"unlabelled up edges, recognised by path", fluenceVariant(t, false, func(e map[string]any) []map[string]any {
			e["metadata"] = map[string]any{"subsystem": "containment"}
			return []map[string]any{e}
		})},
		{"unlabelled up edges, no paths: pure reverse duplicates", fluenceVariant(t, true, func(e map[string]any) []map[string]any {
			e["metadata"] = map[string]any{"subsystem": "containment"}
			return []map[string]any{e}
		})},
		{"repeated edges and foreign subsystems", fluenceVariant(t, false, func(e map[string]any) []map[string]any {
			power := map[string]any{"source": "0", "target": e["target"], "metadata": map[string]any{"subsystem": "power"}}
			return []map[string]any{e, e, power}
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := ParseJGF(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if got := paths(g); !slices.Equal(got, wantPaths) {
				t.Errorf("paths:\n got %q\nwant %q", got, wantPaths)
			}
			if g.NodesUp() != 2 {
				t.Errorf("NodesUp = %d, want 2", g.NodesUp())
			}
			w2, _ := g.ByPath("/k8scluster0/us-east-1a1/kind-worker2")
			if v := g.Vertex(w2); v.ID != 2 || v.Basename != "kind-worker" || v.Name != "" || v.Rank != -1 {
				t.Errorf("kind-worker2 = %+v", *v)
			}
			sub, _ := g.ByPath("/k8scluster0/us-east-1b7")
			if v := g.Vertex(sub); g.TypeName(v.Type) != "subnet" || v.ID != 1 || v.Name != "us-east-1b7" {
				t.Errorf("subnet = %+v", *v)
			}
			mem, _ := g.ByPath("/k8scluster0/us-east-1a1/kind-worker2/memory0")
			if v := g.Vertex(mem); v.Size != 1024 || v.Unit != "MB" {
				t.Errorf("memory = %+v", *v)
			}
		})
	}
}

func TestParseJGFOrderIndependent(t *testing.T) {
	// Nodes listed children-first and edges before nodes give the same
	// graph, TypeIDs included.
	nodes := []string{
		`{"id":"3","metadata":{"type":"core","rank":0}}`,
		`{"id":"2","metadata":{"type":"gpu","rank":0}}`,
		`{"id":"1","metadata":{"type":"node","rank":0}}`,
		`{"id":"0","metadata":{"type":"cluster"}}`,
	}
	edges := []string{edge("1", "3"), edge("0", "1"), edge("1", "2")}
	a, err := ParseJGF([]byte(jgfDoc(nodes, edges)))
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(nodes)
	b, err := ParseJGF([]byte(`{"graph":{"edges":[` + strings.Join(edges, ",") + `],"nodes":[` + strings.Join(nodes, ",") + `]}}`))
	if err != nil {
		t.Fatal(err)
	}
	checkSameGraph(t, a, b)
	if got := paths(a); !slices.Equal(got, []string{"/cluster0", "/cluster0/node1", "/cluster0/node1/gpu2", "/cluster0/node1/core3"}) {
		t.Errorf("paths = %q", got)
	}
}

func TestParseJGFSingleVertex(t *testing.T) {
	for _, doc := range []string{
		`{"graph":{"nodes":[{"id":"0","metadata":{"type":"node"}}]}}`,
		`{"graph":{"nodes":[{"id":"0","metadata":{"type":"node"}}],"edges":null}}`,
		`{"graph":{"nodes":[{"id":"0","metadata":{"type":"node"}}],"edges":[]}, "free_ranks": "0-3"}`,
	} {
		g, err := ParseJGF([]byte(doc))
		if err != nil {
			t.Errorf("%s: %v", doc, err)
			continue
		}
		if g.Len() != 1 || g.NodesUp() != 1 {
			t.Errorf("%s: Len %d NodesUp %d", doc, g.Len(), g.NodesUp())
		}
	}
}

func TestParseJGFStrings(t *testing.T) {
	// Escapes, unicode and invalid UTF-8 are decoded as encoding/json does.
	doc := "{\"graph\":{\"nodes\":[{\"id\":\"r\\u006Fot\",\"metadata\":{\"type\":\"node\",\"uniq_id\":0,\"name\":\"n\\u00f1\\\"o\\\\de\\ud83d\\ude00\\/x\\ud800\",\"unit\":\"\xff\",\"properties\":{\"k\\n\":\"v\\t\"}}}]}}"
	g, err := ParseJGF([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	v := g.Vertex(0)
	if v.Name != "nñ\"o\\de😀/x\uFFFD" || v.Unit != "\uFFFD" || v.Properties["k\n"] != "v\t" {
		t.Errorf("vertex = %+v", *v)
	}
	// Escaped keys and white space everywhere.
	doc = " { \"gr\\u0061ph\" :\n{ \"nodes\" : [ { \"id\" : \"0\" , \"metadata\" : { \"ty\\u0070e\" : \"node\" , \"size\"\t:\t4 } } ] } } \n"
	g, err = ParseJGF([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if v := g.Vertex(0); g.TypeName(v.Type) != "node" || v.Size != 4 {
		t.Errorf("vertex = %+v", *v)
	}
}

func TestParseJGFErrors(t *testing.T) {
	n0 := `{"id":"0","metadata":{"type":"cluster"}}`
	n1 := `{"id":"1","metadata":{"type":"node"}}`
	n2 := `{"id":"2","metadata":{"type":"core"}}`
	n3 := `{"id":"3","metadata":{"type":"core"}}`
	with := func(meta string) string { return jgfDoc([]string{`{"id":"0","metadata":{` + meta + `}}`}, nil) }
	var thirteen []string
	for i := range 12 {
		thirteen = append(thirteen, fmt.Sprintf(`{"id":"%d","metadata":{"type":"core"}}`, i))
	}
	thirteen = append(thirteen, `{"id":"12","metadata":{"type":"core","size":0}}`)
	tests := []struct {
		name, doc, want string
	}{
		{"not JSON", `nope`, `jgf: syntax error at line 1, column 1 (offset 0): unexpected 'n', expected '{'`},
		{"empty input", ``, `jgf: syntax error at line 1, column 1 (offset 0): unexpected end of input`},
		{"trailing data", `{"graph":{"nodes":[` + n0 + `]}} {}`, `unexpected '{', expected end of input`},
		{"syntax error inside a node", "{\"graph\":{\"nodes\":[\n{\"id\":\"0\",\"metadata\":{\"type\":\"x\",}}]}}",
			`jgf: syntax error at line 2, column 34 (offset 53): unexpected '}', expected string (object key)`},
		{"unterminated string", `{"graph":{"nodes":[{"id":"0`, `unterminated string`},
		{"bad escape", `{"graph":{"nodes":[{"id":"\x"}]}}`, `invalid escape \x`},
		{"control character", "{\"graph\":{\"nodes\":[{\"id\":\"\t\"}]}}", `control character 0x09 in string`},
		{"bad number", `{"graph":{"nodes":[{"id":"0","metadata":{"type":"x","size":01}}]}}`, `expected ',' or '}' after object member`},
		{"bad literal", `{"graph":{"nodes":[{"id":"0","metadata":{"type":"x","exclusive":nul}}]}}`, `expected value`},
		{"deep nesting", `{"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, `nesting deeper than 10000`},
		{"truncated after a metadata key", `{"graph":{"nodes":[{"id":"0","metadata":{"type":`, `unexpected end of input`},
		{"truncated after a paths key", `{"graph":{"nodes":[{"id":"0","metadata":{"paths":{"x":`, `unexpected end of input`},
		{"truncated after an edge name key", `{"graph":{"nodes":[` + n0 + `],"edges":[{"metadata":{"name":`, `unexpected end of input`},
		{"truncated inside an edge name", `{"graph":{"nodes":[` + n0 + `],"edges":[{"metadata":{"name":{"c":`, `unexpected end of input`},
		{"graph missing", `{}`, `jgf: graph: missing`},
		{"graph not an object", `{"graph":[]}`, `jgf: graph: must be an object, got array`},
		{"graph twice", `{"graph":{"nodes":[` + n0 + `]},"graph":{}}`, `jgf: graph: duplicate key`},
		{"nodes missing", `{"graph":{"edges":[]}}`, `jgf: graph.nodes: missing`},
		{"nodes not an array", `{"graph":{"nodes":{}}}`, `jgf: graph.nodes: must be an array, got object`},
		{"nodes twice", `{"graph":{"nodes":[` + n0 + `],"nodes":[]}}`, `jgf: graph.nodes: duplicate key`},
		{"no nodes", jgfDoc(nil, nil), `jgf: graph.nodes: no nodes`},
		{"node not an object", jgfDoc([]string{`5`}, nil), `jgf: graph.nodes[0]: must be an object, got number`},
		{"id missing", jgfDoc([]string{n0, `{"metadata":{"type":"x"}}`}, nil), `jgf: graph.nodes[1]: id: missing`},
		{"id not a string", jgfDoc([]string{`{"id":3,"metadata":{"type":"x"}}`}, nil), `jgf: graph.nodes[0]: id: must be a string, got number`},
		{"duplicate id", jgfDoc([]string{n0, n1, `{"id":"0","metadata":{"type":"x","uniq_id":7}}`}, nil),
			`jgf: graph.nodes[2] (id "0"): duplicate id, first used by graph.nodes[0]`},
		{"duplicate string id", jgfDoc([]string{`{"id":"a","metadata":{"type":"x","uniq_id":1}}`, `{"id":"a","metadata":{"type":"x","uniq_id":2}}`}, nil),
			`jgf: graph.nodes[1] (id "a"): duplicate id, first used by graph.nodes[0]`},
		{"metadata missing", jgfDoc([]string{`{"id":"0"}`}, nil), `jgf: graph.nodes[0] (id "0"): metadata: missing`},
		{"metadata not an object", jgfDoc([]string{`{"metadata":[],"id":"0"}`}, nil), `jgf: graph.nodes[0] (id "0"): metadata: must be an object, got array`},
		{"type missing", with(`"size":1`), `jgf: graph.nodes[0] (id "0"): metadata.type: missing`},
		{"type not a string", with(`"type":1`), `metadata.type: must be a string, got number`},
		{"type empty", with(`"type":""`), `metadata.type: must not be empty`},
		{"size zero, message in full", jgfDoc(thirteen, nil), `jgf: graph.nodes[12] (id "12"): metadata.size: must be at least 1, got 0`},
		{"size negative", with(`"type":"x","size":-3`), `metadata.size: must be at least 1, got -3`},
		{"size fractional", with(`"type":"x","size":1.5`), `metadata.size: must be an integer, got 1.5`},
		{"size exponent", with(`"type":"x","size":1e3`), `metadata.size: must be an integer, got 1e3`},
		{"size string", with(`"type":"x","size":"4"`), `metadata.size: must be an integer, got string`},
		{"size overflow", with(`"type":"x","size":99999999999999999999`), `metadata.size: integer 99999999999999999999 out of range`},
		{"rank string", with(`"type":"x","rank":"0"`), `metadata.rank: must be an integer, got string`},
		{"id object", with(`"type":"x","id":{}`), `metadata.id: must be an integer, got object`},
		{"exclusive string", with(`"type":"x","exclusive":"no"`), `metadata.exclusive: must be a boolean, got string`},
		{"uniq_id not inferable", jgfDoc([]string{`{"id":"abc","metadata":{"type":"x"}}`}, nil),
			`jgf: graph.nodes[0] (id "abc"): metadata.uniq_id: missing, and id "abc" is not an integer`},
		{"uniq_id duplicate", jgfDoc([]string{n0, `{"id":"x","metadata":{"type":"x","uniq_id":0}}`}, nil),
			`jgf: graph.nodes[1] (id "x"): metadata.uniq_id: 0 is also the uniq_id of graph.nodes[0] (id "0")`},
		{"status out of range", with(`"type":"x","status":7`), `metadata.status: must be 0 (up), 1 (down), "up" or "down", got 7`},
		{"status unknown string", with(`"type":"x","status":"sideways"`), `metadata.status: must be 0 (up), 1 (down), "up" or "down", got "sideways"`},
		{"status boolean", with(`"type":"x","status":true`), `metadata.status: must be an integer or a string, got boolean`},
		{"properties value", with(`"type":"x","properties":{"a":"b","c":1}`), `metadata.properties.c: must be a string, got number`},
		{"properties array", with(`"type":"x","properties":[]`), `metadata.properties: must be an object, got array`},
		{"paths value", with(`"type":"x","paths":{"containment":3}`), `metadata.paths.containment: must be a string, got number`},
		{"paths string", with(`"type":"x","paths":"/x"`), `metadata.paths: must be an object, got string`},
		{"node name suffix overflow", with(`"type":"node","name":"node99999999999999999999"`),
			`metadata.id: missing, and the trailing integer of name "node99999999999999999999" is out of range`},
		{"edges not an array", `{"graph":{"nodes":[` + n0 + `],"edges":{}}}`, `jgf: graph.edges: must be an array, got object`},
		{"edge not an object", jgfDoc([]string{n0}, []string{`"0"`}), `jgf: graph.edges[0]: must be an object, got string`},
		{"edge source missing", jgfDoc([]string{n0, n1}, []string{`{"target":"1"}`}), `jgf: graph.edges[0]: source: missing`},
		{"edge target missing", jgfDoc([]string{n0, n1}, []string{`{"source":"0"}`}), `jgf: graph.edges[0]: target: missing`},
		{"edge source not a string", jgfDoc([]string{n0, n1}, []string{`{"source":0,"target":"1"}`}), `jgf: graph.edges[0]: source: must be a string, got number`},
		{"edge metadata not an object", jgfDoc([]string{n0, n1}, []string{`{"source":"0","target":"1","metadata":"x"}`}),
			`jgf: graph.edges[0] (source "0", target "1"): metadata: must be an object, got string`},
		{"edge subsystem not a string", jgfDoc([]string{n0, n1}, []string{`{"source":"0","target":"1","metadata":{"subsystem":1}}`}),
			`metadata.subsystem: must be a string, got number`},
		{"edge relation name not a string", jgfDoc([]string{n0, n1}, []string{`{"source":"0","target":"1","metadata":{"name":{"containment":1,"x":"in"}}}`}),
			`jgf: graph.edges[0] (source "0", target "1"): metadata.name.containment: must be a string, got number`},
		{"edge to unknown node", jgfDoc([]string{n0, n1}, []string{edge("0", "1"), edge("0", "9")}),
			`jgf: graph.edges[1] (source "0", target "9"): target: no node has id "9"`},
		{"edge from unknown node, other subsystem", jgfDoc([]string{n0, n1}, []string{`{"source":"x","target":"1","metadata":{"subsystem":"power"}}`}),
			`jgf: graph.edges[0] (source "x", target "1"): source: no node has id "x"`},
		{"self loop", jgfDoc([]string{n0, n1}, []string{edge("0", "1"), edge("1", "1")}),
			`jgf: graph.edges[1] (source "1", target "1"): source and target are the same node`},
		{"second parent", jgfDoc([]string{n0, n1, n2}, []string{edge("0", "2"), edge("1", "2"), edge("0", "1")}),
			`jgf: graph.edges[1] (source "1", target "2"): graph.nodes[2] (id "2") has two containment parents: graph.nodes[0] (id "0") (graph.edges[0]) and graph.nodes[1] (id "1")`},
		{"two roots", jgfDoc([]string{n0, n1, n2}, []string{edge("0", "2")}),
			`jgf: two roots: graph.nodes[0] (id "0") and graph.nodes[1] (id "1") have no containment parent`},
		{"no root", jgfDoc([]string{n0, n1, n2}, []string{edge("0", "1"), edge("1", "2"), edge("2", "0")}),
			`jgf: no root: every node has a containment parent`},
		{"cycle beside the root", jgfDoc([]string{n0, n1, n2, n3}, []string{edge("1", "2"), edge("2", "3"), edge("3", "1")}),
			`jgf: graph.nodes[1] (id "1"): not reachable from the root graph.nodes[0] (id "0"): its containment parents form a cycle`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := ParseJGF([]byte(tt.doc))
			if err == nil {
				t.Fatalf("no error; graph has %d vertices", g.Len())
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error\n  %v\ndoes not contain\n  %s", err, tt.want)
			}
		})
	}
}

func TestParseJGFForeignSubsystemsDropped(t *testing.T) {
	doc := jgfDoc([]string{
		`{"id":"0","metadata":{"type":"cluster","paths":{"containment":"/cluster0","power":"/pdu0"}}}`,
		`{"id":"1","metadata":{"type":"node"}}`,
		`{"id":"2","metadata":{"type":"node"}}`,
		`{"id":"3","metadata":{"type":"pdu","paths":{"power":"/pdu3"}}}`,
	}, []string{
		edge("0", "1"),
		`{"source":"0","target":"2","metadata":{"subsystem":"containment"}}`,
		`{"source":"0","target":"3"}`,
		// would be second parents, or cycles, in containment
		`{"source":"3","target":"1","metadata":{"subsystem":"power"}}`,
		`{"source":"2","target":"0","metadata":{"subsystem":"ibnet"}}`,
		`{"source":"1","target":"2","metadata":{"subsystem":""}}`,
	})
	g, err := ParseJGF([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/cluster0", "/cluster0/node1", "/cluster0/node2", "/cluster0/pdu3"}
	if got := paths(g); !slices.Equal(got, want) {
		t.Errorf("paths = %q, want %q", got, want)
	}
	if p := g.Vertex(0).Paths; !maps.Equal(p, map[string]string{"power": "/pdu0"}) {
		t.Errorf("root Paths = %v", p)
	}
}

// roundTrip writes g, reads it back and checks the two graphs agree; it
// returns the JGF.
func roundTrip(t *testing.T, g *Graph) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJGF(&buf, g); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(buf.Bytes()) {
		t.Fatalf("WriteJGF wrote invalid JSON:\n%s", buf.Bytes())
	}
	g2, err := ParseJGF(buf.Bytes())
	if err != nil {
		t.Fatalf("ParseJGF(WriteJGF(g)): %v\n%s", err, buf.Bytes())
	}
	checkSameGraph(t, g2, g)
	var buf2 bytes.Buffer
	if err := WriteJGF(&buf2, g2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), buf2.Bytes()) {
		t.Errorf("WriteJGF(ReadJGF(WriteJGF(g))) != WriteJGF(g)")
	}
	return buf.Bytes()
}

func TestJGFRoundTrip(t *testing.T) {
	t.Run("generated", func(t *testing.T) {
		g := MustGenerate("cluster[1]->rack[2]->node[3]->socket[2]->{core[2],gpu[1],memory[2]:16GB}")
		nodes := g.ByTypeName("node")
		g.SetStatus(nodes[1], Down)
		g.SetStatus(g.Children(nodes[2])[0], Down) // a socket
		g.Vertex(nodes[0]).Properties = map[string]string{"zone": "a", "arch": "amd64", "quote\"d": "x\ny\u2028<>&"}
		g.Vertex(nodes[3]).Paths = map[string]string{"power": "/pdu0/node3", "ibnet": "/sw1/node3"}
		roundTrip(t, g)
	})
	t.Run("builder", func(t *testing.T) {
		g := Build("k8scluster").
			Group("subnet", "zone-a").
			Node("kind-worker2", Props{"topology.kubernetes.io/zone": "zone-a"}, Cores(2), Memory(4)).
			Node("node007", Pool("ssd", 1, 800, "GB")).
			Group("subnet", "zone-b").
			Node("control-plane", GPUs(2)).
			Down("node007").
			Graph()
		roundTrip(t, g)
	})
	t.Run("odd vertices", func(t *testing.T) {
		g := New()
		c := g.Intern("cluster")
		n := g.Intern("node")
		root, _ := g.AddVertex(Vertex{Type: c, Basename: "c", Name: "ñ/é", ID: -1, UniqID: 100, Rank: -1, Size: 1}, None)
		g.AddVertex(Vertex{Type: n, Basename: "node", ID: -1, UniqID: -5, Rank: 5, Size: 3, Unit: "x\x01\xff"}, root)
		g.AddVertex(Vertex{Type: n, Basename: "", ID: 4, UniqID: 7, Rank: -1, Size: 1 << 40, Name: "007"}, root)
		if err := g.Finalize(); err != nil {
			t.Fatal(err)
		}
		// Invalid UTF-8 is written as U+FFFD, so compare after one pass.
		var buf bytes.Buffer
		if err := WriteJGF(&buf, g); err != nil {
			t.Fatal(err)
		}
		g2, err := ParseJGF(buf.Bytes())
		if err != nil {
			t.Fatalf("%v\n%s", err, buf.Bytes())
		}
		if u := g2.Vertex(1).Unit; u != "x\x01\uFFFD" {
			t.Errorf("unit = %q", u)
		}
		g.Vertex(1).Unit = "x\x01\uFFFD"
		roundTrip(t, g)
	})
	for _, file := range []string{"testdata/example.json", "testdata/fluence.json"} {
		t.Run(file, func(t *testing.T) {
			g, err := ReadJGFFile(file)
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, g)
		})
	}
	t.Run("tiny cluster", func(t *testing.T) { roundTrip(t, TinyCluster()) })
}

func TestWriteJGFFormat(t *testing.T) {
	g := Build("cluster").Node("node0", Props{"b": "2", "a": "1"}, Memory(16)).Down("node0").Graph()
	g.Vertex(1).Paths = map[string]string{"power": "/p", "containment": "/ignored"}
	var buf bytes.Buffer
	if err := WriteJGF(&buf, g); err != nil {
		t.Fatal(err)
	}
	want := `{"graph":{"nodes":[
{"id":"0","metadata":{"type":"cluster","basename":"cluster","name":"cluster0","id":0,"uniq_id":0,"rank":-1,"exclusive":false,"unit":"","size":1,"status":0,"paths":{"containment":"/cluster0"}}},
{"id":"1","metadata":{"type":"node","basename":"node","name":"node0","id":0,"uniq_id":1,"rank":0,"exclusive":false,"unit":"","size":1,"status":1,"paths":{"containment":"/cluster0/node0","power":"/p"},"properties":{"a":"1","b":"2"}}},
{"id":"2","metadata":{"type":"memory","basename":"memory","name":"memory0","id":0,"uniq_id":2,"rank":0,"exclusive":false,"unit":"GB","size":16,"status":0,"paths":{"containment":"/cluster0/node0/memory0"}}}
],"edges":[
{"source":"0","target":"1","metadata":{"subsystem":"containment"}},
{"source":"1","target":"2","metadata":{"subsystem":"containment"}}
]}}
`
	if buf.String() != want {
		t.Errorf("WriteJGF:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestWriteJGFErrors(t *testing.T) {
	g := New()
	t0 := g.Intern("x")
	root, _ := g.AddVertex(Vertex{Type: t0, Basename: "x", UniqID: 1, Size: 1}, None)
	if err := WriteJGF(&bytes.Buffer{}, g); err == nil {
		t.Error("WriteJGF of an unfinalized graph: no error")
	}
	g.AddVertex(Vertex{Type: t0, Basename: "x", UniqID: 1, ID: 1, Size: 1}, root)
	if err := g.Finalize(); err != nil {
		t.Fatal(err)
	}
	err := WriteJGF(&bytes.Buffer{}, g)
	if err == nil || !strings.Contains(err.Error(), "uniq_id 1 is used by both /x0 and /x0/x1") {
		t.Errorf("err = %v", err)
	}
	if err := WriteJGF(failWriter{}, TinyCluster()); err == nil || err.Error() != "disk full" {
		t.Errorf("err = %v, want disk full", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }

func FuzzParseJGF(f *testing.F) {
	for _, file := range []string{"testdata/example.json", "testdata/fluence.json"} {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	var buf bytes.Buffer
	if err := WriteJGF(&buf, TinyCluster()); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(jgfDoc([]string{`{"id":"0","metadata":{"type":"a"}}`, `{"id":"1","metadata":{"type":"node","name":"n\u00e97"}}`},
		[]string{edge("0", "1"), edge("1", "0")})))
	f.Add([]byte(`{"graph":{"edges":[{"source":"b","target":"a","relation":"in"}],"nodes":[{"id":"a","metadata":{"type":"x","uniq_id":1,"status":"down","paths":{"containment":"/x1"}}},{"id":"b","metadata":{"type":"y","uniq_id":-2,"id":-1,"properties":null}}]}}`))
	f.Add([]byte(`{"graph":{"nodes":[{"id":"0","metadata":{"type":"x","size":0}}]}}`))
	f.Add([]byte(`[{"graph":1}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ParseJGF(data)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := WriteJGF(&out, g); err != nil {
			t.Fatalf("WriteJGF of a parsed graph: %v", err)
		}
		g2, err := ParseJGF(out.Bytes())
		if err != nil {
			t.Fatalf("ParseJGF(WriteJGF(g)): %v\n%s", err, out.Bytes())
		}
		if g2.Len() != g.Len() {
			t.Fatalf("round trip: %d vertices, want %d", g2.Len(), g.Len())
		}
	})
}

func BenchmarkParseJGF(b *testing.B) {
	g := MustGenerate("cluster[1]->node[2048]->socket[2]->{core[16],gpu[2]}")
	var buf bytes.Buffer
	if err := WriteJGF(&buf, g); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := ParseJGF(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(g.Len()), "ns/vertex")
}

func BenchmarkWriteJGF(b *testing.B) {
	g := MustGenerate("cluster[1]->node[2048]->socket[2]->{core[16],gpu[2]}")
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteJGF(discard{}, g); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestParseJGFMutations feeds every prefix of the test documents, and
// copies with one byte replaced, to the reader: it must fail cleanly or
// produce a graph that survives a write/read round trip.
func TestParseJGFMutations(t *testing.T) {
	for _, file := range []string{"testdata/example.json", "testdata/fluence.json"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		data = bytes.TrimSpace(data)
		check := func(doc []byte) {
			t.Helper()
			g, err := ParseJGF(doc)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "jgf: ") {
					t.Fatalf("error without jgf prefix: %v", err)
				}
				return
			}
			var buf bytes.Buffer
			if err := WriteJGF(&buf, g); err != nil {
				t.Fatal(err)
			}
			g2, err := ParseJGF(buf.Bytes())
			if err != nil || g2.Len() != g.Len() {
				t.Fatalf("round trip of %q: %v", doc, err)
			}
		}
		for i := range len(data) {
			if _, err := ParseJGF(data[:i]); err == nil {
				t.Errorf("%s: prefix of %d bytes parsed", file, i)
			}
			if len(data) > 2000 && i%5 != 0 {
				continue // keep the test fast
			}
			for _, c := range []byte(`"}],0n\{-1 x`) {
				doc := bytes.Clone(data)
				doc[i] = c
				check(doc)
			}
		}
	}
}
