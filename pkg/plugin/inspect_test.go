package plugin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/inspect"
)

// The inspection API as the scheduler serves it, over a plugin in the
// framework: a placed group, a rejected one, every path and every refusal.
func TestInspectionAPI(t *testing.T) {
	placed := groupPods("a", 2, "2", "4")
	huge := groupPods("huge", 1, "1", "8")
	h := newHarness(t, nodes(3, "4"), append(placed, huge...))
	for _, p := range placed {
		h.place(p)
	}
	if _, _, s := h.preFilter(huge[0]); s.IsSuccess() {
		t.Fatalf("PreFilter(huge-0) = %v, want it refused", s)
	}
	leader := true
	srv := httptest.NewServer(h.insp.Handler(func() bool { return leader }))
	defer srv.Close()
	get := func(method, path string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", method, path, ct)
		}
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return resp.StatusCode, body
	}
	api := inspect.PathPrefix
	for _, tc := range []struct {
		method, path string
		code         int
		kind         string
		want         []string // in the JSON answer
	}{
		{"GET", api, 200, "APIResourceList", []string{`"groupVersion":"inspect.fluence.flux-framework.org/v1alpha1"`}},
		{"GET", api + "/groups", 200, inspect.KindGroupList, []string{`"key":"ns/a"`, `"state":"placed"`, `"key":"ns/huge"`, `"state":"rejected"`}},
		{"GET", api + "/namespaces/ns/groups", 200, inspect.KindGroupList, []string{`"key":"ns/a"`}},
		{"GET", api + "/namespaces/other/groups", 200, inspect.KindGroupList, []string{`"items":[]`}},
		{"GET", api + "/namespaces/ns/groups/a", 200, inspect.KindExplanation, []string{`"verdict":"placed"`, `"profile":"fluence"`, "ns/a is placed: 2 pods on"}},
		{"GET", api + "/namespaces/ns/groups/huge", 200, inspect.KindExplanation, []string{`"verdict":"rejected"`, "at most 8000m each", "at most 4000m on one"}},
		{"GET", api + "/queue", 200, inspect.KindQueue, []string{`"policy":"easy"`, `"entries":[]`}},
		{"GET", api + "/nodes", 200, inspect.KindNodeList, []string{`"name":"n1"`, `"cpuMillis":4000`}},
		{"GET", api + "/graph", 200, inspect.KindGraph, []string{`"built":true`, `"type":"cluster"`}},
		{"GET", api + "/graph?profile=fluence", 200, inspect.KindGraph, nil},
		{"GET", api + "/namespaces/ns/groups/nothing", 404, "Status", []string{"knows no group nothing in namespace ns"}},
		{"GET", api + "/namespaces/ns/nodes", 404, "Status", []string{"no such path"}},
		{"GET", api + "/pods", 404, "Status", []string{"no such path"}},
		{"GET", api + "x/groups", 404, "Status", nil},
		{"GET", api + "/groups?profile=gpu", 404, "Status", []string{`no fluence profile \"gpu\" in this scheduler (it runs fluence)`}},
		{"POST", api + "/groups", 405, "Status", []string{"read-only"}},
	} {
		code, body := get(tc.method, tc.path)
		raw, _ := json.Marshal(body)
		if code != tc.code || body["kind"] != tc.kind {
			t.Errorf("%s %s: %d %v, want %d %s: %s", tc.method, tc.path, code, body["kind"], tc.code, tc.kind, raw)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(string(raw), w) {
				t.Errorf("%s %s lacks %s: %s", tc.method, tc.path, w, raw)
			}
		}
	}
	// A standby decides nothing: it says so rather than answer.
	leader = false
	if code, body := get("GET", api+"/groups"); code != http.StatusServiceUnavailable || !strings.Contains(body["message"].(string), "not the leader") {
		t.Errorf("a standby answered %d %v", code, body)
	}
}
