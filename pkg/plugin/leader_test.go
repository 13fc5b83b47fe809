package plugin_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/fluence-sched/fluence/pkg/inspect"
	"github.com/fluence-sched/fluence/pkg/plugin"
)

// TestStandbyActsOnNothing: a plugin whose process does not lead (a
// standby replica) places, reports, wakes and publishes nothing while
// nodes and pods come and go; once it leads it reads the cluster as it is
// then and places a group whose pods and nodes it only saw as a standby.
func TestStandbyActsOnNothing(t *testing.T) {
	// The metrics are the process's: a profile of its own per run.
	profile := fmt.Sprintf("fluence-standby-%d", time.Now().UnixNano())
	lead := plugin.NewLeadership()
	pods := groupPods("g", 2, "2", "2")
	for _, p := range pods {
		p.Spec.SchedulerName = profile
	}
	h := newHarnessWith(t, harnessConfig{profile: profile, lead: lead}, []*corev1.Node{node("n1", "4")}, pods[:1])

	// While the plugin stands by: a node joins (which would wake the
	// loop), another scheduler's pod takes most of n1, the group becomes
	// whole, a pod comes and goes.
	if _, err := h.cs.CoreV1().Nodes().Create(h.ctx, node("n2", "4"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.create(pod("foreign", 0, "3").SchedulerName("default-scheduler").Node("n1").Obj())
	h.create(pods[1])
	h.create(pod("brief", 0, "1").SchedulerName(profile).Obj())
	if err := h.cs.CoreV1().Pods(ns).Delete(h.ctx, "brief", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nodeLister := h.fw.SharedInformerFactory().Core().V1().Nodes().Lister()
	podLister := h.fw.SharedInformerFactory().Core().V1().Pods().Lister()
	eventually(t, "the informers' caches to hold n2, foreign and g-1", func() bool {
		_, errN := nodeLister.Get("n2")
		_, errF := podLister.Pods(ns).Get("foreign")
		_, errP := podLister.Pods(ns).Get("g-1")
		return errN == nil && errF == nil && errP == nil
	})
	// Longer than the loop's period: a plugin acting on its own would have
	// ticked, placed the group and published by now.
	time.Sleep(1500 * time.Millisecond)

	h.rec.mu.Lock()
	if evs := h.rec.events; len(evs) > 0 {
		t.Errorf("a standby recorded events: %+v", evs)
	}
	h.rec.mu.Unlock()
	if got := h.act.activated(); len(got) > 0 {
		t.Errorf("a standby activated %v", got)
	}
	if got := fluenceSeries(t, profile); len(got) > 0 {
		t.Errorf("a standby publishes %v", got)
	}
	// The informers list and watch; the test creates and deletes objects.
	for _, a := range h.cs.Actions() {
		switch v := a.GetVerb(); {
		case v == "list" || v == "watch":
		case (v == "create" || v == "delete") && a.GetSubresource() == "":
		default:
			t.Errorf("a standby called the API: %s %s/%s", v, a.GetResource().Resource, a.GetSubresource())
		}
	}
	// Even a caller that takes the process for the leader is not given the
	// standby's empty core for the cluster.
	srv := httptest.NewServer(h.insp.Handler(func() bool { return true }))
	defer srv.Close()
	resp, err := http.Get(srv.URL + inspect.PathPrefix + "/groups")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a standby's inspection API answered %d, want 503", resp.StatusCode)
	}

	lead.Start()
	c, n := h.place(pods[0])
	// n1 has 1 CPU left beside the foreign pod: only n2 holds the group,
	// and only a plugin that read the foreign pod knows it.
	if n != "n2" {
		t.Errorf("g-0 placed on %s, want n2", n)
	}
	if s := c.reserve(n); !s.IsSuccess() {
		t.Fatalf("Reserve(g-0) = %v", s)
	}
	if evs := h.rec.withReason("FluenceGroupPlaced"); len(evs) != 1 || evs[0].Note != "pod group ns/g: 2 pods placed on n2" {
		t.Errorf("FluenceGroupPlaced events = %+v, want one placing 2 pods on n2", evs)
	}
	// The loop may place the group before g-0's cycle does, and wake both.
	if got := h.act.activated(); !slices.Contains(got, "ns/g-1") || slices.ContainsFunc(got, func(p string) bool { return p != "ns/g-0" && p != "ns/g-1" }) {
		t.Errorf("activated %v, want ns/g-1 (and perhaps ns/g-0)", got)
	}
	eventually(t, "the leader's gauges", func() bool { return slices.Contains(fluenceSeries(t, profile), "fluence_groups") })
}

// fluenceSeries returns the fluence metrics with a series of the profile.
func fluenceSeries(t *testing.T, profile string) []string {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "fluence_") {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "profile" && l.GetValue() == profile && !slices.Contains(out, f.GetName()) {
					out = append(out, f.GetName())
				}
			}
		}
	}
	return out
}
