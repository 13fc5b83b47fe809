package plugin_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/legacyregistry"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/fluence-sched/fluence/pkg/plugin"
)

// metricValue returns a fluence series of the profile: a counter's value,
// a histogram's count of observations; ok is false when there is none.
func metricValue(t *testing.T, name, profile string) (v float64, ok bool) {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "profile" || l.GetValue() != profile {
					continue
				}
				if h := m.GetHistogram(); h != nil {
					return float64(h.GetSampleCount()), true
				}
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

// checkMetrics compares the profile's series with want (name to value).
func checkMetrics(t *testing.T, profile string, want map[string]float64) {
	t.Helper()
	for name, w := range want {
		if v, ok := metricValue(t, name, profile); !ok || v != w {
			t.Errorf("%s{profile=%q} = %v (present %v), want %v", name, profile, v, ok, w)
		}
	}
}

// profiled makes the pods the profile's: the metrics are the process's,
// so each test reads a profile of its own.
func profiled(profile string, pods []*corev1.Pod) []*corev1.Pod {
	for _, p := range pods {
		p.Spec.SchedulerName = profile
	}
	return pods
}

// A wait at Permit that runs out is counted as a timeout (and withdraws
// the allocation); a wait ended otherwise is not, however long it lasted:
// the pod deleted while it waits (the framework rejects it), or turned
// away by the core because a sibling failed.
func TestPermitTimeoutCounted(t *testing.T) {
	for i, tc := range []struct {
		name    string
		timeout time.Duration
		// end ends g-0's wait, if the framework's timer is not to.
		end          func(h *harness, cycles map[string]*cycle, on map[string]string)
		wantTimeouts float64
	}{
		{name: "the wait runs out", timeout: 300 * time.Millisecond, wantTimeouts: 1},
		{name: "the pod is deleted while it waits", timeout: permitTimeout, end: func(h *harness, _ map[string]*cycle, _ map[string]string) {
			h.fw.GetWaitingPod("g-0").Reject("", "removed")
		}},
		{name: "a sibling fails after Reserve", timeout: 300 * time.Millisecond, end: func(h *harness, cycles map[string]*cycle, on map[string]string) {
			c := cycles["g-1"]
			if s := c.reserve(on["g-1"]); !s.IsSuccess() {
				t.Fatalf("Reserve(g-1) = %v", s)
			}
			c.unreserve(on["g-1"])
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			profile := fmt.Sprintf("fluence-permit-%d-%d", i, time.Now().UnixNano())
			pods := profiled(profile, groupPods("g", 2, "2", "3"))
			h := newHarnessWith(t, harnessConfig{profile: profile, permitTimeout: tc.timeout}, nodes(2, "4"), pods)
			cycles, on := map[string]*cycle{}, map[string]string{}
			for _, p := range pods {
				cycles[p.Name], on[p.Name] = h.place(p)
			}
			c := cycles["g-0"]
			if s := c.reserve(on["g-0"]); !s.IsSuccess() {
				t.Fatalf("Reserve(g-0) = %v", s)
			}
			permitted := time.Now()
			if wait, s := c.permit(on["g-0"]); !s.IsWait() || wait[plugin.Name] != tc.timeout {
				t.Fatalf("Permit(g-0) = %v, %v; want Wait for %v", s, wait, tc.timeout)
			}
			if tc.end != nil {
				tc.end(h, cycles, on)
			}
			if s := c.waitOnPermit(); s.Code() != fwk.Unschedulable {
				t.Fatalf("WaitOnPermit(g-0) = %v, want it rejected", s)
			}
			// Past a short deadline: only a wait that ran out counts, not
			// one that ended early and is unreserved late.
			if tc.timeout < time.Second {
				time.Sleep(time.Until(permitted.Add(tc.timeout + 50*time.Millisecond)))
			}
			c.unreserve(on["g-0"])
			checkMetrics(t, profile, map[string]float64{
				"fluence_permit_timeouts_total":   tc.wantTimeouts,
				"fluence_group_withdrawals_total": 1,
				"fluence_bind_failures_total":     0,
				"fluence_group_wait_seconds":      0,
			})
		})
	}
}

// A Binding the API server refuses is counted; the lone pod's wait was
// observed when Permit let it through, before it bound.
func TestBindFailureCounted(t *testing.T) {
	profile := fmt.Sprintf("fluence-bind-%d", time.Now().UnixNano())
	pods := profiled(profile, []*corev1.Pod{pod("lone", 0, "1").Obj()})
	h := newHarnessWith(t, harnessConfig{profile: profile}, nodes(1, "4"), pods)
	failures := 1
	h.cs.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "binding" && failures > 0 {
			failures--
			return true, nil, errors.New(`admission webhook "bindings.example.com" denied the request`)
		}
		return false, nil, nil
	})
	for attempt, want := range []fwk.Code{fwk.Error, fwk.Success} {
		c, n := h.place(pods[0])
		if s := c.reserve(n); !s.IsSuccess() {
			t.Fatalf("Reserve = %v", s)
		}
		if _, s := c.permit(n); !s.IsSuccess() {
			t.Fatalf("Permit = %v", s)
		}
		if s := c.bind(n); s.Code() != want {
			t.Fatalf("Bind, attempt %d = %v, want %v", attempt+1, s, want)
		}
		if want != fwk.Success {
			c.unreserve(n) // as the framework does after a failed Bind
		}
	}
	checkMetrics(t, profile, map[string]float64{
		"fluence_bind_failures_total":     1,
		"fluence_group_wait_seconds":      1,
		"fluence_group_withdrawals_total": 0,
		"fluence_permit_timeouts_total":   0,
	})
}

// What the core decides about groups reaches the profile's metrics
// through the plugin: a group placed (its wait, once), a group the
// cluster can never hold, a placement withdrawn when its node turns a pod
// away.
func TestGroupDecisionsCounted(t *testing.T) {
	for i, tc := range []struct {
		name string
		pods []*corev1.Pod
		run  func(t *testing.T, h *harness, pods []*corev1.Pod)
		want map[string]float64
	}{
		{
			name: "a group placed",
			pods: groupPods("g", 2, "2", "3"),
			run: func(t *testing.T, h *harness, pods []*corev1.Pod) {
				cycles, on := map[string]*cycle{}, map[string]string{}
				for _, p := range pods {
					cycles[p.Name], on[p.Name] = h.place(p)
				}
				for _, p := range pods {
					if s := cycles[p.Name].reserve(on[p.Name]); !s.IsSuccess() {
						t.Fatalf("Reserve(%s) = %v", p.Name, s)
					}
					cycles[p.Name].permit(on[p.Name])
				}
				for _, p := range pods {
					if s := cycles[p.Name].waitOnPermit(); !s.IsSuccess() {
						t.Fatalf("WaitOnPermit(%s) = %v", p.Name, s)
					}
				}
			},
			want: map[string]float64{"fluence_group_wait_seconds": 1, "fluence_group_rejections_total": 0, "fluence_group_withdrawals_total": 0},
		},
		{
			name: "a group too big for the cluster",
			pods: groupPods("big", 3, "3", "5"),
			run: func(t *testing.T, h *harness, pods []*corev1.Pod) {
				if _, _, s := h.preFilter(pods[0]); s.Code() != fwk.UnschedulableAndUnresolvable {
					t.Fatalf("PreFilter = %v, want the group rejected", s)
				}
			},
			want: map[string]float64{"fluence_group_wait_seconds": 0, "fluence_group_rejections_total": 1, "fluence_group_withdrawals_total": 0},
		},
		{
			name: "a node turns a pod away",
			pods: groupPods("g", 2, "2", "3"),
			run: func(t *testing.T, h *harness, pods []*corev1.Pod) {
				c, n := h.place(pods[0])
				statuses := framework.NewNodeToStatus(map[string]*fwk.Status{n: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) had untolerated taint")},
					fwk.NewStatus(fwk.UnschedulableAndUnresolvable))
				if _, s := c.postFilter(statuses); s.Code() != fwk.Unschedulable {
					t.Fatalf("PostFilter = %v", s)
				}
			},
			want: map[string]float64{"fluence_group_wait_seconds": 0, "fluence_group_rejections_total": 0, "fluence_group_withdrawals_total": 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			profile := fmt.Sprintf("fluence-decisions-%d-%d", i, time.Now().UnixNano())
			pods := profiled(profile, tc.pods)
			h := newHarnessWith(t, harnessConfig{profile: profile}, nodes(3, "4"), pods)
			tc.run(t, h, pods)
			// The plugin's loop may take the decision: its effects are
			// applied on its goroutine.
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				done := true
				for name, want := range tc.want {
					v, _ := metricValue(t, name, profile)
					done = done && v == want
				}
				if done {
					break
				}
			}
			checkMetrics(t, profile, tc.want)
		})
	}
}

// A standby exports no fluence series, counters at zero included; they
// appear once it leads.
func TestStandbyExportsNoCounters(t *testing.T) {
	profile := fmt.Sprintf("fluence-standby-counters-%d", time.Now().UnixNano())
	lead := plugin.NewLeadership()
	newHarnessWith(t, harnessConfig{profile: profile, lead: lead}, nodes(1, "4"), nil)
	counters := []string{"fluence_group_wait_seconds", "fluence_group_rejections_total", "fluence_group_withdrawals_total",
		"fluence_permit_timeouts_total", "fluence_bind_failures_total", "fluence_preemptions_total", "fluence_evicted_pods_total"}
	// Longer than the loop's period, as in TestStandbyActsOnNothing.
	time.Sleep(1200 * time.Millisecond)
	if got := fluenceSeries(t, profile); len(got) > 0 {
		t.Fatalf("a standby exports %v", got)
	}
	lead.Start()
	eventually(t, "the leader's counters", func() bool {
		for _, name := range counters {
			if _, ok := metricValue(t, name, profile); !ok {
				return false
			}
		}
		return true
	})
	want := map[string]float64{}
	for _, name := range counters {
		want[name] = 0
	}
	checkMetrics(t, profile, want)
}
