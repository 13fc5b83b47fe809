package jobspec

import (
	"math"
	"testing"
)

func TestLattice(t *testing.T) {
	cases := []struct {
		c    Count
		n    int64
		want int64
	}{
		// Fixed counts: exactly N when at least N are available.
		{Fixed(4), 3, 0},
		{Fixed(4), 4, 4},
		{Fixed(4), 100, 4},
		// '+': min, min+k, min+2k, ... capped at max.
		{Count{2, 8, '+', 2}, 1, 0},
		{Count{2, 8, '+', 2}, 2, 2},
		{Count{2, 8, '+', 2}, 3, 2},
		{Count{2, 8, '+', 2}, 7, 6},
		{Count{2, 8, '+', 2}, 8, 8},
		{Count{2, 8, '+', 2}, 100, 8},
		{Count{3, 9, '+', 4}, 9, 7}, // 3, 7 (11 > max)
		{Count{1, Unbounded, '+', 1}, 1000, 1000},
		{Count{1, Unbounded, '+', 1}, math.MaxInt64, math.MaxInt64},
		// '*': min, min*k, min*k^2, ...
		{Count{1, 64, '*', 2}, 0, 0},
		{Count{1, 64, '*', 2}, 1, 1},
		{Count{1, 64, '*', 2}, 7, 4},
		{Count{1, 64, '*', 2}, 64, 64},
		{Count{1, 64, '*', 2}, 1000, 64},
		{Count{3, 100, '*', 3}, 80, 27},
		{Count{1, Unbounded, '*', 2}, math.MaxInt64, 1 << 62},
		// '^': min, min^k, (min^k)^k, ...
		{Count{2, 1000, '^', 2}, 1, 0},
		{Count{2, 1000, '^', 2}, 3, 2},
		{Count{2, 1000, '^', 2}, 4, 4},
		{Count{2, 1000, '^', 2}, 255, 16},
		{Count{2, 1000, '^', 2}, 256, 256},
		{Count{2, 1000, '^', 2}, 100000, 256}, // 65536 > max
		{Count{3, Unbounded, '^', 3}, 26, 3},
		{Count{3, Unbounded, '^', 3}, 27, 27},
		{Count{2, Unbounded, '^', 2}, math.MaxInt64, 1 << 32},
		// Invalid counts never panic or loop.
		{Count{2, 8, '+', 0}, 5, 5},
		{Count{2, 8, '*', 1}, 5, 2},
		{Count{1, 8, '^', 2}, 5, 1},
		{Count{0, 8, '+', 1}, 5, 0},
	}
	for _, tc := range cases {
		if got := tc.c.Lattice(tc.n); got != tc.want {
			t.Errorf("%s.Lattice(%d) = %d, want %d", tc.c, tc.n, got, tc.want)
		}
	}
}

func TestCountString(t *testing.T) {
	for c, want := range map[Count]string{
		Fixed(4):               "4",
		{2, Unbounded, '+', 1}: "2+",
		{2, 8, '+', 2}:         "2-8:+2",
		{1, 64, '*', 2}:        "1-64:*2",
		{2, Unbounded, '^', 3}: "2+:^3",
	} {
		if got := c.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", c, got, want)
		}
	}
	if !Fixed(3).IsFixed() || (Count{3, 3, '*', 2}).IsFixed() || (Count{3, 4, '+', 1}).IsFixed() {
		t.Error("IsFixed")
	}
}
