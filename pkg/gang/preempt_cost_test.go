package gang

import (
	"testing"
)

func TestCompareCost(t *testing.T) {
	p := func(prio int32, lost int64, key string) price { return price{prio: prio, lost: lost, key: key} }
	for _, tc := range []struct {
		name string
		a, b []price
		want int
	}{
		{"nothing is cheapest", nil, []price{p(1, 0, "x")}, -1},
		{"lower priority first, whatever its work", []price{p(5, 1000, "a"), p(5, 1000, "b")}, []price{p(10, 1, "c")}, -1},
		{"a victim of no work still counts at its priority", []price{p(10, 0, "a")}, []price{p(5, 500, "b")}, 1},
		{"then least work lost", []price{p(10, 40, "a")}, []price{p(10, 41, "b")}, -1},
		{"work before the number of victims", []price{p(10, 20, "a"), p(10, 20, "b")}, []price{p(10, 41, "c")}, -1},
		{"then fewest victims", []price{p(10, 0, "a"), p(10, 40, "b")}, []price{p(10, 40, "c")}, 1},
		{"the highest priority decides first", []price{p(20, 1, "a")}, []price{p(10, 1, "b"), p(5, 900, "c")}, 1},
		{"then keys", []price{p(10, 5, "b")}, []price{p(10, 5, "a")}, 1},
		{"equal", []price{p(10, 5, "a"), p(5, 1, "b")}, []price{p(5, 1, "b"), p(10, 5, "a")}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a, b setCost
			for _, x := range tc.a {
				a = a.plus(x)
			}
			for _, x := range tc.b {
				b = b.plus(x)
			}
			if got := compareCost(a, b); got != tc.want {
				t.Fatalf("compareCost = %d, want %d", got, tc.want)
			}
			if got := compareCost(b, a); got != -tc.want {
				t.Fatalf("compareCost reversed = %d, want %d", got, -tc.want)
			}
		})
	}
}
