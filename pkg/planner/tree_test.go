package planner

import "testing"

// depth returns the height of the treap.
func (t *tree) depth(n int32) int {
	if n == 0 {
		return 0
	}
	return 1 + max(t.depth(t.nodes[n].left), t.depth(t.nodes[n].right))
}

// Inserting time points in order is the worst case for an unbalanced
// search tree; the treap must stay logarithmic.
func TestTreeStaysBalanced(t *testing.T) {
	p := New(1)
	for i := range int64(50000) {
		must(p.Add(2*i, 1, 1))
	}
	if d := p.t.depth(p.t.root); d > 60 {
		t.Errorf("depth %d for %d points", d, p.NumPoints())
	}
	for i := range SpanID(50000) {
		if i%2 == 0 {
			if err := p.Remove(i + 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	if d := p.t.depth(p.t.root); d > 60 {
		t.Errorf("depth %d after removals", d)
	}
	if got, _ := p.EarliestFit(0, 3, 1); got != 3 {
		t.Errorf("EarliestFit = %d, want 3", got)
	}
}

// The inline part of the cursor stack covers any realistic treap; the spill
// path must still keep order when it is exceeded.
func TestNodeStackSpill(t *testing.T) {
	var s nodeStack
	for i := range int32(300) {
		s.push(i - 150)
	}
	for i := int32(299); i >= 0; i-- {
		if got := s.pop(); got != i-150 {
			t.Fatalf("pop = %d, want %d", got, i-150)
		}
	}
	if s.n != 0 {
		t.Fatalf("n = %d", s.n)
	}
	s.push(7)
	if s.pop() != 7 {
		t.Fatal("reuse after spill")
	}
}

// A freed point's slot is reused, and an emptied tree gives its arena back
// to a single sentinel, so churn does not grow memory.
func TestArenaReuse(t *testing.T) {
	p := New(10)
	for range 1000 {
		id := must(p.Add(5, 10, 3))
		id2 := must(p.Add(0, 20, 3))
		if err := p.Remove(id); err != nil {
			t.Fatal(err)
		}
		if err := p.Remove(id2); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(p.t.nodes); n != 1 {
		t.Errorf("arena holds %d nodes after churn, want the sentinel only", n)
	}
	must(p.Add(0, 10, 1))
	for range 1000 {
		id := must(p.Add(20, 10, 1))
		if err := p.Remove(id); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(p.t.nodes); n > 5 {
		t.Errorf("arena grew to %d nodes with 2 live points", n)
	}
}
