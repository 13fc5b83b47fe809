package plugin

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/inspect"
)

// Inspectors are the fluence plugins of one scheduler process, by profile:
// what the inspection API answers from. The scheduler command makes one,
// passes it to the plugin factory (Options.Inspectors) and serves Handler on
// its secure port.
type Inspectors struct {
	mu        sync.Mutex
	byProfile map[string]*Plugin
}

// NewInspectors returns an empty set.
func NewInspectors() *Inspectors { return &Inspectors{byProfile: map[string]*Plugin{}} }

func (r *Inspectors) add(p *Plugin) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byProfile[p.h.ProfileName()] = p
}

// choose returns the plugin of the profile, or the only one when profile
// is "".
func (r *Inspectors) choose(profile string) (*Plugin, *inspect.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if profile != "" {
		if p := r.byProfile[profile]; p != nil {
			return p, nil
		}
		st := inspect.NewStatus(http.StatusNotFound, "NotFound", fmt.Sprintf("no fluence profile %q in this scheduler (it runs %s)", profile, r.namesLocked()))
		return nil, &st
	}
	switch len(r.byProfile) {
	case 0:
		st := inspect.NewStatus(http.StatusServiceUnavailable, "ServiceUnavailable", "this scheduler runs no fluence profile (yet)")
		return nil, &st
	case 1:
		for _, p := range r.byProfile {
			return p, nil
		}
	}
	st := inspect.NewStatus(http.StatusBadRequest, "BadRequest", fmt.Sprintf("this scheduler runs several fluence profiles (%s): choose one with ?%s=", r.namesLocked(), inspect.ProfileParam))
	return nil, &st
}

func (r *Inspectors) namesLocked() string {
	names := slices.Sorted(maps.Keys(r.byProfile))
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// view reads the core's state as published for this request
// (Plugin.published): the answer is built without the plugin's lock.
func (p *Plugin) view() inspect.View {
	snap := p.published().Snapshot(p.now())
	return inspect.View{Profile: p.h.ProfileName(), Snapshot: &snap, Clock: p.answerClock()}
}

// answerClock turns core times into wall-clock times for answers.
func (p *Plugin) answerClock() inspect.Clock {
	return inspect.Clock{Start: p.epoch, TicksPerSecond: ticksPerSecond}
}

// Handler serves the inspection API under inspect.PathPrefix, read-only.
// leading reports whether this process schedules: a standby's cores
// decide nothing, so it answers 503 rather than mislead. Authentication
// and authorization are the caller's (the scheduler's secure port wraps
// the handler in both).
func (r *Inspectors) Handler(leading func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			writeStatus(w, inspect.NewStatus(http.StatusMethodNotAllowed, "MethodNotAllowed", "the inspection API is read-only: GET only"))
			return
		}
		rest, ok := strings.CutPrefix(req.URL.Path, inspect.PathPrefix)
		if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
			writeStatus(w, inspect.NewStatus(http.StatusNotFound, "NotFound", "no such path: "+req.URL.Path))
			return
		}
		rest = strings.Trim(rest, "/")
		if rest == "" {
			writeJSON(w, http.StatusOK, discovery())
			return
		}
		rt, st := parseRoute(rest)
		if st != nil {
			writeStatus(w, *st)
			return
		}
		if leading != nil && !leading() {
			writeStatus(w, inspect.NewStatus(http.StatusServiceUnavailable, "ServiceUnavailable", "this scheduler is a standby, not the leader: its fluence decides nothing; ask again (the leader answers)"))
			return
		}
		p, st := r.choose(req.URL.Query().Get(inspect.ProfileParam))
		if st != nil {
			writeStatus(w, *st)
			return
		}
		if !p.ready() {
			writeStatus(w, inspect.NewStatus(http.StatusServiceUnavailable, "ServiceUnavailable", "fluence is still reading the cluster's nodes and pods"))
			return
		}
		if rt.resource == inspect.ResourceGroups && rt.name == "" {
			// The list alone needs no snapshot: the published groups, as
			// rendered, and what the encoder kept of them.
			pub := p.published()
			v := inspect.View{Profile: p.h.ProfileName(), Snapshot: &gang.Snapshot{Now: max(p.now(), pub.Now())}, Clock: p.answerClock()}
			body, err := p.lists.GroupList(v, rt.namespace, pub.GroupStatuses(), p.gatedGroups(req.Context(), pub.HasGroup, rt.namespace))
			writeEncoded(w, body, err)
			return
		}
		v := p.view()
		switch {
		case rt.resource == inspect.ResourceGroups && rt.name != "":
			explainGroup(w, v, rt.namespace, rt.name, func() []inspect.GatedGroup { return p.gatedGroups(req.Context(), v.Snapshot.Known, rt.namespace) },
				func(g *inspect.GatedGroup) { p.countUngated(req.Context(), g) })
		case rt.resource == inspect.ResourceQueue:
			writeJSON(w, http.StatusOK, v.Queue(rt.namespace))
		case rt.resource == inspect.ResourceNodes:
			writeJSON(w, http.StatusOK, v.Nodes())
		default:
			writeJSON(w, http.StatusOK, v.Graph())
		}
	})
}

// route is a parsed path below the prefix.
type route struct{ namespace, resource, name string }

// parseRoute reads groups, queue, nodes, graph,
// namespaces/NS/{groups,queue} and namespaces/NS/groups/NAME.
func parseRoute(rest string) (route, *inspect.Status) {
	parts := strings.Split(rest, "/")
	var rt route
	if parts[0] == "namespaces" {
		if len(parts) < 3 || parts[1] == "" {
			return rt, notFound(rest)
		}
		rt.namespace, parts = parts[1], parts[2:]
	}
	rt.resource = parts[0]
	switch {
	case len(parts) == 1 && (rt.resource == inspect.ResourceGroups || rt.resource == inspect.ResourceQueue):
	case len(parts) == 1 && rt.namespace == "" && (rt.resource == inspect.ResourceNodes || rt.resource == inspect.ResourceGraph):
	case len(parts) == 2 && rt.namespace != "" && rt.resource == inspect.ResourceGroups && parts[1] != "":
		rt.name = parts[1]
	default:
		return rt, notFound(rest)
	}
	return rt, nil
}

func notFound(rest string) *inspect.Status {
	st := inspect.NewStatus(http.StatusNotFound, "NotFound", fmt.Sprintf("no such path: %s/%s (the API serves groups, namespaces/NAMESPACE/groups[/NAME], queue, namespaces/NAMESPACE/queue, nodes and graph)", inspect.PathPrefix, rest))
	return &st
}

// explainGroup answers for one group, found by name as Snapshot.Lookup
// finds it among the groups the core knows and those it has not seen
// because their pods wait for their scheduling gates (gated, called only
// when the core knows no group by that exact key; ungated completes the
// one explained).
func explainGroup(w http.ResponseWriter, v inspect.View, namespace, name string, gated func() []inspect.GatedGroup, ungated func(*inspect.GatedGroup)) {
	keys := v.Snapshot.Lookup(namespace, name)
	want := namespace + "/" + name
	var unseen []inspect.GatedGroup
	if len(keys) != 1 || keys[0] != want {
		for _, g := range gated() {
			if g.ID.Key == want {
				// The exact key wins, as in Snapshot.Lookup.
				keys, unseen = nil, []inspect.GatedGroup{g}
				break
			}
			if g.ID.Name == name {
				unseen = append(unseen, g)
			}
		}
	}
	switch len(keys) + len(unseen) {
	case 0:
		writeStatus(w, inspect.NewStatus(http.StatusNotFound, "NotFound", fmt.Sprintf("fluence knows no group %s in namespace %s (groups ended or not yet seen are not kept)", name, namespace)))
		return
	case 1:
	default:
		var names []string
		for _, k := range keys {
			names = append(names, strings.TrimPrefix(k, namespace+"/"))
		}
		for _, g := range unseen {
			names = append(names, strings.TrimPrefix(g.ID.Key, namespace+"/"))
		}
		slices.Sort(names)
		writeStatus(w, inspect.NewStatus(http.StatusBadRequest, "BadRequest", fmt.Sprintf("%s names several groups in namespace %s; name one of: %s", name, namespace, strings.Join(names, ", "))))
		return
	}
	if len(unseen) == 1 {
		ungated(&unseen[0])
		writeJSON(w, http.StatusOK, v.ExplainGated(unseen[0]))
		return
	}
	e, _ := v.Explain(keys[0])
	writeJSON(w, http.StatusOK, e)
}

// discovery is the group version's resource list: empty, so that kubectl's
// generic verbs leave the API alone (its answers are not Kubernetes
// objects); the aggregation layer needs the path to answer.
func discovery() any {
	return struct {
		inspect.TypeMeta
		GroupVersion string `json:"groupVersion"`
		Resources    []any  `json:"resources"`
	}{inspect.TypeMeta{APIVersion: "v1", Kind: "APIResourceList"}, inspect.APIVersion, []any{}}
}

func writeStatus(w http.ResponseWriter, st inspect.Status) { writeJSON(w, st.Code, st) }

func writeJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.Marshal(v)
	writeEncodedCode(w, code, body, err)
}

// writeEncoded writes an answer already encoded, or the failure to.
func writeEncoded(w http.ResponseWriter, body []byte, err error) {
	writeEncodedCode(w, http.StatusOK, body, err)
}

func writeEncodedCode(w http.ResponseWriter, code int, body []byte, err error) {
	if err != nil {
		code, body = http.StatusInternalServerError, []byte(`{"apiVersion":"v1","kind":"Status","status":"Failure","message":"encoding the answer failed","code":500}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}
