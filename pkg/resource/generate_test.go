package resource

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestGenerateSmall(t *testing.T) {
	g, err := Generate("cluster[1]->node[2]->{core[2],memory[1]:64GB}")
	if err != nil {
		t.Fatal(err)
	}
	checkVertices(t, g, []wantVertex{
		{path: "/cluster0", typ: "cluster", basename: "cluster", id: 0, uniq: 0, rank: -1, size: 1},
		{path: "/cluster0/node0", typ: "node", basename: "node", id: 0, uniq: 1, rank: 0, size: 1},
		{path: "/cluster0/node0/core0", typ: "core", basename: "core", id: 0, uniq: 2, rank: 0, size: 1},
		{path: "/cluster0/node0/core1", typ: "core", basename: "core", id: 1, uniq: 3, rank: 0, size: 1},
		{path: "/cluster0/node0/memory0", typ: "memory", basename: "memory", id: 0, uniq: 4, rank: 0, size: 64, unit: "GB"},
		{path: "/cluster0/node1", typ: "node", basename: "node", id: 1, uniq: 5, rank: 1, size: 1},
		{path: "/cluster0/node1/core0", typ: "core", basename: "core", id: 0, uniq: 6, rank: 1, size: 1},
		{path: "/cluster0/node1/core1", typ: "core", basename: "core", id: 1, uniq: 7, rank: 1, size: 1},
		{path: "/cluster0/node1/memory0", typ: "memory", basename: "memory", id: 0, uniq: 8, rank: 1, size: 64, unit: "GB"},
	})
	for i, typ := range []string{"cluster", "node", "core", "memory"} {
		if g.TypeName(TypeID(i)) != typ {
			t.Errorf("TypeName(%d) = %q, want %q", i, g.TypeName(TypeID(i)), typ)
		}
	}
	if g.NodesUp() != 2 {
		t.Errorf("NodesUp = %d", g.NodesUp())
	}
}

func TestGenerateIssueExample(t *testing.T) {
	g := MustGenerate("cluster[1]->rack[2]->node[64]->socket[2]->{core[16],gpu[2],memory[4]:16}")
	if g.Len() != 1+2+128+256*(1+16+2+4) {
		t.Fatalf("Len = %d", g.Len())
	}
	for typ, n := range map[string]int{"cluster": 1, "rack": 2, "node": 128, "socket": 256, "core": 4096, "gpu": 512, "memory": 1024} {
		if got := len(g.ByTypeName(typ)); got != n {
			t.Errorf("%d %s vertices, want %d", got, typ, n)
		}
	}
	for i := range int32(g.Len()) {
		if v := g.Vertex(i); v.UniqID != int64(i) || v.Name != "" || v.Basename != g.TypeName(v.Type) {
			t.Fatalf("vertex %d: %+v", i, *v)
		}
	}
	// Nodes are numbered across racks; ranks follow.
	for i, n := range g.ByTypeName("node") {
		v := g.Vertex(n)
		if v.ID != int64(i) || v.Rank != int64(i) {
			t.Errorf("node %d: id %d rank %d", i, v.ID, v.Rank)
		}
	}
	for _, tt := range []struct {
		path string
		id   int64
		rank int64
		size int64
	}{
		{"/cluster0", 0, -1, 1},
		{"/cluster0/rack1", 1, -1, 1},
		{"/cluster0/rack1/node64", 64, 64, 1},
		{"/cluster0/rack1/node127/socket1", 1, 127, 1},
		{"/cluster0/rack0/node5/socket0/core15", 15, 5, 1},
		{"/cluster0/rack0/node5/socket1/core16", 16, 5, 1},
		{"/cluster0/rack1/node64/socket1/core31", 31, 64, 1},
		{"/cluster0/rack1/node64/socket1/gpu3", 3, 64, 1},
		{"/cluster0/rack1/node64/socket1/memory7", 7, 64, 16},
	} {
		i, ok := g.ByPath(tt.path)
		if !ok {
			t.Errorf("no vertex at %s", tt.path)
			continue
		}
		if v := g.Vertex(i); v.ID != tt.id || v.Rank != tt.rank || v.Size != tt.size || v.Unit != "" {
			t.Errorf("%s: id %d rank %d size %d unit %q, want %d %d %d", tt.path, v.ID, v.Rank, v.Size, v.Unit, tt.id, tt.rank, tt.size)
		}
	}
	// Children of a socket: cores, then gpus, then memory (creation order).
	sock, _ := g.ByPath("/cluster0/rack0/node0/socket1")
	var names []string
	for _, c := range g.Children(sock) {
		names = append(names, g.Vertex(c).DisplayName())
	}
	if want := "core16 core17 core18 core19 core20 core21 core22 core23 core24 core25 core26 core27 core28 core29 core30 core31 gpu2 gpu3 memory4 memory5 memory6 memory7"; strings.Join(names, " ") != want {
		t.Errorf("socket1 children = %s", strings.Join(names, " "))
	}
}

func TestGenerateShapes(t *testing.T) {
	tests := []struct {
		spec  string
		paths []string
		ids   []int64
		ranks []int64
	}{
		{
			// No node: everything is numbered globally, ranks are -1.
			spec:  "cluster[1]->rack[2]->core[2]",
			paths: []string{"/cluster0", "/cluster0/rack0", "/cluster0/rack0/core0", "/cluster0/rack0/core1", "/cluster0/rack1", "/cluster0/rack1/core2", "/cluster0/rack1/core3"},
			ids:   []int64{0, 0, 0, 1, 1, 2, 3},
			ranks: []int64{-1, -1, -1, -1, -1, -1, -1},
		},
		{
			// Group at the end of a chain; sibling chains of different depth.
			spec:  " cluster [ 1 ] -> { rack[1] -> node[2] , storage[1]:100TB } ",
			paths: []string{"/cluster0", "/cluster0/rack0", "/cluster0/rack0/node0", "/cluster0/rack0/node1", "/cluster0/storage0"},
			ids:   []int64{0, 0, 0, 1, 0},
			ranks: []int64{-1, -1, 0, 1, -1},
		},
		{
			// Nested groups; a group directly inside a group is flattened.
			spec: "cluster[1]->node[1]->{socket[2]->{core[1],{gpu[1]}},memory[1]}",
			paths: []string{"/cluster0", "/cluster0/node0",
				"/cluster0/node0/socket0", "/cluster0/node0/socket0/core0", "/cluster0/node0/socket0/gpu0",
				"/cluster0/node0/socket1", "/cluster0/node0/socket1/core1", "/cluster0/node0/socket1/gpu1",
				"/cluster0/node0/memory0"},
			ids:   []int64{0, 0, 0, 0, 0, 1, 1, 1, 0},
			ranks: []int64{-1, 0, 0, 0, 0, 0, 0, 0, 0},
		},
		{
			// A node below a node: the inner one opens its own numbering.
			spec:  "cluster[1]->node[2]->{core[1],node[1]->core[1]}",
			paths: []string{"/cluster0", "/cluster0/node0", "/cluster0/node0/core0", "/cluster0/node0/node1", "/cluster0/node0/node1/core0", "/cluster0/node2", "/cluster0/node2/core0", "/cluster0/node2/node3", "/cluster0/node2/node3/core0"},
			ids:   []int64{0, 0, 0, 1, 0, 2, 0, 3, 0},
			ranks: []int64{-1, 0, 0, 1, 1, 2, 2, 3, 3},
		},
		{
			spec:  "solo[1]",
			paths: []string{"/solo0"},
			ids:   []int64{0},
			ranks: []int64{-1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			g, err := Generate(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := paths(g); !slices.Equal(got, tt.paths) {
				t.Errorf("paths:\n got %q\nwant %q", got, tt.paths)
			}
			var ids, ranks []int64
			for i := range int32(g.Len()) {
				ids = append(ids, g.Vertex(i).ID)
				ranks = append(ranks, g.Vertex(i).Rank)
			}
			if !slices.Equal(ids, tt.ids) || !slices.Equal(ranks, tt.ranks) {
				t.Errorf("ids %v ranks %v, want %v %v", ids, ranks, tt.ids, tt.ranks)
			}
			roundTrip(t, g)
		})
	}
	// Units and sizes.
	g := MustGenerate("cluster[1]->node[1]->{memory[2]:64GB,ssd[1]: 800 GiB,gpu[1]:2}")
	var got []string
	for i := range int32(g.Len()) {
		v := g.Vertex(i)
		got = append(got, fmt.Sprintf("%s:%d%s", v.DisplayName(), v.Size, v.Unit))
	}
	if want := "cluster0:1 node0:1 memory0:64GB memory1:64GB ssd0:800GiB gpu0:2"; strings.Join(got, " ") != want {
		t.Errorf("got %s, want %s", strings.Join(got, " "), want)
	}
}

func TestGenerateErrors(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"", `graph spec: at column 1: empty spec`},
		{"   ", `graph spec: at column 4: empty spec`},
		{"cluster[1]->rack[2->node[1]", `graph spec: at column 19: expected "]", found '-'`},
		{"cluster", `graph spec: at column 8: expected "[", found end of spec`},
		{"cluster[]", `graph spec: at column 9: expected a count (a positive integer), found ']'`},
		{"cluster[2]", `graph spec: at column 1: the root must have count 1 (a single root), got 2`},
		{"cluster[1]->node[0]", `graph spec: at column 18: count must be at least 1, got 0`},
		{"{cluster[1]}", `graph spec: at column 1: the root must be a single TYPE[1] item, not a group`},
		{"Cluster[1]", `graph spec: at column 1: expected a type name, found 'C'`},
		{"cluster[1]->\u00e9[1]", `graph spec: at column 13: expected a type name or "{", found byte 0xc3`},
		{"cluster[1]->Node[1]", `graph spec: at column 13: expected a type name or "{", found 'N'`},
		{"cluster[1]->", `graph spec: at column 13: expected a type name or "{", found end of spec`},
		{"cluster[1]-node[1]", `graph spec: at column 11: expected "->"`},
		{"cluster[1]->node[1],core[1]", `graph spec: at column 20: expected "->" or end of spec, found ','`},
		{"cluster[1]->{node[1]}->core[1]", `graph spec: at column 22: expected end of spec after "}", found '-'`},
		{"cluster[1]->{node[1]->{core[1]}->gpu[1]}", `graph spec: at column 32: expected "," or "}" after "}", found '-'`},
		{"cluster[1]->{node[1],}", `graph spec: at column 22: expected a type name or "{", found '}'`},
		{"cluster[1]->{node[1]", `graph spec: at column 21: expected "," or "}", found end of spec`},
		{"cluster[1]->{node[1] x}", `graph spec: at column 22: expected "->", "," or "}", found 'x'`},
		{"cluster[1]->node[1]:", `graph spec: at column 21: expected a size (a positive integer), found end of spec`},
		{"cluster[1]->node[1]:0", `graph spec: at column 21: size must be at least 1, got 0`},
		{"cluster[1]->node[1]:16GB!", `graph spec: at column 25: expected "->" or end of spec, found '!'`},
		{"cluster[1]->node[99999999999]", `graph spec: at column 18: count 99999999999 is too large (at most 50000000)`},
		{"cluster[1]->node[100000]->core[1000]", `graph spec: at column 27: too many vertices: the spec describes more than 50000000`},
		{"cluster[1]->{a[25000000],b[25000000]}", `graph spec: at column 26: too many vertices`},
		{"a[1]->" + strings.Repeat("{", 2000), `spec nested deeper than 1000 levels`},
		{"a[1]" + strings.Repeat("->a[1]", 1500), `spec nested deeper than 1000 levels`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			g, err := Generate(tt.spec)
			if err == nil {
				t.Fatalf("no error; %d vertices", g.Len())
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error\n  %v\ndoes not contain\n  %s", err, tt.want)
			}
		})
	}
}

func TestMustGeneratePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Error("MustGenerate of a bad spec did not panic")
		}
	}()
	MustGenerate("cluster[2]")
}

func FuzzGenerate(f *testing.F) {
	for _, s := range []string{
		"cluster[1]->rack[2]->node[4]->socket[2]->{core[4],gpu[2],memory[4]:16GB}",
		"cluster[1]->{rack[1]->node[2],storage[1]:100TB}",
		"cluster[1]->node[2]->{core[1],node[1]->core[1]}",
		"a[1]->{{b[2]},c[1]->{d[1],e[1]:3x}}",
		"cluster[1]->rack[2->node[1]",
		" x [ 1 ] ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		if _, total, err := parseSpec(spec); err != nil || total > 10_000 {
			return // keep the fuzzer fast; big specs are tested elsewhere
		}
		g, err := Generate(spec)
		if err != nil {
			t.Fatalf("parseSpec accepted %q but Generate failed: %v", spec, err)
		}
		var buf bytes.Buffer
		if err := WriteJGF(&buf, g); err != nil {
			t.Fatal(err)
		}
		g2, err := ParseJGF(buf.Bytes())
		if err != nil {
			t.Fatalf("ParseJGF(WriteJGF(Generate(%q))): %v", spec, err)
		}
		if g2.Len() != g.Len() {
			t.Fatalf("round trip: %d vertices, want %d", g2.Len(), g.Len())
		}
	})
}

const spec16K = "cluster[1]->node[16384]->socket[2]->{core[16],gpu[2]}"

func BenchmarkGenerate16K(b *testing.B) {
	b.ReportAllocs()
	var g *Graph
	for b.Loop() {
		g = MustGenerate(spec16K)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(g.Len()), "ns/vertex")
	// Retained heap per vertex of one graph.
	g = nil
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	g = MustGenerate(spec16K)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc))/float64(g.Len()), "heapB/vertex")
	runtime.KeepAlive(g)
}

func TestGenerateDocExamples(t *testing.T) {
	// The examples in docs/graph-spec.md.
	for spec, n := range map[string]int{
		"cluster[1]->rack[2]->node[64]->socket[2]->{core[16],gpu[2],memory[4]:16}": 6019,
		"cluster[1]->node[4]->socket[2]->{core[4],gpu[1],memory[1]:16GB}":          61,
		"cluster[1]->{rack[2]->node[8]->core[32],storage[1]:100TB}":                532,
		"cluster[1]->zone[3]->node[10]->{core[8],memory[1]:32GB}":                  304,
	} {
		if _, total, err := parseSpec(spec); err != nil || total != int64(n) {
			t.Errorf("%s: %d vertices, %v; want %d", spec, total, err, n)
		}
	}
	if _, total, _ := parseSpec(spec16K); total != 638977 {
		t.Errorf("%s: %d vertices", spec16K, total)
	}
	for _, bad := range []string{"cluster[1]->node[1 6]", "cluster[1]->no de[1]", "cluster[1]-  >node[1]"} {
		if _, err := Generate(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
