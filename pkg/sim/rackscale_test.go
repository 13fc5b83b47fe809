package sim

import (
	"cmp"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/queue"
)

// The native format's gpu_devices: parsed, refused with the key named,
// and written back to the same workload.
func TestParseGPUDevices(t *testing.T) {
	const groups = "groups: [{pods: 2, cpu: 1, gpu: 2, runtime: 10, topology_required: gpu.example.com/clique}]\n"
	tests := []struct {
		name, yaml string
		want       []NodeSpec // the nodes, on success
		err        []string   // substrings of the error, on failure
	}{
		{
			name: "attributes",
			yaml: "cluster: {nodes: [{name: a, count: 2, cpu: 8, gpu: 4, gpu_devices: {gpu.example.com/clique: c1, gpu.example.com/model: b200}, labels: {gpu.example.com/clique: c1}}]}\n" + groups,
			want: []NodeSpec{
				{Name: "a-0", CPU: 8000, Memory: UnmodelledMemory, GPU: 4, GPUDevices: true,
					DeviceAttributes: map[string]string{"gpu.example.com/clique": "c1", "gpu.example.com/model": "b200"}, Labels: map[string]string{"gpu.example.com/clique": "c1"}},
				{Name: "a-1", CPU: 8000, Memory: UnmodelledMemory, GPU: 4, GPUDevices: true,
					DeviceAttributes: map[string]string{"gpu.example.com/clique": "c1", "gpu.example.com/model": "b200"}, Labels: map[string]string{"gpu.example.com/clique": "c1"}},
			},
		},
		{
			name: "no attributes, and a node without GPUs",
			yaml: "cluster: {nodes: [{name: a, cpu: 8, gpu: 2, gpu_devices: {}, labels: {gpu.example.com/clique: c1}}, {name: cpu, cpu: 8}]}\n" + groups,
			want: []NodeSpec{
				{Name: "a", CPU: 8000, Memory: UnmodelledMemory, GPU: 2, GPUDevices: true, Labels: map[string]string{"gpu.example.com/clique": "c1"}},
				{Name: "cpu", CPU: 8000, Memory: UnmodelledMemory},
			},
		},
		{
			name: "not a mapping",
			yaml: "cluster: {nodes: [{cpu: 8, gpu: 4, gpu_devices: true, labels: {gpu.example.com/clique: c1}}]}\n" + groups,
			err:  []string{"cluster.nodes[0].gpu_devices: must be a mapping of device attributes ({} for none), got \"true\""},
		},
		{
			name: "no GPUs",
			yaml: "cluster: {nodes: [{cpu: 8, gpu_devices: {}, labels: {gpu.example.com/clique: c1}}]}\n" + groups,
			err:  []string{"cluster.nodes[0].gpu_devices: the node has no GPUs to publish as devices"},
		},
		{
			name: "attribute not a string",
			yaml: "cluster: {nodes: [{cpu: 8, gpu: 4, gpu_devices: {gpu.example.com/clique: [c1]}, labels: {gpu.example.com/clique: c1}}]}\n" + groups,
			err:  []string{"cluster.nodes[0].gpu_devices.gpu.example.com/clique:"},
		},
		{
			name: "some nodes count their GPUs",
			yaml: "cluster: {nodes: [{cpu: 8, gpu: 4, gpu_devices: {}, labels: {gpu.example.com/clique: c1}}, {cpu: 8, gpu: 4, labels: {gpu.example.com/clique: c2}}]}\n" + groups,
			err:  []string{"cluster.nodes[1].gpu_devices: required on every node with GPUs once one node publishes its GPUs as DRA devices (cluster.nodes[0] does)"},
		},
		{
			name: "misspelt",
			yaml: "cluster: {nodes: [{cpu: 8, gpu: 4, gpu_device: {}, labels: {gpu.example.com/clique: c1}}]}\n" + groups,
			err:  []string{"cluster.nodes[0].gpu_device: unknown key", "gpu_devices"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := ParseWorkload([]byte(tc.yaml), LoadOptions{})
			if tc.err != nil {
				if err == nil {
					t.Fatalf("accepted: %+v", w.Cluster.Nodes)
				}
				for _, s := range tc.err {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q\ndoes not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(w.Cluster.Nodes, tc.want) {
				t.Errorf("nodes\n got %+v\nwant %+v", w.Cluster.Nodes, tc.want)
			}
			if !HasGPUDevices(w) {
				t.Error("HasGPUDevices = false")
			}
			data, err := MarshalWorkload(w)
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseWorkload(data, LoadOptions{})
			if err != nil {
				t.Fatalf("%v\n%s", err, data)
			}
			if back.Name = w.Name; !reflect.DeepEqual(back, w) {
				t.Errorf("round trip differs\n got %+v\nwant %+v\n%s", back, w, data)
			}
		})
	}
}

// The built-in workload reads back from the native format unchanged.
func TestRackScaleDRAWorkloadRoundTrip(t *testing.T) {
	w := RackScaleDRAWorkload()
	data, err := MarshalWorkload(w)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "gpu_devices: {gpu.example.com/clique: nvl-07}") {
		t.Errorf("no gpu_devices written:\n%.600s", data)
	}
	back, err := ParseWorkload(data, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, w) {
		t.Error("round trip differs")
	}
}

// The core sees a DRA node's GPUs as devices carrying the node's
// attributes, not as a count, and a pod's gpu request as a device request.
func TestFluenceSeesGPUDevices(t *testing.T) {
	n := NodeSpec{Name: "x", CPU: 8000, GPU: 2, GPUDevices: true, DeviceAttributes: map[string]string{NVLinkDomainKey: "d"}}
	cn := coreNode(n)
	if cn.Allocatable.GPU != 0 || len(cn.Devices) != 2 {
		t.Fatalf("core node: GPU %d, %d devices; want 0 and 2", cn.Allocatable.GPU, len(cn.Devices))
	}
	for i, d := range cn.Devices {
		if d.Attributes[NVLinkDomainKey] != "d" || !(simGPUs{}).Admits(&d) || d.ID != SimGPUDriver+"/x/gpu"+string(rune('0'+i)) {
			t.Errorf("device %d: %+v", i, d)
		}
	}
	n.GPUDevices = false
	if cn := coreNode(n); cn.Allocatable.GPU != 2 || len(cn.Devices) != 0 {
		t.Errorf("a counting node: GPU %d, %d devices; want 2 and 0", cn.Allocatable.GPU, len(cn.Devices))
	}
}

// On the rack-scale workload fluence completes every group, each within
// one NVLink domain, never binds a gang in part, and no node's GPUs are
// ever over-committed (the core's invariants, device ones included, are
// checked after every event). The stock model, which has no gangs and no
// domains, binds gangs in part: the difference the table shows.
func TestRackScaleDRAFluence(t *testing.T) {
	w := RackScaleDRAWorkload()
	if len(w.Groups) != 120 || len(w.Cluster.Nodes) != 288 {
		t.Fatalf("%d groups on %d nodes, want 120 on 288", len(w.Groups), len(w.Cluster.Nodes))
	}
	whole, pods := 0, 0
	for _, g := range w.Groups {
		pods += g.Size()
		if g.TopologyRequired != NVLinkDomainKey || g.Size() < 2 || g.Size() > 18 {
			t.Errorf("%s: %d pods, required %q", g.Name, g.Size(), g.TopologyRequired)
		}
		var gpus int64
		for _, p := range g.Pods {
			gpus += p.GPU
			if p.GPU < 1 || p.GPU > 4 {
				t.Errorf("%s: a pod asks %d GPUs", g.Name, p.GPU)
			}
		}
		if gpus == 18*4 {
			whole++
		}
	}
	if whole != 16 || pods != 1090 {
		t.Errorf("%d groups need a whole domain, %d pods; want 16 and 1,090", whole, pods)
	}

	runs := map[string]*Result{}
	for _, pol := range []queue.Policy{queue.Easy, queue.FCFS} {
		s, err := NewFluence(FluenceConfig{Queue: queue.Config{Policy: pol, Packing: pol == queue.Easy}, CheckInvariants: true})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(w, s, Options{})
		if err != nil {
			t.Fatalf("%s: %v", pol, err)
		}
		runs[string(pol)] = r
		if r.Stalled || r.JobsRejected != 0 || r.JobsCompleted != len(w.Groups) {
			t.Fatalf("%s: %d of %d completed, %d rejected, stalled %v", pol, r.JobsCompleted, r.JobsTotal, r.JobsRejected, r.Stalled)
		}
		g, err := SummarizeGPUs(w, r)
		if err != nil {
			t.Fatal(err)
		}
		if g.Required != len(w.Groups) || g.Within != g.Required || g.Partial != 0 || g.PendingAfterSibling != 0 {
			t.Errorf("%s: %d/%d within one domain, %d gangs bound in part (%v pod-s)", pol, g.Within, g.Required, g.Partial, g.PendingAfterSibling)
		}
		checkGPUsNeverOvercommitted(t, w, r)
		// Every gang's pods are bound at one engine time.
		first := map[int]float64{}
		for _, b := range r.Bindings {
			if t0, ok := first[b.Group]; !ok {
				first[b.Group] = b.Bound
			} else if t0 != b.Bound {
				t.Errorf("%s: %s pod %d bound at %v, another pod at %v", pol, w.Groups[b.Group].Name, b.Pod, b.Bound, t0)
			}
		}
	}

	stock, err := Run(w, NewStockWith(StockOptions{Backoff: DefaultBackoff, AttemptSeconds: DefaultAttemptSeconds}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkGPUsNeverOvercommitted(t, w, stock)
	g, err := SummarizeGPUs(w, stock)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := SummarizeGPUs(w, runs[string(queue.Easy)])
	if g.Partial == 0 || g.Within == g.Required || g.Stranded <= f.Stranded {
		t.Errorf("stock model: %d gangs bound in part, %d/%d within one domain, %.0f GPU-s stranded (fluence %.0f)", g.Partial, g.Within, g.Required, g.Stranded, f.Stranded)
	}
}

// checkGPUsNeverOvercommitted replays the run's bindings: at no time do a
// node's bound pods hold more GPUs than it has.
func checkGPUsNeverOvercommitted(t *testing.T, w *Workload, r *Result) {
	t.Helper()
	type change struct {
		t    float64
		node int
		gpu  int64
	}
	var cs []change
	for _, b := range r.Bindings {
		cs = append(cs, change{b.Bound, b.Node, b.GPU})
		if b.Freed >= 0 {
			if b.Freed < b.Bound {
				t.Fatalf("binding %+v freed before it was bound", b)
			}
			cs = append(cs, change{b.Freed, b.Node, -b.GPU})
		}
	}
	// Frees first at one time: the env frees before the scheduler binds.
	slices.SortStableFunc(cs, func(a, b change) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.gpu, b.gpu)
	})
	held := make([]int64, len(w.Cluster.Nodes))
	for _, c := range cs {
		held[c.node] += c.gpu
		if held[c.node] > w.Cluster.Nodes[c.node].GPU {
			t.Fatalf("%s: node %s holds %d GPUs of %d at t=%v", r.Scheduler, w.Cluster.Nodes[c.node].Name, held[c.node], w.Cluster.Nodes[c.node].GPU, c.t)
		}
	}
}

// Stranded GPUs on hand-made runs with known answers. Two nodes of 4
// GPUs. A (one 2-GPU pod) runs 0-10 on n0. B (two 3-GPU pods) waits for
// A and runs 10-20. C (two 1-GPU pods) has one pod bound at 2 and the
// other at 5 on n1, runs 5-6.
//
//	[0,2)  held 2, idle 6; B asks 6 <= 6: 6 stranded -> 12
//	[2,5)  held 3, C's 1 idle: idle 6; B fits by count: 6 -> 18; C in part, 1 pod pending -> 3 pod-s
//	[5,6)  held 4, idle 4; B asks 6 > 4: none
//	[6,10) held 2, idle 6; B: 6 -> 24
//	[10,20) B runs: nothing waits
//
// 54 GPU-s in all, of 8 GPUs x 20 s. With B rejected, only C waits:
// 12 + 18 = 30, of 8 x 10 s (the makespan ends with A).
func TestStrandedGPUs(t *testing.T) {
	w := &Workload{Name: "tiny", Cluster: Cluster{Nodes: []NodeSpec{
		{Name: "n0", CPU: 1000, GPU: 4, GPUDevices: true}, {Name: "n1", CPU: 1000, GPU: 4, GPUDevices: true}}},
		Groups: []GroupSpec{
			{Name: "A", Pods: []PodSpec{{GPU: 2}}, Runtime: 10},
			{Name: "B", Pods: []PodSpec{{GPU: 3}, {GPU: 3}}, Runtime: 10},
			{Name: "C", Pods: []PodSpec{{GPU: 1}, {GPU: 1}}, Runtime: 1},
		}}
	run := func(rejectB bool) *Result {
		r := &Result{JobsTotal: 3, SimulatedUntil: 20, Jobs: []JobResult{
			{Name: "A", Submit: 0, Start: 0, End: 10, Completed: true, Nodes: []string{"n0"}},
			{Name: "B", Submit: 0, Start: 10, End: 20, Completed: true, Nodes: []string{"n0", "n1"}},
			{Name: "C", Submit: 0, Start: 5, End: 6, Completed: true, Nodes: []string{"n1", "n1"}},
		}, Bindings: []Binding{
			{Group: 0, Pod: 0, Node: 0, GPU: 2, Bound: 0, Freed: 10},
			{Group: 2, Pod: 0, Node: 1, GPU: 1, Bound: 2, Freed: 6},
			{Group: 2, Pod: 1, Node: 1, GPU: 1, Bound: 5, Freed: 6},
			{Group: 1, Pod: 0, Node: 0, GPU: 3, Bound: 10, Freed: 20},
			{Group: 1, Pod: 1, Node: 1, GPU: 3, Bound: 10, Freed: 20},
		}}
		if rejectB {
			r.Jobs[1] = JobResult{Name: "B", Submit: 0, Start: -1, End: -1, Rejected: true, Nodes: []string{"", ""}}
			r.Bindings = r.Bindings[:3]
		}
		r.Summarize()
		return r
	}
	tests := []struct {
		name      string
		rejectB   bool
		stranded  float64
		share     float64
		pendingPS float64
	}{
		{"B waits", false, 54, 54.0 / (8 * 20), 3},
		{"B rejected", true, 30, 30.0 / (8 * 10), 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := SummarizeGPUs(w, run(tc.rejectB))
			if err != nil {
				t.Fatal(err)
			}
			if s.GPUs != 8 || s.Stranded != tc.stranded || math.Abs(s.StrandedShare-tc.share) > 1e-12 ||
				s.Partial != 1 || s.PendingAfterSibling != tc.pendingPS {
				t.Errorf("got %d GPUs, %v GPU-s stranded (share %v), %d partial (%v pod-s); want 8, %v (%v), 1 (%v)",
					s.GPUs, s.Stranded, s.StrandedShare, s.Partial, s.PendingAfterSibling, tc.stranded, tc.share, tc.pendingPS)
			}
		})
	}
}
