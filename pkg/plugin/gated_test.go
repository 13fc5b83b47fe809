package plugin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/fluence-sched/fluence/pkg/inspect"
)

// gate adds scheduling gates to pods.
func gate(pods []*corev1.Pod, gates ...string) []*corev1.Pod {
	for _, p := range pods {
		for _, g := range gates {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
		}
	}
	return pods
}

// kube-scheduler hands no gated pod to the plugin, so the core never hears
// of a group whose pods are all gated. The inspection API lists such a
// group as gated and explains it (which gates, how many pods) instead of
// saying there is no such group: a labelled group, a Job's, and one with
// a pod the core has not counted although it has no gates. A group the
// core knows with some pods gated, another scheduler's gated pods, and a
// group whose gates were lifted are answered as before.
func TestInspectGatedGroups(t *testing.T) {
	sweep := gate(groupPods("sweep", 3, "3", "1"), "kueue.x-k8s.io/admission")
	part := groupPods("part", 3, "3", "1")
	gate(part[1:], "example.com/hold")
	alien := gate([]*corev1.Pod{pod("alien-0", 0, "1").SchedulerName("other").Label("fluence.flux-framework.org/pod-group", "alien").
		Label("fluence.flux-framework.org/group-size", "1").Obj()}, "example.com/hold")
	h := newHarness(t, nodes(2, "4"), append(append(sweep, part...), alien...))
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "train", UID: "job-train"}, Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](3)}}
	if _, err := h.cs.BatchV1().Jobs(ns).Create(h.ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: job.UID, Controller: ptr.To(true)}}
	for i, p := range []*corev1.Pod{pod("train-0", 0, "1").Obj(), pod("train-1", 1, "1").Obj()} {
		p.OwnerReferences = owner
		if i == 0 {
			gate([]*corev1.Pod{p}, "kueue.x-k8s.io/admission")
		}
		h.create(p)
	}

	srv := httptest.NewServer(h.insp.Handler(nil))
	defer srv.Close()
	get := func(path string, out any) int {
		t.Helper()
		resp, err := http.Get(srv.URL + inspect.PathPrefix + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return resp.StatusCode
	}
	explain := func(name string) (int, inspect.Explanation, string) {
		t.Helper()
		var e inspect.Explanation
		code := get("/namespaces/"+ns+"/groups/"+name, &e)
		return code, e, e.Summary + "\n" + strings.Join(e.Details, "\n")
	}
	// The own pods' informer and the Job's reach the plugin in their time.
	eventually(t, "the Job's gated group explained", func() bool {
		code, e, _ := explain("job:train")
		return code == http.StatusOK && e.Verdict == inspect.StateGated
	})

	code, e, text := explain("sweep")
	if code != http.StatusOK || e.Verdict != inspect.StateGated || e.Group.Gated != 3 || e.Group.Pods != 0 || e.Group.Size != 3 {
		t.Errorf("explain sweep: %d %+v", code, e)
	}
	for _, want := range []string{"ns/sweep: its 3 pods exist but wait for their scheduling gates (kueue.x-k8s.io/admission), so fluence has not seen the group yet",
		"Gate kueue.x-k8s.io/admission is on 3 pods: sweep-0, sweep-1, sweep-2."} {
		if !strings.Contains(text, want) {
			t.Errorf("explain sweep lacks %q:\n%s", want, text)
		}
	}
	_, e, text = explain("job:train")
	if e.Group.Source != "job" || !strings.Contains(text, "1 of its 3 pods waits for its scheduling gates (kueue.x-k8s.io/admission)") ||
		!strings.Contains(text, "1 more exists without gates but has not reached fluence's scheduling cycle yet.") ||
		!strings.Contains(text, "The group needs 3 pods: 1 more does not exist yet.") {
		t.Errorf("explain job:train: %+v\n%s", e.Group, text)
	}
	// By name alone, as a user asks.
	if code, e, _ := explain("train"); code != http.StatusOK || e.Group.Key != "ns/job:train" {
		t.Errorf("explain train: %d %s", code, e.Group.Key)
	}
	code, e, text = explain("part")
	if code != http.StatusOK || e.Verdict != "gathering" || e.Group.Pods != 1 || e.Group.Gated != 2 || !strings.Contains(text, "2 more exist but wait for their scheduling gates") {
		t.Errorf("explain part: %d %+v\n%s", code, e, text)
	}
	var st inspect.Status
	if code := get("/namespaces/"+ns+"/groups/alien", &st); code != http.StatusNotFound {
		t.Errorf("explain alien (another scheduler's gated pod): %d %+v", code, st)
	}

	states := func(path string) map[string]inspect.Group {
		t.Helper()
		var list inspect.GroupList
		if code := get(path, &list); code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, code)
		}
		out := map[string]inspect.Group{}
		for _, g := range list.Items {
			out[g.Key] = g
		}
		return out
	}
	for _, path := range []string{"/groups", "/namespaces/" + ns + "/groups"} {
		got := states(path)
		if g := got["ns/sweep"]; g.State != inspect.StateGated || g.Gated != 3 || len(g.Gates) != 1 {
			t.Errorf("GET %s: sweep %+v", path, g)
		}
		if g := got["ns/job:train"]; g.State != inspect.StateGated || g.Gated != 1 {
			t.Errorf("GET %s: job:train %+v", path, g)
		}
		if g := got["ns/part"]; g.State != "gathering" || g.Gated != 2 {
			t.Errorf("GET %s: part %+v", path, g)
		}
		if _, ok := got["ns/alien"]; ok || len(got) != 3 {
			t.Errorf("GET %s: %d groups, alien among them: %v", path, len(got), ok)
		}
	}
	if got := states("/namespaces/other/groups"); len(got) != 0 {
		t.Errorf("another namespace lists %v", got)
	}

	// Once the gates are lifted the core counts the pods: its answer again.
	for _, p := range sweep {
		cur, err := h.cs.CoreV1().Pods(ns).Get(h.ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec.SchedulingGates = nil
		if _, err := h.cs.CoreV1().Pods(ns).Update(h.ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "sweep explained by the core", func() bool {
		code, e, _ := explain("sweep")
		return code == http.StatusOK && e.Verdict != inspect.StateGated && e.Group.Pods == 3 && e.Group.Gated == 0
	})
}
