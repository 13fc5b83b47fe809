package integration

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestBindingFaults runs a mixed workload while a fifth of fluence's
// Binding calls fail (faults_test.go: 500s, 409s, responses lost after the
// API server bound the pod, and timeouts before it did), and requires what
// issue 9 asks of the scheduler:
//   - every pod runs to completion: every group is bound in the end;
//   - no group is ever partly bound, no node over-committed (the invariant
//     checker);
//   - once nothing is pending the scheduler goes idle: once the events it
//     had already recorded are written, it sends no API write for 5 s (no
//     Binding, no event, no status patch) and makes no scheduling attempt
//     (scheduler_schedule_attempts_total).
//
// FLUENCE_FAULT_FRACTION (default 0.2) and FLUENCE_FAULT_SEED (default 1)
// change the faults; FLUENCE_FAULT_FRACTION=0 checks the test itself.
func TestBindingFaults(t *testing.T) {
	fraction := envFloat01("FLUENCE_FAULT_FRACTION", 0.2)
	seed := uint64(envInt("FLUENCE_FAULT_SEED", 1))

	c := newCluster(t)
	c.addNodes("node", 8, "4", "8Gi")
	inv := startInvariants(c)
	startNodeSim(c, simOptions{})
	faults := newFaultInjector(faultConfig{
		Fraction: fraction,
		Seed:     seed,
		// 500, 409, lost response, timeout
		Weights: [numFaultKinds]float64{0.3, 0.2, 0.3, 0.2},
	})
	before := takeMetrics()
	c.startSchedulerWith(fluenceConfig(t, nil), inv.registry(), schedulerOptions{WrapTransport: faults.wrap})
	t.Logf("faults: %.0f%% of Binding calls, seed %d", 100*fraction, seed)

	// 20 groups of 4 and 40 lone pods, one CPU each, 2 to 3 s, on 32
	// CPUs: about 12 s of work when nothing fails.
	groups := map[string][]string{}
	var all []string
	for i := range 20 {
		runtime := time.Duration(2000+500*(i%3)) * time.Millisecond
		g := groupPods(fmt.Sprintf("g%02d", i), 4, "1", runtime, runtime+time.Second)
		c.createPods(g...)
		groups[fmt.Sprintf("g%02d", i)] = names(g)
		all = append(all, names(g)...)
		for j := range 2 {
			p := newTestPod(fmt.Sprintf("solo%02d", 2*i+j), "fluence", "1", "", runtime, nil)
			p.Annotations["fluence.flux-framework.org/duration"] = fmt.Sprint(int64((runtime + time.Second).Seconds()))
			c.createPods(p)
			groups[p.Name] = []string{p.Name}
			all = append(all, p.Name)
		}
	}
	created := time.Now()

	done := c.waitAllSucceeded(45*time.Second, all)
	t.Logf("%s", faults.summary())
	if !done {
		t.Errorf("not every pod succeeded within 45 s of the last creation")
		c.reportStuck(faults, groups, succeeded, 0)
	} else {
		t.Logf("all %d pods succeeded %v after the last was created", len(all), time.Since(created).Round(100*time.Millisecond))
	}
	c.checkAfterFaults(inv, faults, before, done)
}

// checkAfterFaults is the end of a workload run with faults injected
// (done: every pod succeeded): no node over-committed, no group partly
// bound, no pod bound before its whole allocation was reserved (the
// scheduler's own record), faults were injected at all, and, when done,
// the scheduler goes idle.
func (c *cluster) checkAfterFaults(inv *invariants, faults *faultInjector, before metricsSnapshot, done bool) {
	t := c.t
	if v := inv.violations(); len(v) > 0 {
		t.Errorf("over-commit or binding to a missing node:\n%s", strings.Join(faults.explainViolations(v), "\n"))
	}
	if p := inv.partialGroups(); len(p) > 0 {
		t.Errorf("groups bound partly:\n%s", strings.Join(p, "\n"))
	}
	if o := inv.earlyBindings(); len(o) > 0 {
		t.Errorf("pods bound before their whole allocation was reserved:\n%s", strings.Join(o, "\n"))
	}
	if _, n := faults.faultCounts(); faults.cfg.Fraction > 0 && n == 0 {
		t.Errorf("no fault was injected: the test proved nothing")
	}
	lost := 0
	for _, f := range faults.allFaults() {
		if f.Kind == faultLostResponse && f.Status == 201 {
			lost++
		}
	}
	t.Logf("%d Binding calls the API server accepted while the scheduler was told they timed out", lost)
	t.Logf("scheduler (fluence profile) until now: %s", activity(before, takeMetrics(), "fluence"))

	// Idle: first the events already recorded go out (the event client is
	// rate-limited, 50 QPS by default, so a backlog of FailedScheduling
	// events drains for a while): wait until no write was sent for a
	// second, at most 30 s. Then a window in which nothing may happen.
	// Measured even when pods are stuck, to show what the scheduler does
	// meanwhile.
	settleStart, settleFrom := time.Now(), faults.counts()
	for last := faults.counts(); time.Since(settleStart) < 30*time.Second; {
		time.Sleep(time.Second)
		now := faults.counts()
		if now.Writes == last.Writes {
			break
		}
		last = now
	}
	settled := faults.counts().sub(settleFrom)
	t.Logf("settling took %v: %d API writes (%d events, %d Bindings)", time.Since(settleStart).Round(100*time.Millisecond), settled.Writes, settled.Events, settled.Bindings)
	apiBefore, mBefore := faults.counts(), takeMetrics()
	const window = 5 * time.Second
	time.Sleep(window)
	api, act := faults.counts().sub(apiBefore), activity(mBefore, takeMetrics(), "fluence")
	t.Logf("over %v after the workload: API writes %d (Bindings %d, events %d), reads %d, watches started %d; %s",
		window, api.Writes, api.Bindings, api.Events, api.Reads, api.Watches, act)
	if done {
		if api.Writes != 0 {
			t.Errorf("the scheduler is not idle with nothing pending: %d API writes (%d Bindings, %d events) in %v", api.Writes, api.Bindings, api.Events, window)
		}
		if n := act.attempts(); n != 0 {
			t.Errorf("the scheduler is not idle with nothing pending: %.0f scheduling attempts in %v (%v)", n, window, act.Attempts)
		}
	}
}

// TestRun8BindingFaults is TestRun8Workload (100 LAMMPS groups of 2-6
// pods on 8 nodes, runtimes scaled down 50x) with 10% of Binding calls
// failing, as issue 9 asks: every group binds in the end, none partly, no
// node over-committed, and the scheduler goes idle. About 2 minutes when
// it passes. FLUENCE_FAULT_FRACTION and FLUENCE_FAULT_SEED as for
// TestBindingFaults (default fraction here 0.1).
func TestRun8BindingFaults(t *testing.T) {
	if os.Getenv("FLUENCE_FAULT_TEST") != "1" {
		t.Skip("set FLUENCE_FAULT_TEST=1 to run (about 2 minutes; TestBindingFaults is the CI-sized version)")
	}
	fraction := envFloat01("FLUENCE_FAULT_FRACTION", 0.1)
	seed := uint64(envInt("FLUENCE_FAULT_SEED", 1))
	w := loadRun8(t)
	c := newCluster(t)
	c.addWorkloadNodes(w)
	inv := startInvariants(c)
	startNodeSim(c, simOptions{})
	faults := newFaultInjector(faultConfig{Fraction: fraction, Seed: seed, Weights: [numFaultKinds]float64{0.3, 0.2, 0.3, 0.2}})
	before := takeMetrics()
	c.startSchedulerWith(fluenceConfig(t, nil), inv.registry(), schedulerOptions{WrapTransport: faults.wrap})
	t.Logf("faults: %.0f%% of Binding calls, seed %d", 100*fraction, seed)

	groups := c.runWorkload(w, 50, "lmp")
	var all []string
	for _, g := range groups {
		all = append(all, g...)
	}
	done := c.waitAllSucceeded(3*time.Minute, all)
	t.Logf("%s", faults.summary())
	if !done {
		t.Errorf("not every pod succeeded within 3 minutes of the last creation")
		c.reportStuck(faults, groups, succeeded, 10)
	}
	c.checkAfterFaults(inv, faults, before, done)
}

// waitAllSucceeded polls until every named pod of c.NS is Succeeded and
// reports whether that happened within timeout.
func (c *cluster) waitAllSucceeded(timeout time.Duration, names []string) bool {
	c.t.Helper()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	err := wait.PollUntilContextTimeout(c.Ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		list, err := c.Client.CoreV1().Pods(c.NS).List(c.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		n := 0
		for _, p := range list.Items {
			if want[p.Name] && p.Status.Phase == corev1.PodSucceeded {
				n++
			}
		}
		return n == len(want), nil
	})
	return err == nil
}

func succeeded(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded }

// reportStuck logs, for every group (of up to limit groups; 0: all) with
// a pod that is not done, each pod's phase and node, its Binding calls
// (sent, accepted by the API server), the faults injected on them, and the
// pod's events.
func (c *cluster) reportStuck(faults *faultInjector, groups map[string][]string, done func(*corev1.Pod) bool, limit int) {
	ctx := context.Background()
	pods, err := c.Client.CoreV1().Pods(c.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Logf("listing pods: %v", err)
		return
	}
	evs, err := c.Client.EventsV1().Events(c.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Logf("listing events: %v", err)
		return
	}
	byName := map[string]*corev1.Pod{}
	for i := range pods.Items {
		byName[pods.Items[i].Name] = &pods.Items[i]
	}
	sort.Slice(evs.Items, func(i, j int) bool { return evs.Items[i].EventTime.Before(&evs.Items[j].EventTime) })
	var keys []string
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	stuck := 0
	for _, g := range keys {
		members := groups[g]
		complete := true
		for _, n := range members {
			if p := byName[n]; p == nil || !done(p) {
				complete = false
			}
		}
		if complete {
			continue
		}
		stuck++
		if limit > 0 && stuck > limit {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "group %s (%d pods) did not complete:", g, len(members))
		for _, n := range members {
			p := byName[n]
			if p == nil {
				fmt.Fprintf(&b, "\n  %s: missing", n)
				continue
			}
			calls, accepted := faults.attemptsOf(c.NS + "/" + n)
			fmt.Fprintf(&b, "\n  %s: %s on %q; %d Binding calls, %d accepted by the API server", n, p.Status.Phase, p.Spec.NodeName, calls, accepted)
			if rec := p.Annotations["fluence.flux-framework.org/allocation"]; rec != "" {
				fmt.Fprintf(&b, "; allocation %s", rec)
			}
			for _, f := range faults.faultsOf(c.NS + "/" + n) {
				fmt.Fprintf(&b, "\n    fault: %s", f)
			}
			seen := map[string]int{}
			var order []string
			for _, e := range evs.Items {
				if e.Regarding.Name != n {
					continue
				}
				line := e.Reason + ": " + e.Note
				if seen[line] == 0 {
					order = append(order, line)
				}
				seen[line] += max(1, int(e.DeprecatedCount))
				if e.Series != nil {
					seen[line] += int(e.Series.Count) - 1
				}
			}
			for _, line := range order {
				fmt.Fprintf(&b, "\n    event (x%d) %s", seen[line], line)
			}
		}
		c.t.Log(b.String())
	}
	c.t.Logf("%d of %d groups (lone pods included) did not complete", stuck, len(groups))
}
