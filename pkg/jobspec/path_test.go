package jobspec

import (
	"strings"
	"testing"
)

func TestPathString(t *testing.T) {
	p := root.k("attributes").k("user").k("a b").i(3).k("").k("x")
	if got, want := p.String(), `attributes.user["a b"][3][""].x`; got != want {
		t.Errorf("got %s want %s", got, want)
	}
	q := root
	for i := 0; i < 100; i++ {
		q = q.k("a")
	}
	s := q.String()
	if !strings.HasPrefix(s, "a.a.a") || !strings.HasSuffix(s, "a.a.a") || !strings.Contains(s, "[...]") || len(s) > 120 {
		t.Errorf("long path rendered as %s", s)
	}
}
