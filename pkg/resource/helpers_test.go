package resource

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// diffGraphs describes every difference between two finalized graphs:
// vertex fields (types compared by name and TypeID), parents and children.
func diffGraphs(a, b *Graph) []string {
	var d []string
	if a.Len() != b.Len() {
		return []string{fmt.Sprintf("Len: %d != %d", a.Len(), b.Len())}
	}
	for i := range int32(a.Len()) {
		va, vb := a.Vertex(i), b.Vertex(i)
		at, bt := a.TypeName(va.Type), b.TypeName(vb.Type)
		where := fmt.Sprintf("vertex %d (%s)", i, a.Path(i))
		add := func(field string, x, y any) {
			d = append(d, fmt.Sprintf("%s: %s: %v != %v", where, field, x, y))
		}
		if at != bt {
			add("type", at, bt)
		}
		if va.Type != vb.Type {
			add("TypeID", va.Type, vb.Type)
		}
		if va.Status != vb.Status {
			add("Status", va.Status, vb.Status)
		}
		if va.Basename != vb.Basename {
			add("Basename", va.Basename, vb.Basename)
		}
		if va.Name != vb.Name {
			add("Name", va.Name, vb.Name)
		}
		if va.ID != vb.ID {
			add("ID", va.ID, vb.ID)
		}
		if va.UniqID != vb.UniqID {
			add("UniqID", va.UniqID, vb.UniqID)
		}
		if va.Rank != vb.Rank {
			add("Rank", va.Rank, vb.Rank)
		}
		if va.Size != vb.Size {
			add("Size", va.Size, vb.Size)
		}
		if va.Unit != vb.Unit {
			add("Unit", va.Unit, vb.Unit)
		}
		if !maps.Equal(va.Properties, vb.Properties) {
			add("Properties", va.Properties, vb.Properties)
		}
		if !maps.Equal(va.Paths, vb.Paths) {
			add("Paths", va.Paths, vb.Paths)
		}
		if a.Parent(i) != b.Parent(i) {
			add("Parent", a.Parent(i), b.Parent(i))
		}
		if !slices.Equal(a.Children(i), b.Children(i)) {
			add("Children", a.Children(i), b.Children(i))
		}
		if a.SubtreeEnd(i) != b.SubtreeEnd(i) {
			add("SubtreeEnd", a.SubtreeEnd(i), b.SubtreeEnd(i))
		}
	}
	if a.NodesUp() != b.NodesUp() {
		d = append(d, fmt.Sprintf("NodesUp: %d != %d", a.NodesUp(), b.NodesUp()))
	}
	return d
}

func checkSameGraph(t *testing.T, got, want *Graph) {
	t.Helper()
	if d := diffGraphs(got, want); len(d) > 0 {
		if len(d) > 20 {
			d = append(d[:20], fmt.Sprintf("... and %d more", len(d)-20))
		}
		t.Errorf("graphs differ (got != want):\n%s", strings.Join(d, "\n"))
	}
}

// paths lists the containment path of every vertex in index order.
func paths(g *Graph) []string {
	var out []string
	for i := range int32(g.Len()) {
		out = append(out, g.Path(i))
	}
	return out
}
