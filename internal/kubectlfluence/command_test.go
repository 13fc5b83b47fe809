package kubectlfluence

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/fluence-sched/fluence/pkg/gang"
	"github.com/fluence-sched/fluence/pkg/inspect"
	"github.com/fluence-sched/fluence/pkg/queue"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// view is a scheduler's state as the inspection API answers it: three
// 4-CPU nodes (GPUs on n1, a pod another scheduler bound on n3); in team,
// a placed (10 min declared), b reserved for a's end, c waiting behind b;
// lab/d too big for any node; late/e one pod of three.
func view(t *testing.T) inspect.View {
	t.Helper()
	clock := inspect.Clock{Start: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), TicksPerSecond: 1000}
	core, err := gang.New(gang.Config{Queue: queue.Config{Policy: queue.Easy}, TicksPerSecond: 1000, RunID: "r",
		FormatTime: func(t int64) string { return clock.At(t).Format(time.RFC3339) }})
	if err != nil {
		t.Fatal(err)
	}
	for i, gpu := range []int64{2, 0, 0} {
		core.NodeSet(gang.Node{Name: fmt.Sprintf("n%d", i+1), Allocatable: gang.Resources{MilliCPU: 4000, MemoryBytes: 8 << 30, GPU: gpu}}, 0)
	}
	core.PodSeen(gang.Pod{UID: "f", Namespace: "other", Name: "f", NodeName: "n3", Requests: gang.Resources{MilliCPU: 1000, MemoryBytes: 1 << 30}}, 0)
	fw := gang.NewFramework(core, nil)
	add := func(now int64, ns, name string, size, exist int, cpu, dur int64) {
		id := gang.NewGroupID(ns, name, int32(size), gang.SourceLabel)
		for i := range exist {
			pod := fmt.Sprintf("%s-%d", name, i)
			fw.Add(gang.Pod{UID: ns + "/" + pod, Namespace: ns, Name: pod, Owned: true, Labeled: id, Created: now + int64(i),
				Requests: gang.Resources{MilliCPU: cpu, MemoryBytes: 1 << 30}, Duration: dur}, id, now)
		}
	}
	add(0, "team", "a", 2, 2, 4000, 600)
	fw.Run(0)
	add(10_000, "team", "b", 2, 2, 4000, 300)
	add(10_000, "team", "c", 2, 2, 3000, 0)
	add(10_000, "lab", "d", 2, 2, 8000, 0)
	add(10_000, "late", "e", 3, 1, 1000, 0)
	fw.Run(10_000)
	snap := core.Snapshot(20_000)
	return inspect.View{Profile: "fluence", Snapshot: &snap, Clock: clock}
}

// gatedView is a scheduler that knows, in namespace queue, the labelled
// group part (one pod of three counted, two gated), with the groups fluence
// has not seen because their pods wait for their gates: sweep (Kueue's
// gate on its three pods) and job:ranks (two of four pods gated, one
// without gates not counted yet).
func gatedView(t *testing.T) (inspect.View, []inspect.GatedGroup) {
	t.Helper()
	clock := inspect.Clock{Start: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), TicksPerSecond: 1000}
	core, err := gang.New(gang.Config{Queue: queue.Config{Policy: queue.Easy}, TicksPerSecond: 1000, RunID: "r",
		FormatTime: func(t int64) string { return clock.At(t).Format(time.RFC3339) }})
	if err != nil {
		t.Fatal(err)
	}
	core.NodeSet(gang.Node{Name: "n1", Allocatable: gang.Resources{MilliCPU: 4000, MemoryBytes: 8 << 30}}, 0)
	id := gang.NewGroupID("queue", "part", 3, gang.SourceLabel)
	for i := range 3 {
		pod := fmt.Sprintf("part-%d", i)
		core.PodSeen(gang.Pod{UID: pod, Namespace: "queue", Name: pod, Owned: true, Labeled: id, Gated: i > 0, Created: int64(i),
			Requests: gang.Resources{MilliCPU: 1000, MemoryBytes: 1 << 30}}, 10_000)
	}
	snap := core.Snapshot(20_000)
	kueue := []string{"kueue.x-k8s.io/admission"}
	gated := []inspect.GatedGroup{
		{ID: gang.NewGroupID("queue", "ranks", 4, "job"), Created: clock.Start.Add(15 * time.Second), Ungated: 1,
			Pods: []inspect.GatedPod{{Name: "ranks-0", Gates: []string{"example.com/quota"}}, {Name: "ranks-1", Gates: []string{"example.com/quota"}}}},
		{ID: gang.NewGroupID("queue", "sweep", 3, gang.SourceLabel), Created: clock.Start.Add(5 * time.Second),
			Pods: []inspect.GatedPod{{Name: "sweep-0", Gates: kueue}, {Name: "sweep-1", Gates: kueue}, {Name: "sweep-2", Gates: kueue}}},
	}
	return inspect.View{Profile: "fluence", Snapshot: &snap, Clock: clock}, gated
}

// Groups whose pods wait for their scheduling gates, as a user sees them:
// listed as gated with the gated pods counted apart, and explained.
func TestGatedOutputs(t *testing.T) {
	v, gated := gatedView(t)
	srv, _ := apiServer(t, v, nil, gated...)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"groups-gated", []string{"groups", "-n", "queue"}},
		{"groups-gated-wide", []string{"groups", "-n", "queue", "-o", "wide"}},
		{"explain-gated", []string{"explain", "sweep", "-n", "queue"}},
		{"explain-gated-job", []string{"explain", "job:ranks", "-n", "queue"}},
		{"explain-gathering-gated", []string{"explain", "part", "-n", "queue"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := run(t, srv, tc.args...)
			if err != nil {
				t.Fatalf("kubectl fluence %s: %v\n%s", strings.Join(tc.args, " "), err, errOut)
			}
			golden(t, tc.name, "$ kubectl fluence "+strings.Join(tc.args, " ")+"\n"+out)
		})
	}
}

// levelsView is a scheduler configured with three topology levels (zone,
// block, rack): n1 and n2 in racks r1, r2 of block b1, n3 in block b2
// without a rack label, n4 without any label; a group of two runs on n1
// and n2. n5 (block b2, rack r3) joins after the last decision, so the
// graph does not have it yet.
func levelsView(t *testing.T) inspect.View {
	t.Helper()
	clock := inspect.Clock{Start: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), TicksPerSecond: 1000}
	core, err := gang.New(gang.Config{Queue: queue.Config{Policy: queue.Easy}, TicksPerSecond: 1000, RunID: "r",
		TopologyLevels: []string{gang.ZoneLabel, "example.com/block", "example.com/rack"},
		FormatTime:     func(t int64) string { return clock.At(t).Format(time.RFC3339) }})
	if err != nil {
		t.Fatal(err)
	}
	node := func(name string, labels ...string) {
		l := map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			l[labels[i]] = labels[i+1]
		}
		core.NodeSet(gang.Node{Name: name, Labels: l, Allocatable: gang.Resources{MilliCPU: 4000, MemoryBytes: 8 << 30}}, 0)
	}
	node("n1", gang.ZoneLabel, "z1", "example.com/block", "b1", "example.com/rack", "r1")
	node("n2", gang.ZoneLabel, "z1", "example.com/block", "b1", "example.com/rack", "r2")
	node("n3", gang.ZoneLabel, "z1", "example.com/block", "b2")
	node("n4")
	fw := gang.NewFramework(core, nil)
	id := gang.NewGroupID("team", "a", 2, gang.SourceLabel)
	for i := range 2 {
		pod := fmt.Sprintf("a-%d", i)
		fw.Add(gang.Pod{UID: "team/" + pod, Namespace: "team", Name: pod, Owned: true, Labeled: id,
			Requests: gang.Resources{MilliCPU: 4000, MemoryBytes: 1 << 30}}, id, 0)
	}
	fw.Run(0)
	node("n5", gang.ZoneLabel, "z1", "example.com/block", "b2", "example.com/rack", "r3")
	snap := core.Snapshot(1000)
	return inspect.View{Profile: "fluence", Snapshot: &snap, Clock: clock}
}

// apiServer answers the inspection API's paths from the view and the
// groups whose pods wait for their gates, as the API server forwarding to
// the scheduler would; refuse, when set, answers every request with that
// Status instead.
func apiServer(t *testing.T, v inspect.View, refuse func(n int64) *inspect.Status, gated ...inspect.GatedGroup) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	return apiServerRoutes(t, v, refuse, false, gated...)
}

// apiServerRoutes is apiServer that also answers through the Service
// proxy to the chart's default inspection Service (fluence-system/fluence-inspect)
// and, with onlyProxy, has no APIService: the inspection API's own paths
// are not found.
func apiServerRoutes(t *testing.T, v inspect.View, refuse func(n int64) *inspect.Status, onlyProxy bool, gated ...inspect.GatedGroup) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var requests atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := requests.Add(1)
		answer := func(code int, body any) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(body)
		}
		if refuse != nil {
			if st := refuse(n); st != nil {
				answer(st.Code, st)
				return
			}
		}
		path, proxied := strings.CutPrefix(r.URL.Path, inspect.ServiceProxyPath(DefaultNamespace, DefaultService, "https", ""))
		if proxied {
			// As the API server's Service proxy: it took the caller's
			// Authorization and forwards the copy kubectl fluence made.
			if r.Header.Get("Authorization") != "Bearer secret" || r.Header.Get(inspect.ForwardedAuthorization) != "Bearer secret" {
				answer(403, inspect.NewStatus(403, "Forbidden", `User "system:anonymous" cannot list resource "groups"`))
				return
			}
			r.URL.Path = path
		} else if onlyProxy {
			answer(404, inspect.Status{TypeMeta: inspect.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: "Failure", Message: "the server could not find the requested resource", Reason: "NotFound", Code: 404})
			return
		}
		if r.Header.Get("Authorization") != "Bearer secret" {
			answer(401, inspect.Status{TypeMeta: inspect.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: "Failure", Message: "Unauthorized", Reason: "Unauthorized", Code: 401})
			return
		}
		rest := strings.TrimPrefix(r.URL.Path, inspect.PathPrefix+"/")
		switch {
		case rest == "groups":
			answer(200, v.GroupsWithGated("", gated))
		case rest == "queue":
			answer(200, v.Queue(""))
		case rest == "nodes":
			answer(200, v.Nodes())
		case rest == "graph":
			answer(200, v.Graph())
		case strings.HasPrefix(rest, "namespaces/"):
			parts := strings.Split(rest, "/")
			switch {
			case len(parts) == 3 && parts[2] == "groups":
				answer(200, v.GroupsWithGated(parts[1], gated))
			case len(parts) == 3 && parts[2] == "queue":
				answer(200, v.Queue(parts[1]))
			case len(parts) == 4:
				keys := v.Snapshot.Lookup(parts[1], parts[3])
				for _, g := range gated {
					if g.ID.Namespace == parts[1] && (g.ID.Name == parts[3] || g.ID.Key == parts[1]+"/"+parts[3]) {
						answer(200, v.ExplainGated(g))
						return
					}
				}
				if len(keys) != 1 {
					answer(404, inspect.NewStatus(404, "NotFound", "fluence knows no group "+parts[3]))
					return
				}
				e, _ := v.Explain(keys[0])
				answer(200, e)
			}
		default:
			answer(404, inspect.Status{TypeMeta: inspect.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: "Failure", Message: "the server could not find the requested resource", Reason: "NotFound", Code: 404})
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// run runs kubectl fluence with the arguments against the server and
// returns what it printed and its error.
func run(t *testing.T, srv *httptest.Server, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: secret}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: team}}]
current-context: c
`, srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// Every command's output, as a user sees it, against its golden file.
func TestOutputs(t *testing.T) {
	srv, _ := apiServer(t, view(t), nil)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"groups", []string{"groups"}},
		{"groups-all", []string{"groups", "-A"}},
		{"groups-wide", []string{"groups", "-n", "lab", "-o", "wide"}},
		{"groups-none", []string{"groups", "-n", "empty"}},
		{"queue-all", []string{"queue", "-A"}},
		{"queue-wide", []string{"queue", "-o", "wide"}},
		{"nodes", []string{"nodes"}},
		{"nodes-wide", []string{"nodes", "-o", "wide"}},
		{"graph", []string{"graph"}},
		{"graph-wide", []string{"graph", "-o", "wide"}},
		{"explain-placed", []string{"explain", "a"}},
		{"explain-reserved", []string{"explain", "b"}},
		{"explain-waiting", []string{"explain", "c"}},
		{"explain-rejected", []string{"explain", "d", "-n", "lab"}},
		{"explain-gathering", []string{"explain", "e", "-n", "late"}},
		{"queue-yaml", []string{"queue", "-o", "yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := run(t, srv, tc.args...)
			if err != nil {
				t.Fatalf("kubectl fluence %s: %v\n%s", strings.Join(tc.args, " "), err, errOut)
			}
			got := "$ kubectl fluence " + strings.Join(tc.args, " ") + "\n" + out
			if errOut != "" {
				got += "(stderr) " + errOut
			}
			golden(t, tc.name, got)
		})
	}
}

// golden compares got with testdata/NAME.golden (-update rewrites it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/kubectlfluence -update writes it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-golden +got):\n%s", path, diff)
	}
}

// nodes -o wide has a column per topology level, each node's domain from
// its labels as they are now: the level's unknown domain for a node
// without its label, and the domains of a node the graph does not have
// yet. One request either way.
func TestNodesLevels(t *testing.T) {
	srv, requests := apiServer(t, levelsView(t), nil)
	for _, tc := range []struct {
		name     string
		args     []string
		requests int64
	}{
		{"nodes-levels", []string{"nodes"}, 1},
		{"nodes-levels-wide", []string{"nodes", "-o", "wide"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := requests.Load()
			out, errOut, err := run(t, srv, tc.args...)
			if err != nil {
				t.Fatalf("kubectl fluence %s: %v\n%s", strings.Join(tc.args, " "), err, errOut)
			}
			if n := requests.Load() - before; n != tc.requests {
				t.Errorf("kubectl fluence %s made %d requests, want %d", strings.Join(tc.args, " "), n, tc.requests)
			}
			got := "$ kubectl fluence " + strings.Join(tc.args, " ") + "\n" + out
			if errOut != "" {
				got += "(stderr) " + errOut
			}
			golden(t, tc.name, got)
		})
	}
}

// In the graph without topology levels (zone, and rackLabel's rack) the
// domains keep their plain names: a value that looks like <type>-… is
// shown whole, a node without a label is in "default".
func TestNodesRackLabel(t *testing.T) {
	core, err := gang.New(gang.Config{Queue: queue.Config{Policy: queue.Easy}, TicksPerSecond: 1000, RunID: "r", RackLabel: "example.com/rack",
		FormatTime: func(t int64) string { return time.UnixMilli(t).UTC().Format(time.RFC3339) }})
	if err != nil {
		t.Fatal(err)
	}
	core.NodeSet(gang.Node{Name: "n1", Labels: map[string]string{gang.ZoneLabel: "zone-a", "example.com/rack": "rack-1"}, Allocatable: gang.Resources{MilliCPU: 4000, MemoryBytes: 8 << 30}}, 0)
	core.NodeSet(gang.Node{Name: "n2", Allocatable: gang.Resources{MilliCPU: 4000, MemoryBytes: 8 << 30}}, 0)
	// A decision builds the graph.
	fw := gang.NewFramework(core, nil)
	id := gang.NewGroupID("team", "a", 1, gang.SourceLabel)
	fw.Add(gang.Pod{UID: "team/a-0", Namespace: "team", Name: "a-0", Owned: true, Labeled: id, Requests: gang.Resources{MilliCPU: 1000}}, id, 0)
	fw.Run(0)
	snap := core.Snapshot(0)
	srv, _ := apiServer(t, inspect.View{Profile: "fluence", Snapshot: &snap, Clock: inspect.Clock{TicksPerSecond: 1000}}, nil)
	out, errOut, err := run(t, srv, "nodes", "-o", "wide")
	if err != nil || errOut != "" {
		t.Fatalf("%v\n%s", err, errOut)
	}
	requireRow(t, out, "NAME", "STATUS", "CPU", "MEMORY", "GPU", "PODS", "GROUPS", "ZONE", "RACK", "FOREIGN")
	domains := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 8 {
			domains[f[0]] = f[7:9]
		}
	}
	want := map[string][]string{"NAME": {"ZONE", "RACK"}, "n1": {"zone-a", "rack-1"}, "n2": {"default", "default"}}
	if diff := cmp.Diff(want, domains); diff != "" {
		t.Errorf("the ZONE and RACK columns differ (-want +got):\n%s\n%s", diff, out)
	}
}

// A node list from a scheduler older than topology levels carries none:
// -o wide shows the zone and rack it has instead.
func TestNodeDomainsWithoutLevels(t *testing.T) {
	old := inspect.NodeList{Items: []inspect.Node{{Name: "n1", Zone: "z1", Rack: "r1"}, {Name: "n2", Zone: "z1"}}}
	if got := levelColumns(old); !slices.Equal(got, []string{"Zone", "Rack"}) {
		t.Errorf("columns %v, want Zone, Rack", got)
	}
	for i, want := range [][]string{{"z1", "r1"}, {"z1", "<none>"}} {
		if got := nodeDomains(old, old.Items[i]); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", old.Items[i].Name, got, want)
		}
	}
	levelled := inspect.NodeList{Levels: []string{"zone", "block", "rack"}, Items: []inspect.Node{{Name: "n1", Domains: []string{"z1", "b1"}}}}
	if got := levelColumns(levelled); !slices.Equal(got, []string{"Zone", "Block", "Rack"}) {
		t.Errorf("columns %v", got)
	}
	if got := nodeDomains(levelled, levelled.Items[0]); !slices.Equal(got, []string{"z1", "b1", "<none>"}) {
		t.Errorf("a node with fewer domains than levels: %v", got)
	}
}

// requireRow fails t unless a line of out has the cells, separated by
// blanks.
func requireRow(t *testing.T, out string, cells ...string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(line), " ") == strings.Join(cells, " ") {
			return
		}
	}
	t.Errorf("no line %q in:\n%s", strings.Join(cells, " "), out)
}

// -o json gives the API's answer itself.
func TestJSONIsTheAnswer(t *testing.T) {
	srv, _ := apiServer(t, view(t), nil)
	out, _, err := run(t, srv, "explain", "b", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var e inspect.Explanation
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("-o json is not an Explanation: %v\n%s", err, out)
	}
	if e.Kind != inspect.KindExplanation || e.Verdict != gang.VerdictReserved || e.ExpectedStart == nil || len(e.Short) != 1 {
		t.Errorf("explain b -o json: %+v", e)
	}
}

// Refusals and mistakes say what is wrong and what to do.
func TestErrors(t *testing.T) {
	v := view(t)
	forbidden := &inspect.Status{TypeMeta: inspect.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: "Failure", Code: 403, Reason: "Forbidden",
		Message: `groups.inspect.fluence.flux-framework.org is forbidden: User "nobody" cannot list resource "groups"`}
	standby := inspect.NewStatus(503, "ServiceUnavailable", "this scheduler is a standby, not the leader")
	for _, tc := range []struct {
		name     string
		refuse   func(n int64) *inspect.Status
		args     []string
		want     []string
		requests int64
	}{
		{"forbidden", func(int64) *inspect.Status { return forbidden }, []string{"groups"}, []string{"forbidden", "ClusterRole <release>-inspect"}, 1},
		{"bad server address", nil, []string{"nodes", "--server", "://bad"}, []string{"://bad"}, 0},
		{"unknown group", nil, []string{"explain", "nothing"}, []string{"fluence knows no group nothing"}, 1},
		{"standby, then the leader", func(n int64) *inspect.Status {
			if n < 3 {
				return &standby
			}
			return nil
		}, []string{"queue"}, nil, 3},
		{"only standbys", func(int64) *inspect.Status { return &standby }, []string{"queue"}, []string{"standby"}, 5},
		{"bad output", nil, []string{"groups", "-o", "table"}, []string{`unknown output format "table"`}, 0},
		{"explain across namespaces", nil, []string{"explain", "a", "-A"}, []string{"unknown shorthand flag: 'A'"}, 0},
		{"explain needs a name", nil, []string{"explain"}, []string{"accepts 1 arg(s), received 0"}, 0},
		{"ca file and insecure", nil, []string{"groups", "--scheduler-url", "https://127.0.0.1:1", "--scheduler-insecure-skip-tls-verify", "--scheduler-ca-file", "/x"}, []string{"exclude each other"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, requests := apiServer(t, v, tc.refuse)
			_, _, err := run(t, srv, tc.args...)
			if len(tc.want) == 0 {
				if err != nil {
					t.Errorf("kubectl fluence %v: %v", tc.args, err)
				}
			} else {
				for _, w := range tc.want {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("kubectl fluence %v: error %v, want one saying %q", tc.args, err, w)
					}
				}
			}
			if got := requests.Load(); got != tc.requests {
				t.Errorf("kubectl fluence %v made %d requests, want %d", tc.args, got, tc.requests)
			}
		})
	}
}

// The API server's own 404 (the API is not installed) is told apart from
// the scheduler's, and a refused credential from a refused right.
func TestNotInstalledHint(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(404)
		_ = json.NewEncoder(w).Encode(inspect.Status{TypeMeta: inspect.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: "Failure", Message: "the server could not find the requested resource", Reason: "NotFound", Code: 404})
	}))
	defer srv.Close()
	_, _, err := run(t, srv, "groups")
	if err == nil || !strings.Contains(err.Error(), "does not serve "+inspect.APIVersion) || !strings.Contains(err.Error(), "no inspection Service fluence-system/fluence-inspect") {
		t.Errorf("error %v, want a hint that neither the APIService nor the inspection Service is there", err)
	}
	_, _, err = run(t, srv, "groups", "--route", "apiservice")
	if err == nil || !strings.Contains(err.Error(), "does not serve "+inspect.APIVersion) || strings.Contains(err.Error(), "Service proxy") {
		t.Errorf("--route apiservice: error %v, want a hint that the API is not installed, and no other route tried", err)
	}
	// The stand-in API server takes only the token "secret".
	api, _ := apiServer(t, view(t), nil)
	_, _, err = run(t, api, "groups", "--token", "wrong")
	if err == nil || !strings.Contains(err.Error(), "did not accept your kubeconfig's credentials") {
		t.Errorf("a wrong token: %v, want it said the credentials were not accepted", err)
	}
}

// graph names the topology levels and counts, per level, the nodes
// without its label: one, several, or none (no line).
func TestGraphLevels(t *testing.T) {
	node := func(name string) *gang.GraphVertex {
		return &gang.GraphVertex{Type: "node", Name: name, Size: 1, Count: 1,
			Children: []*gang.GraphVertex{{Type: gang.TypePods, Name: "pods0", Size: 110, Count: 1}}}
	}
	domain := func(typ, name string, children ...*gang.GraphVertex) *gang.GraphVertex {
		return &gang.GraphVertex{Type: typ, Name: name, Size: 1, Count: 1, Children: children}
	}
	snap := gang.Snapshot{Graph: gang.GraphSummary{Built: true, Rebuilds: 2, Vertices: 12,
		Levels: []gang.GraphLevel{
			{Key: "example.com/block", Type: "block", Domains: 1, Unlabelled: 1, Unknown: "block-_unknown"},
			{Key: "example.com/rack", Type: "rack", Domains: 2, Unlabelled: 2, Unknown: "rack-_unknown"},
			{Key: "example.com/row", Type: "row", Domains: 1, Unknown: "row-_unknown"},
		},
		Root: domain("cluster", "cluster0",
			domain("block", "block-b1", domain("rack", "rack-r1", domain("row", "row-1", node("n1"))), domain("rack", "rack-_unknown", domain("row", "row-1", node("n2"))), domain("rack", "rack-r2", domain("row", "row-1", node("n3")))),
			domain("block", "block-_unknown", domain("rack", "rack-_unknown", domain("row", "row-1", node("n4"))))),
	}}
	srv, _ := apiServer(t, inspect.View{Profile: "fluence", Snapshot: &snap, Clock: inspect.Clock{TicksPerSecond: 1}}, nil)
	out, errOut, err := run(t, srv, "graph")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{
		"Levels: cluster > block (example.com/block, 1 value) > rack (example.com/rack, 2 values) > row (example.com/row, 1 value) > node\n",
		"1 node has no example.com/block label: under block block-_unknown\n",
		"2 nodes have no example.com/rack label: under rack rack-_unknown\n",
		"│   └── rack rack-r2\n│       └── row row-1\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("graph output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "example.com/row label") {
		t.Errorf("graph output counts unlabelled nodes of a level every node has:\n%s", out)
	}
}

// The environment gives --scheduler-url and --scheduler-ca-file their
// defaults: set, they are used as if given (here refused together with
// --scheduler-insecure-skip-tls-verify, before any request); a flag given
// overrides them.
func TestSchedulerURLFromEnvironment(t *testing.T) {
	v := inspect.View{Profile: "fluence", Snapshot: &gang.Snapshot{}}
	srv, requests := apiServer(t, v, nil)
	t.Setenv(EnvSchedulerURL, "https://127.0.0.1:1")
	t.Setenv(EnvSchedulerCAFile, "/x")
	if _, _, err := run(t, srv, "groups", "--scheduler-insecure-skip-tls-verify"); err == nil || !strings.Contains(err.Error(), "exclude each other") {
		t.Errorf("with %s and %s set: %v, want the CA file refused beside --scheduler-insecure-skip-tls-verify", EnvSchedulerURL, EnvSchedulerCAFile, err)
	}
	if _, _, err := run(t, srv, "groups", "--scheduler-url", "", "--scheduler-ca-file", ""); err != nil {
		t.Errorf("flags overriding the environment (through the API server): %v", err)
	}
	if got := requests.Load(); got != 1 {
		t.Errorf("%d requests reached the API server, want 1 (the second command's)", got)
	}
}

// Without the APIService (the chart's default), kubectl fluence asks the
// API server's Service proxy to the inspection Service and sends its
// bearer token along in the header the scheduler reads; --route chooses
// one route, and the namespace and Service can be given.
func TestServiceProxyRoute(t *testing.T) {
	v := view(t)
	srv, requests := apiServerRoutes(t, v, nil, true)
	out, errOut, err := run(t, srv, "groups", "-n", "team")
	if err != nil {
		t.Fatalf("groups through the Service proxy: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, "placed") {
		t.Errorf("groups through the Service proxy:\n%s", out)
	}
	if got := requests.Load(); got != 2 {
		t.Errorf("%d requests, want 2: the APIService's path (not found), then the Service proxy", got)
	}
	requests.Store(0)
	if _, errOut, err := run(t, srv, "explain", "b", "-n", "team", "--route", "service-proxy"); err != nil {
		t.Errorf("explain --route service-proxy: %v\n%s", err, errOut)
	}
	if got := requests.Load(); got != 1 {
		t.Errorf("--route service-proxy made %d requests, want 1", got)
	}
	if _, _, err := run(t, srv, "groups", "--route", "service-proxy", "--fluence-namespace", "sched", "--fluence-service", "fl-inspect"); err == nil || !strings.Contains(err.Error(), "no inspection Service sched/fl-inspect") {
		t.Errorf("another Service: %v, want it named as not found", err)
	}
	t.Setenv(EnvNamespace, "sched")
	if _, _, err := run(t, srv, "groups", "--route", "service-proxy"); err == nil || !strings.Contains(err.Error(), "no inspection Service sched/fluence-inspect") {
		t.Errorf("with %s=sched: %v, want sched/fluence-inspect named as not found", EnvNamespace, err)
	}
	if _, _, err := run(t, srv, "groups", "--route", "sideways"); err == nil || !strings.Contains(err.Error(), `unknown route "sideways"`) {
		t.Errorf("--route sideways: %v", err)
	}
}

// Where a node publishes DRA devices, nodes shows how many of them claims'
// allocations hold, of all; a cluster without devices has no such column.
func TestNodesDevices(t *testing.T) {
	core, err := gang.New(gang.Config{Queue: queue.Config{Policy: queue.Easy}, TicksPerSecond: 1000, RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	var gpus []gang.Device
	for i := range 4 {
		d := gang.Device{ID: fmt.Sprintf("gpu.example.com/n1/gpu-%d", i)}
		if i < 2 {
			d.Holder = "team/train-0-gpus"
		}
		gpus = append(gpus, d)
	}
	core.NodeSet(gang.Node{Name: "n1", Allocatable: gang.Resources{MilliCPU: 4000, MemoryBytes: 8 << 30}, Devices: gpus}, 0)
	core.NodeSet(gang.Node{Name: "n2", Allocatable: gang.Resources{MilliCPU: 4000, MemoryBytes: 8 << 30}}, 0)
	snap := core.Snapshot(0)
	srv, _ := apiServer(t, inspect.View{Profile: "fluence", Snapshot: &snap, Clock: inspect.Clock{TicksPerSecond: 1000}}, nil)
	out, errOut, err := run(t, srv, "nodes")
	if err != nil || errOut != "" {
		t.Fatalf("%v\n%s", err, errOut)
	}
	requireRow(t, out, "NAME", "STATUS", "CPU", "MEMORY", "GPU", "PODS", "DEVICES", "GROUPS")
	requireRow(t, out, "n1", "Ready", "0/4", "0/8Gi", "0/0", "0/110", "2/4", "<none>")
	requireRow(t, out, "n2", "Ready", "0/4", "0/8Gi", "0/0", "0/110", "0/0", "<none>")

	out, _, err = run(t, func() *httptest.Server { s, _ := apiServer(t, view(t), nil); return s }(), "nodes")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "DEVICES") {
		t.Errorf("a cluster without devices shows a DEVICES column:\n%s", out)
	}
}
