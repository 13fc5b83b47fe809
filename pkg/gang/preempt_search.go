package gang

import (
	"maps"
	"slices"
	"strings"

	"github.com/fluence-sched/fluence/pkg/jobspec"
)

// The search for room. A preemptor's room is what is free plus what its
// victims would free, and where it must be depends on the group: a group
// required within one domain of a label (a rack, an NVLink domain) needs
// it all in one domain, any other group anywhere. So the search goes
// domain by domain, in value order (for a group without a required
// domain, the whole cluster is its one domain): in each, only the victims
// that hold something there are candidates (evicting one elsewhere frees
// nothing the group could use there), and the question put to the matcher
// is the group's request confined to that domain. The cheapest set over
// all domains wins (preempt_cost.go), ties going to the first domain.
//
// Within a domain it is a branch and bound over the candidates, cheapest
// first, the matcher (FitsWithout) the oracle: each candidate is taken
// or left; a branch ends when what it took lets the group fit (no superset
// is cheaper), when it could not beat the cheapest set found so far, in
// any domain, even by taking only the cheapest candidate left, or when
// taking every candidate left would still not make room. Freeing more
// never keeps a group from fitting, so this finds the cheapest set, and
// none when the group would not fit with every candidate gone.
//
// The search is exact up to searchCap probes of the matcher per
// preemption. Beyond that, the domain being searched keeps the cheapest
// set found so far and the domains after it are searched greedily
// (fewest: the shortest cheapest-first prefix that makes room, each of its
// victims then spared, dearest first, if the rest still make room): a
// preemption stays bounded, and says so when it was not exact.

// searchCap is how many matcher probes one preemption's exact search may
// make: each costs one match over the domain, so at most a few
// milliseconds in all on thousands of nodes.
const searchCap = 512

// searchWork bounds the exact search's work the other way: each probe
// takes its victims out of the planner and puts them back, so its cost
// grows with the set asked about. Ten thousand running lone pods on a
// thousand nodes made sets of thousands; the exact search stops once
// its probes together have asked about this many victims, and the greedy
// search, whose work grows as n log n, takes over.
const searchWork = 20000

// searchChecks bounds the sets a quick test (preempt_nodes.go's
// arithmetic) is asked about in one preemption: each is cheap, but a
// node of a hundred small pods has many sets a branch and bound may walk.
const searchChecks = 20000

// preemptDomain is where a preemptor might get its room, and its request
// confined there.
type preemptDomain struct {
	name string // key=value; "" for the whole cluster
	js   *jobspec.Jobspec
	// nodes are the domain's nodes; nil for the whole cluster.
	nodes map[string]bool
}

// preemptDomains are the domains a waiting allocation may take room in,
// in value order.
func (c *Core) preemptDomains(g *group, a *alloc) []preemptDomain {
	key := g.id.TopologyKey
	if key == "" {
		return []preemptDomain{{js: a.js}}
	}
	byValue := map[string]map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(c.nodes)) {
		if v, ok := c.nodes[name].Labels[key]; ok {
			if byValue[v] == nil {
				byValue[v] = map[string]bool{}
			}
			byValue[v][name] = true
		}
	}
	var out []preemptDomain
	for _, v := range slices.Sorted(maps.Keys(byValue)) {
		out = append(out, preemptDomain{name: key + "=" + v, js: inDomain(a.js, key, v), nodes: byValue[v]})
	}
	return out
}

// inDomain is the request confined to the domain key=value: the domain a
// request built for one domain of a flat label was confined to is
// replaced, and a request for any domain of a level gets one.
func inDomain(js *jobspec.Jobspec, key, value string) *jobspec.Jobspec {
	out := *js
	con := jobspec.Properties(key + "=" + value)
	if rest := withoutDomain(js.Constraint, key); rest != nil {
		con = jobspec.And(rest, con)
	}
	out.Constraint = con
	return &out
}

// withoutDomain is the constraint without the domain (a properties term
// key=value) it was confined to, nil if nothing is left.
func withoutDomain(con *jobspec.Constraint, key string) *jobspec.Constraint {
	if con == nil {
		return nil
	}
	switch con.Op {
	case jobspec.OpProperties:
		if len(con.Values) == 1 && strings.HasPrefix(con.Values[0], key+"=") {
			return nil
		}
	case jobspec.OpAnd:
		var args []*jobspec.Constraint
		for _, arg := range con.Args {
			if r := withoutDomain(arg, key); r != nil {
				args = append(args, r)
			}
		}
		if len(args) != len(con.Args) {
			if len(args) == 0 {
				return nil
			}
			return jobspec.And(args...)
		}
	}
	return con
}

// found is a search's answer in one domain.
type found[T priced] struct {
	domain string
	set    []T
	cost   setCost
	ok     bool
}

// search is one preemption's search: the probes it made, and whether it
// was exact.
type search struct {
	probes int
	cap    int
	work   int  // victims asked about, over all probes
	checks int  // sets a quick test was asked about
	greedy bool // the cap was reached: some domain was searched greedily
}

// cheapestRoom searches every domain for the cheapest set of candidates
// that lets the request fit, and returns it with the set it displaced,
// the cheapest found in an earlier domain (a dearer choice, for explain),
// if any. in says whether a
// candidate may make room in a domain (it holds something there, and,
// when it could only be moved, it fits elsewhere); fits asks the matcher.
//
// The caller has made sure the group does not fit with no victim at all:
// a domain is never asked that.
func cheapestRoom[T priced](s *search, doms []preemptDomain, cands []T, in func(T, preemptDomain) bool, fits func(js *jobspec.Jobspec, set []T) bool) (best, second found[T]) {
	slices.SortStableFunc(cands, func(a, b T) int { return comparePrice(a.price(), b.price()) })
	for _, d := range doms {
		var local []T
		for _, v := range cands {
			if d.nodes == nil || in(v, d) {
				local = append(local, v)
			}
		}
		f := cheapestIn(s, local, func(set []T) bool { return fits(d.js, set) }, nil, best)
		if f.ok {
			f.domain = d.name
			best, second = f, best
		}
	}
	return best, second
}

// cheapestIn is the cheapest set of cands (sorted cheapest first) for
// which fits holds, when it is cheaper than bound, the cheapest found so
// far in other domains. quick, when not nil, is a cheaper test that
// holds wherever fits does (preempt_nodes.go's arithmetic): a set it
// turns away is not put to the matcher.
func cheapestIn[T priced](s *search, cands []T, fits, quick func([]T) bool, bound found[T]) found[T] {
	var out found[T]
	beats := func(c setCost) bool {
		return (!bound.ok || compareCost(c, bound.cost) < 0) && (!out.ok || compareCost(c, out.cost) < 0)
	}
	matcher := fits
	if quick != nil {
		fits = func(set []T) bool { return quick(set) && matcher(set) }
	}
	probe := func(set []T) (fit, done bool) {
		if s.greedy || s.probes >= s.cap || s.work+len(set) > searchWork || s.checks >= searchChecks {
			s.greedy = true
			return false, false
		}
		if quick != nil {
			s.checks++
			if !quick(set) {
				return false, true
			}
		}
		s.probes++
		s.work += len(set)
		return matcher(set), true
	}
	if len(cands) == 0 || !beats(costOf(cands[:1])) {
		return out // even its cheapest candidate could not win
	}
	if s.greedy {
		return greedyIn(cands, fits, beats)
	}
	var chosen []T
	// room: chosen with every candidate from i on is known to make room
	// (taking a candidate leaves that set as it was; leaving one is
	// when it must be asked again).
	var walk func(i int, cost setCost, room bool)
	walk = func(i int, cost setCost, room bool) {
		if i == len(cands) || !beats(cost.plus(cands[i].price())) {
			return
		}
		if !room {
			if fit, done := probe(append(slices.Clone(chosen), cands[i:]...)); !done || !fit {
				return
			}
		}
		with := cost.plus(cands[i].price())
		chosen = append(chosen, cands[i])
		fit, done := probe(chosen)
		switch {
		case !done:
		case fit:
			out = found[T]{set: slices.Clone(chosen), cost: with, ok: true}
		default:
			walk(i+1, with, true)
		}
		chosen = chosen[:len(chosen)-1]
		walk(i+1, cost, false)
	}
	walk(0, setCost{}, false)
	if s.greedy {
		// Out of probes: today's greedy answer, if it beats what the
		// search found before it stopped.
		if g := greedyIn(cands, fits, beats); g.ok {
			return g
		}
	}
	return out
}

// greedyIn is fewest's answer, when beats holds for its cost.
func greedyIn[T priced](cands []T, fits func([]T) bool, beats func(setCost) bool) found[T] {
	set, ok := fewest(cands, fits)
	if !ok {
		return found[T]{}
	}
	if c := costOf(set); beats(c) {
		return found[T]{set: set, cost: c, ok: true}
	}
	return found[T]{}
}

// fewest is the shortest prefix of cands, cheapest first, for which fits
// holds, each of its members then spared again, dearest first, if the
// rest still fit: the fewest, cheapest victims that make room.
//
// Freeing more never keeps a group from fitting, so fits is monotone in
// the prefix: the prefix is found by halving (the caller has made sure
// nothing at all is no room). Sparing goes by runs, halving their length
// down to one member: with thousands of candidates, most of the prefix
// needless (a lone pod's room is on one node, the cheapest candidates on
// many), long runs go at once. A member kept once is needed for good
// (sparing more never makes room), so the result spares no one member
// it could. The probes' work grows as n log n, not n squared.
func fewest[T any](cands []T, fits func([]T) bool) ([]T, bool) {
	if len(cands) == 0 || !fits(cands) {
		return nil, false
	}
	lo, hi := 0, len(cands) // cands[:lo] does not fit, cands[:hi] does
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if fits(cands[:mid]) {
			hi = mid
		} else {
			lo = mid
		}
	}
	chosen := slices.Clone(cands[:hi])
	for run := len(chosen) / 2; run >= 1; run /= 2 {
		for end := len(chosen); end > 0; end -= run {
			start := max(end-run, 0)
			if end-start >= len(chosen) {
				continue // never spare them all
			}
			rest := slices.Delete(slices.Clone(chosen), start, end)
			if fits(rest) {
				chosen = rest
			}
		}
	}
	return chosen, true
}
