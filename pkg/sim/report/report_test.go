package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/fluence-sched/fluence/pkg/sim"
)

// fixture is a small workload and two hand-built results: fluence
// completes everything; the stock model stalls with pods Pending, leaves
// a whole size class uncompleted, and carries NaN fields as the simulator
// produces them.
func fixture() (*sim.Workload, []*sim.Result) {
	nan := math.NaN()
	clogged := true
	pend, run := 12, 12
	mt := 95.5
	wl := &sim.Workload{
		Name: "mini",
		Cluster: sim.Cluster{Nodes: []sim.NodeSpec{
			{Name: "n0", CPU: 3000}, {Name: "n1", CPU: 3000}, {Name: "n2", CPU: 3000}, {Name: "n3", CPU: 3000},
		}},
		Measured: map[string]sim.Measured{
			"stock": {Config: "kube-scheduler v1.30", JobsCompleted: 3, Clogged: &clogged,
				PendingAtClog: &pend, RunningAtClog: &run, MeanTurnaround: &mt, Makespan: &nan, Notes: "clogged at 3 jobs"},
		},
	}
	sizes := []int{2, 3, 4, 2, 3, 4}
	for i, s := range sizes {
		wl.Groups = append(wl.Groups, sim.GroupSpec{Name: "job-" + string(rune('a'+i)), Arrival: float64(i), Pods: make([]sim.PodSpec, s), Runtime: 10})
	}

	fl := &sim.Result{Workload: "mini", Scheduler: "fluence", Config: "policy=first", JobsTotal: 6, JobsCompleted: 6,
		Makespan: 60, LowerBound: 40, MeanTurnaround: 25, MeanWait: 12, MaxWait: 5, TotalCPU: 12000, SimulatedUntil: 65, Steps: 20,
		Bounds: sim.Bounds{Runtime: 40, Hold: 44, Packing: 48}}
	st := &sim.Result{Workload: "mini", Scheduler: "stock", Model: true, Config: "backoff=1s..10s", JobsTotal: 6, JobsCompleted: 2,
		Stalled: true, StalledAt: 31.5, PendingAtStall: 9, RunningAtStall: 6, JobsHoldingAtStall: 3,
		Makespan: 30, LowerBound: 40, MeanTurnaround: 20, MeanWait: nan, MaxWait: nan, TotalCPU: 12000, SimulatedUntil: 331.5, Steps: 40,
		Bounds: sim.Bounds{Runtime: 40, Hold: 44, Packing: 48}}
	for i, s := range sizes {
		sub := float64(i)
		fl.Jobs = append(fl.Jobs, sim.JobResult{Name: wl.Groups[i].Name, Size: s, CPU: int64(s) * 1000, Submit: sub,
			Start: sub + 5, End: sub + 15 + float64(5*i), Completed: true, Wait: 5, Turnaround: 15 + float64(5*i)})
		j := sim.JobResult{Name: wl.Groups[i].Name, Size: s, CPU: int64(s) * 1000, Submit: sub, Start: -1, End: -1, Wait: nan, Turnaround: nan}
		if s == 2 { // only the size-2 jobs complete under the model
			j.Start, j.End, j.Completed, j.Wait, j.Turnaround = sub, sub+20, true, 0, 20
		}
		st.Jobs = append(st.Jobs, j)
	}
	for t := 0; t <= 60; t += 3 {
		fl.Timeline = append(fl.Timeline, sim.Sample{T: float64(t), Pending: max(0, 12-t/3), Running: min(12, t/2), UsedCPU: int64(min(12, t/2)) * 1000, Completed: t / 10})
	}
	fl.Timeline = append(fl.Timeline, sim.Sample{T: 62})
	for t := 0; t <= 31; t += 2 {
		st.Timeline = append(st.Timeline, sim.Sample{T: float64(t), Pending: min(9, t), Running: min(6, t/2), UsedCPU: int64(min(6, t/2)) * 1000})
	}
	return wl, []*sim.Result{fl, st}
}

func TestJSONSummary(t *testing.T) {
	wl, results := fixture()
	var b bytes.Buffer
	if err := WriteJSONSummary(&b, wl, results); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "NaN") || strings.Contains(b.String(), "Inf") {
		t.Fatalf("summary holds NaN/Inf:\n%s", b.String())
	}
	var rows []map[string]any
	if err := json.Unmarshal(b.Bytes(), &rows); err != nil {
		t.Fatalf("summary is not one JSON array: %v\n%s", err, b.String())
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	keys := []string{"scheduler", "model", "config", "jobs_total", "jobs_completed", "jobs_rejected", "stalled",
		"stalled_at", "pending_pods_at_stall", "running_pods_at_stall", "jobs_holding_at_stall", "makespan",
		"makespan_lower_bound", "makespan_bound_ratio", "bounds", "best_bound", "best_bound_ratio", "max_wait",
		"mean_turnaround", "mean_wait", "measured"}
	for _, row := range rows {
		for _, k := range keys {
			if _, ok := row[k]; !ok {
				t.Errorf("%v: key %q missing", row["scheduler"], k)
			}
		}
	}
	fl, st := rows[0], rows[1]
	if fl["scheduler"] != "fluence" || fl["model"] != false || st["model"] != true {
		t.Errorf("scheduler/model wrong: %v %v / %v %v", fl["scheduler"], fl["model"], st["scheduler"], st["model"])
	}
	for _, k := range []string{"stalled_at", "pending_pods_at_stall", "running_pods_at_stall", "jobs_holding_at_stall", "measured"} {
		if fl[k] != nil {
			t.Errorf("fluence %s = %v, want null", k, fl[k])
		}
	}
	if fl["makespan_bound_ratio"] != 1.5 || fl["best_bound_ratio"] != 1.25 || fl["best_bound"] != 48.0 || fl["max_wait"] != 5.0 {
		t.Errorf("fluence ratio = %v, best bound %v, ratio to it %v, max wait %v; want 1.5, 48, 1.25, 5",
			fl["makespan_bound_ratio"], fl["best_bound"], fl["best_bound_ratio"], fl["max_wait"])
	}
	wantBounds := map[string]any{"runtime": 40.0, "hold": 44.0, "packing": 48.0, "best": "packing"}
	if !reflect.DeepEqual(fl["bounds"], wantBounds) {
		t.Errorf("bounds = %v, want %v", fl["bounds"], wantBounds)
	}
	if st["stalled_at"] != 31.5 || st["pending_pods_at_stall"] != 9.0 || st["running_pods_at_stall"] != 6.0 {
		t.Errorf("stock stall fields wrong: %v %v %v", st["stalled_at"], st["pending_pods_at_stall"], st["running_pods_at_stall"])
	}
	if st["makespan_bound_ratio"] != nil || st["best_bound_ratio"] != nil || st["mean_wait"] != nil || st["max_wait"] != nil {
		t.Errorf("stock ratios %v/%v, mean_wait %v, max_wait %v: want null", st["makespan_bound_ratio"], st["best_bound_ratio"], st["mean_wait"], st["max_wait"])
	}
	m, ok := st["measured"].(map[string]any)
	if !ok {
		t.Fatalf("stock measured = %v, want an object", st["measured"])
	}
	want := map[string]any{"config": "kube-scheduler v1.30", "jobs_completed": 3.0, "clogged": true,
		"pending_at_clog": 12.0, "running_at_clog": 12.0, "makespan": nil, "mean_turnaround": 95.5, "notes": "clogged at 3 jobs"}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("measured = %v, want %v", m, want)
	}
}

func TestJSONNothingCompleted(t *testing.T) {
	r := &sim.Result{Scheduler: "quota", Model: true, JobsTotal: 3, Stalled: true, StalledAt: 0,
		MeanTurnaround: math.NaN(), MeanWait: math.NaN(), MaxWait: math.NaN(), LowerBound: math.Inf(1), SimulatedUntil: math.NaN()}
	var b bytes.Buffer
	if err := WriteJSONSummary(&b, nil, []*sim.Result{r}); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(b.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"makespan", "makespan_lower_bound", "makespan_bound_ratio", "best_bound", "best_bound_ratio", "max_wait", "mean_turnaround", "mean_wait", "measured"} {
		if rows[0][k] != nil {
			t.Errorf("%s = %v, want null", k, rows[0][k])
		}
	}
	if rows[0]["stalled_at"] != 0.0 {
		t.Errorf("stalled_at = %v, want 0 (a stall at t=0 is still a stall)", rows[0]["stalled_at"])
	}
}

func TestTable(t *testing.T) {
	wl, results := fixture()
	var b bytes.Buffer
	if err := Table(&b, wl, results); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Logf("\n%s", out)
	for _, s := range []string{"fluence", "stock (model)", "measured", "yes, t=31.5s", "9 / 6", "6/6", "2/6", "3/6",
		"clogged", "12 / 12", "95.5", "1.250", "48.0", "policy=first", "kube-scheduler v1.30", "mini", Legend,
		"lower bounds: runtime 40.0 s, hold time 44.0 s, packing 48.0 s (best)"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q", s)
		}
	}
	if strings.Contains(out, "NaN") {
		t.Error("table shows NaN")
	}
	// The measured row sits right under its scheduler's row.
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "stock (model)") && (i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "  measured")) {
			t.Error("measured row is not under the stock row")
		}
		if strings.HasPrefix(l, "fluence") && i+1 < len(lines) && strings.Contains(lines[i+1], "measured") {
			t.Error("fluence has no measured outcome but got a measured row")
		}
		// A stalled run has no makespan: the cell after its stall counts
		// is "-", not the time its last job completed (30 s).
		if strings.HasPrefix(l, "stock (model)") {
			_, rest, _ := strings.Cut(l, "9 / 6")
			if f := strings.Fields(rest); len(f) == 0 || f[0] != "-" {
				t.Errorf("stalled row's makespan cell is %q, want -: %s", f, l)
			}
		}
		if strings.HasPrefix(l, "fluence") && !strings.Contains(l, "60.0") {
			t.Errorf("complete run's row lacks its makespan 60.0: %s", l)
		}
	}
}

func TestWriteFiles(t *testing.T) {
	wl, results := fixture()
	dir := filepath.Join(t.TempDir(), "out")
	paths, err := WriteFiles(dir, wl, results)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range []string{"jobs-fluence.csv", "jobs-fluence.json", "timeline-fluence.csv",
		"jobs-stock.csv", "jobs-stock.json", "timeline-stock.csv", "summary.json", "summary.txt"} {
		want = append(want, filepath.Join(dir, n))
	}
	sort.Strings(want)
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("paths = %v, want %v", paths, want)
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s: missing or empty (%v)", p, err)
		}
	}

	f, err := os.Open(filepath.Join(dir, "jobs-stock.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(recs[0], []string{"name", "size", "cpu_millicores", "submit", "start", "end", "completed", "rejected", "wait", "turnaround"}) {
		t.Errorf("header = %v", recs[0])
	}
	if len(recs) != 7 {
		t.Fatalf("%d records, want header + 6", len(recs))
	}
	// job-b (size 3) never started under the model: unknowns are empty.
	if got := recs[2]; got[0] != "job-b" || got[4] != "" || got[5] != "" || got[8] != "" || got[9] != "" || got[6] != "false" {
		t.Errorf("unstarted job row = %v", got)
	}
	if got := recs[1]; got[3] != "0" || got[5] != "20" || got[9] != "20" || got[6] != "true" {
		t.Errorf("completed job row = %v", got)
	}

	var jobs []map[string]any
	data, _ := os.ReadFile(filepath.Join(dir, "jobs-stock.json"))
	if err := json.Unmarshal(data, &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 6 || jobs[1]["start"] != nil || jobs[1]["turnaround"] != nil {
		t.Errorf("jobs json = %v", jobs)
	}

	tl, _ := os.ReadFile(filepath.Join(dir, "timeline-fluence.csv"))
	trecs, err := csv.NewReader(bytes.NewReader(tl)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(trecs[0], TimelineCSVHeader) || len(trecs) != len(results[0].Timeline)+1 {
		t.Errorf("timeline header %v, %d rows", trecs[0], len(trecs))
	}

	var sum bytes.Buffer
	if err := WriteJSONSummary(&sum, wl, results); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "summary.json")); !bytes.Equal(got, sum.Bytes()) {
		t.Error("summary.json differs from WriteJSONSummary")
	}
}

func TestFileStemsUnique(t *testing.T) {
	rs := []*sim.Result{{Scheduler: "fluence"}, {Scheduler: "fluence"}, {Scheduler: "a/b"}, {Scheduler: ".."}}
	got := fileStems(rs)
	want := []string{"fluence", "fluence-2", "a_b", "scheduler"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stems = %v, want %v", got, want)
	}
}

func TestWritePlots(t *testing.T) {
	wl, results := fixture()
	dir := t.TempDir()
	if d := os.Getenv("REPORT_REVIEW_DIR"); d != "" {
		dir = d // keep the plots to look at them
	}
	paths, err := WritePlots(dir, wl, results)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 6 {
		t.Fatalf("%d plots, want 6: %v", len(paths), paths)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 {
			t.Fatalf("%s: missing or empty (%v)", p, err)
		}
		switch filepath.Ext(p) {
		case ".png":
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 400 || b.Dx() > 3000 {
				t.Errorf("%s: %dx%d px", p, b.Dx(), b.Dy())
			}
		case ".svg":
			if !bytes.Contains(data, []byte("<svg")) || !bytes.Contains(data, []byte("stock (model)")) {
				t.Errorf("%s: not an SVG naming the model", p)
			}
			dec := xml.NewDecoder(bytes.NewReader(data))
			for {
				if _, err := dec.Token(); err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("%s: malformed XML: %v", p, err)
				}
			}
		}
	}
}

func TestPlotsLargeTimeline(t *testing.T) {
	// 300k samples must render quickly and stay small.
	r := &sim.Result{Workload: "big", Scheduler: "fluence", TotalCPU: 1000, JobsTotal: 1}
	for i := range 300000 {
		n := (i * 7919) % 100
		r.Timeline = append(r.Timeline, sim.Sample{T: float64(i) * 0.5, Pending: n, Running: 100 - n, UsedCPU: int64(10 * n)})
	}
	dir := t.TempDir()
	paths, err := WritePlots(dir, nil, []*sim.Result{r})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if st, _ := os.Stat(p); st.Size() > 2<<20 {
			t.Errorf("%s is %d bytes", p, st.Size())
		}
	}
}

func TestDownsampleStep(t *testing.T) {
	n := 100000
	xs, ys := make([]float64, n), make([]float64, n)
	for i := range xs {
		xs[i] = float64(i) * 0.1
		ys[i] = float64(i % 17)
	}
	ys[n/2] = 1000 // a one-sample spike must survive
	ys[n-1] = 3
	ox, oy := downsampleStep(xs, ys, maxPlotPoints)
	if len(ox) > maxPlotPoints || len(ox) != len(oy) {
		t.Fatalf("%d/%d points, cap %d", len(ox), len(oy), maxPlotPoints)
	}
	if ox[0] != xs[0] || oy[0] != ys[0] || ox[len(ox)-1] != xs[n-1] || oy[len(oy)-1] != ys[n-1] {
		t.Errorf("first/last not kept: (%v,%v) (%v,%v)", ox[0], oy[0], ox[len(ox)-1], oy[len(oy)-1])
	}
	if !sort.Float64sAreSorted(ox) {
		t.Error("x not sorted")
	}
	peak := 0.0
	for _, y := range oy {
		peak = math.Max(peak, y)
	}
	if peak != 1000 {
		t.Errorf("spike lost: max %v", peak)
	}

	// Short series pass through unchanged (copied).
	sx, sy := downsampleStep(xs[:10], ys[:10], maxPlotPoints)
	if !reflect.DeepEqual(sx, xs[:10]) || !reflect.DeepEqual(sy, ys[:10]) {
		t.Error("short series changed")
	}
	// All samples at one time still respect the cap.
	same := make([]float64, 5000)
	ox, _ = downsampleStep(same, same, 100)
	if len(ox) > 100 {
		t.Errorf("degenerate series: %d points", len(ox))
	}
}

func TestProgressPrinter(t *testing.T) {
	var b bytes.Buffer
	p := ProgressPrinter(&b, "fluence")
	for c := 0; c <= 100; c++ {
		p(float64(c), c, 100)
		p(float64(c), c, 100) // repeated calls print nothing more
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 10 || lines[9] != "fluence: 100% (100/100 jobs) at t=100.0s" {
		t.Errorf("progress lines:\n%s", b.String())
	}
	b.Reset()
	p = ProgressPrinter(&b, "x")
	p(5, 0, 0) // no jobs: nothing to report, no division by zero
	p(5, 35, 100)
	if got := b.String(); got != "x: 35% (35/100 jobs) at t=5.0s\n" {
		t.Errorf("jump print = %q", got)
	}
}

func TestPlotsEmptyResult(t *testing.T) {
	// A run with no samples and no jobs (nothing arrived) still plots.
	r := &sim.Result{Workload: "empty", Scheduler: "quota", Model: true, MeanTurnaround: math.NaN(), MeanWait: math.NaN()}
	paths, err := WritePlots(t.TempDir(), nil, []*sim.Result{r})
	if err != nil || len(paths) != 6 {
		t.Fatalf("paths %v, err %v", paths, err)
	}
	if _, err := WritePlots(t.TempDir(), nil, nil); err == nil {
		t.Error("no results: want an error")
	}
}

func TestSizeCategories(t *testing.T) {
	r := &sim.Result{}
	for s := 1; s <= 20; s++ {
		r.Jobs = append(r.Jobs, sim.JobResult{Size: s})
	}
	var labels []string
	for _, c := range sizeCategories([]*sim.Result{r}) {
		labels = append(labels, c.label)
	}
	if want := []string{"1", "2", "3-4", "5-8", "9-16", "17-32"}; !reflect.DeepEqual(labels, want) {
		t.Errorf("binned = %v, want %v", labels, want)
	}
	r.Jobs = []sim.JobResult{{Size: 6}, {Size: 2}, {Size: 6}}
	labels = nil
	for _, c := range sizeCategories([]*sim.Result{r}) {
		labels = append(labels, c.label)
	}
	if want := []string{"2", "6"}; !reflect.DeepEqual(labels, want) {
		t.Errorf("sizes = %v, want %v", labels, want)
	}
}

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 631.5, []string{"0", "100", "200", "300", "400", "500", "600"}},
		{0, 18085, []string{"0", "2500", "5000", "7500", "10000", "12500", "15000", "17500"}},
		{0, 1.2, []string{"0", "0.2", "0.4", "0.6", "0.8", "1.0", "1.2"}},
		{0, 2, []string{"0", "0.25", "0.50", "0.75", "1.00", "1.25", "1.50", "1.75", "2.00"}},
	} {
		var got []string
		for _, tk := range (niceTicks{}).Ticks(c.lo, c.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ticks(%v, %v) = %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
}

func TestNumRounds(t *testing.T) {
	if got := *num(2.2800000000000002); got != 2.28 {
		t.Errorf("num = %v, want 2.28", got)
	}
	if num(math.NaN()) != nil || num(math.Inf(-1)) != nil {
		t.Error("NaN/Inf must be null")
	}
	if got := *num(1e300); got != 1e300 {
		t.Errorf("num(1e300) = %v", got)
	}
}
