package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/fluence-sched/fluence/pkg/localcluster"
	"github.com/fluence-sched/fluence/pkg/replay"
	"github.com/fluence-sched/fluence/pkg/sim"
)

// kueueDemoWorkload is 8 Jobs of 3 or 4 one-CPU pods, a fifth of a
// second apart, on 4 nodes of 3 CPUs: 28 pods for 12 CPUs, so Kueue's
// quota (the 12 CPUs) holds most Jobs back at first. With one-CPU pods,
// whatever the quota admits fits on the nodes, so the stock scheduler
// behind it binds every admitted Job in full and none is left bound in
// part.
func kueueDemoWorkload() *sim.Workload {
	w := &sim.Workload{Name: "kueue-demo", Cluster: sim.ClusterFromSpec(4, 3000, 8<<30, 0)}
	for i := range 8 {
		g := sim.GroupSpec{Name: fmt.Sprintf("k%d", i), Arrival: 0.2 * float64(i), Runtime: 1.5}
		for range 3 + i%2 {
			g.Pods = append(g.Pods, sim.PodSpec{CPU: 1000})
		}
		w.Groups = append(w.Groups, g)
	}
	return w
}

// The demo's stock+kueue row, live, on a small trace: the real Kueue (its
// manager as a process of its own) admits each Job through the replay's
// ClusterQueue, kube-scheduler's default profile places the pods. Every
// Job completes, and each has a Workload that Kueue admitted through
// that ClusterQueue and marked finished: no Job ran past Kueue.
func TestDemoKueueStock(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	w := kueueDemoWorkload()
	s, err := replay.NewScheduler("stock+kueue")
	if err != nil {
		t.Fatal(err)
	}
	restoreGates(t, s.FeatureGates())
	var state *demoState
	var workloads []unstructured.Unstructured
	o, err := replay.Run(context.Background(), s, replay.Options{
		Workload: w, Stall: 10 * time.Second, EtcdURL: sharedEtcdURL, Progress: testLog{t},
		Inspect: func(ctx context.Context, c *localcluster.Cluster, _ *replay.Outcome) error {
			if state, err = settledDemoState(ctx, c.Client, replay.DefaultNamespace); err != nil {
				return err
			}
			workloads, err = finishedWorkloads(ctx, c, replay.DefaultNamespace, len(w.Groups))
			return err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stock+kueue: %d/%d jobs in %v after a setup of %v; %s", o.Result.JobsCompleted, o.Result.JobsTotal, o.Wall.Round(time.Millisecond), o.Setup.Round(time.Millisecond), o.Lags)
	if o.Stalled || o.Result.JobsCompleted != len(w.Groups) {
		t.Errorf("stalled %v, %d/%d jobs completed", o.Stalled, o.Result.JobsCompleted, len(w.Groups))
	}
	if len(state.jobs) != len(w.Groups) {
		t.Fatalf("the API server holds %d Jobs, want %d", len(state.jobs), len(w.Groups))
	}
	for _, j := range state.jobs {
		if !j.complete || j.succeeded != j.size {
			t.Errorf("Job %s: complete %v, %d of %d pods succeeded", j.name, j.complete, j.succeeded, j.size)
		}
	}

	admitted := map[string]bool{}
	for _, wl := range workloads {
		owners := wl.GetOwnerReferences()
		if len(owners) != 1 || owners[0].Kind != "Job" {
			t.Errorf("Workload %s owned by %v, want one Job", wl.GetName(), owners)
			continue
		}
		cq, _, _ := unstructured.NestedString(wl.Object, "status", "admission", "clusterQueue")
		if !workloadCondition(wl, "Admitted") || !workloadCondition(wl, "Finished") || cq != "replay" {
			conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
			t.Errorf("Workload %s of Job %s: admitted through %q, conditions %v; want admitted through replay, and finished", wl.GetName(), owners[0].Name, cq, conds)
			continue
		}
		admitted[owners[0].Name] = true
	}
	for _, j := range state.jobs {
		if !admitted[j.name] {
			t.Errorf("Job %s has no Workload Kueue admitted and finished", j.name)
		}
	}
}

// finishedWorkloads waits (Kueue marks a Workload finished a moment after
// its Job completes) until the namespace holds n Workloads, each
// finished, and returns them; after a minute, whatever it holds.
func finishedWorkloads(ctx context.Context, c *localcluster.Cluster, ns string, n int) ([]unstructured.Unstructured, error) {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	api := dyn.Resource(neighbourResources["kueue.x-k8s.io/v1beta2/Workload"]).Namespace(ns)
	var items []unstructured.Unstructured
	deadline := time.Now().Add(time.Minute)
	for {
		list, err := api.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		items = list.Items
		done := len(items) == n && !slices.ContainsFunc(items, func(wl unstructured.Unstructured) bool { return !workloadCondition(wl, "Finished") })
		if done || time.Now().After(deadline) {
			return items, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// workloadCondition is true when the Workload's condition of that type is
// True.
func workloadCondition(wl unstructured.Unstructured, kind string) bool {
	conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	return slices.ContainsFunc(conds, func(c any) bool {
		m, _ := c.(map[string]any)
		return m["type"] == kind && m["status"] == "True"
	})
}
