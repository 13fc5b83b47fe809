// Package enginebench measures the engine on the graph shape of Fluxion's
// published figures, cluster[1]->node[N]->socket[2]->{core[16],gpu[2]}, so
// `fluence bench-engine` prints numbers comparable to
// docs/reference/fluxion.md section 11.2.
package enginebench

import (
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/fluence-sched/fluence/pkg/jobspec"
	"github.com/fluence-sched/fluence/pkg/match"
	"github.com/fluence-sched/fluence/pkg/resource"
)

// Row is the measurement for one graph size. Times are per match.
type Row struct {
	Nodes          int
	Vertices       int
	Build          time.Duration
	BytesPerVertex float64
	FirstCore1     time.Duration
	FirstNode1x    time.Duration
	FirstNode16x   time.Duration
	LowCore1       time.Duration
	LonodeCore1    time.Duration
	LonodexNode1   time.Duration
	ReserveFull    time.Duration
}

// Spec is the generator spec for n nodes.
func Spec(n int) string {
	return fmt.Sprintf("cluster[1]->node[%d]->socket[2]->{core[16],gpu[2]}", n)
}

// Jobspecs used by the measurements (duration 3600 s, as in Fluxion's).
var (
	Core1 = jobspec.New(jobspec.Slot(1, "task").With(jobspec.R("core", 1))).Duration(3600).Obj()
	// NodeX returns an exclusive n-node request with one core per node slot.
	NodeX = func(n int64) *jobspec.Jobspec {
		return jobspec.New(jobspec.R("node", n).Exclusive().With(
			jobspec.Slot(1, "task").With(jobspec.R("core", 1)))).Duration(3600).Obj()
	}
	Node1 = jobspec.New(jobspec.R("node", 1).With(
		jobspec.Slot(1, "task").With(jobspec.R("core", 1)))).Duration(3600).Obj()
)

// Measure builds the graph for n nodes and times every workload of a Row.
func Measure(n int) (Row, error) {
	r := Row{Nodes: n}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	g, err := resource.Generate(Spec(n))
	if err != nil {
		return r, err
	}
	m, err := match.New(g, match.Options{Policy: "first"})
	if err != nil {
		return r, err
	}
	r.Build = time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	r.Vertices = g.Len()
	r.BytesPerVertex = float64(after.HeapAlloc-before.HeapAlloc) / float64(g.Len())
	runtime.KeepAlive(m)

	jobs := min(n, 1000)
	steps := []struct {
		out    *time.Duration
		policy string
		js     *jobspec.Jobspec
		count  int
	}{
		{&r.FirstCore1, "first", Core1, jobs},
		{&r.FirstNode1x, "first", NodeX(1), jobs},
		{&r.FirstNode16x, "first", NodeX(16), max(jobs/16, 1)},
		{&r.LowCore1, "low", Core1, jobs},
		{&r.LonodeCore1, "lonode", Core1, jobs},
		{&r.LonodexNode1, "lonodex", Node1, jobs},
	}
	for _, st := range steps {
		m, err := match.New(g, match.Options{Policy: st.policy})
		if err != nil {
			return r, err
		}
		d, err := timeMatches(m, match.Allocate, st.js, 1, st.count)
		if err != nil {
			return r, fmt.Errorf("%s: %w", st.policy, err)
		}
		*st.out = d
	}
	// Reservation on a full machine: every node held until t = 3600.
	m, err = match.New(g, match.Options{Policy: "first"})
	if err != nil {
		return r, err
	}
	if _, err := timeMatches(m, match.Allocate, NodeX(1), 1, n); err != nil {
		return r, err
	}
	r.ReserveFull, err = timeMatches(m, match.AllocateOrElseReserve, NodeX(1), int64(n+1), min(n, 100))
	return r, err
}

// timeMatches runs count matches and returns the mean time per match. Every
// match must place its job (the workloads are sized to fit).
func timeMatches(m *match.Matcher, op match.Op, js *jobspec.Jobspec, firstID int64, count int) (time.Duration, error) {
	start := time.Now()
	for i := range count {
		res, err := m.Match(op, js, firstID+int64(i), 0)
		if err != nil {
			return 0, err
		}
		if !res.OK() {
			return 0, fmt.Errorf("match %d of %d: %s: %s", i+1, count, res.Status, res.Reason)
		}
	}
	return time.Since(start) / time.Duration(count), nil
}

// Print writes the table of rows, then Fluxion's published figures for the
// same shape (resource-query on a 2-vCPU VM) for comparison.
func Print(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "nodes\tvertices\tbuild (ms)\tB/vertex\tfirst core1 (ms)\tfirst node1x\tfirst node16x\tlow core1\tlonode core1\tlonodex node1\treserve node1x full\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%.1f\t%.0f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t\n",
			r.Nodes, r.Vertices, msf(r.Build), r.BytesPerVertex, msf(r.FirstCore1), msf(r.FirstNode1x),
			msf(r.FirstNode16x), msf(r.LowCore1), msf(r.LonodeCore1), msf(r.LonodexNode1), msf(r.ReserveFull))
	}
	fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t\t\t")
	fmt.Fprintln(tw, "Fluxion (fluxion.md 11.2)\t\tload (ms)\tB/vertex\tfirst core1\tfirst node1x\tfirst node16x\tlow core1\tlonode core1\tlonodex node1x\treserve node1x full\t")
	for _, f := range fluxionFigures {
		fmt.Fprintf(tw, "%d\t%d\t%.0f\t%s\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\t%.1f\t%.2f\t\n",
			f.nodes, f.vertices, f.loadMs, f.bpv, f.first, f.node1x, f.node16x, f.low, f.lonode, f.lonodex, f.reserve)
	}
	return tw.Flush()
}

func msf(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// fluxionFigures are resource-query measurements (ms per match) for the
// same graph shape, quoted from docs/reference/fluxion.md section 11.2.
var fluxionFigures = []struct {
	nodes, vertices                                       int
	loadMs                                                float64
	bpv                                                   string
	first, node1x, node16x, low, lonode, lonodex, reserve float64
}{
	{128, 4993, 50, "-", 0.25, 0.45, 2.7, 11.2, 10.5, 5.4, 0.76},
	{2048, 79873, 1000, "~3400", 0.37, 0.55, 2.8, 224, 199, 160, 2.3},
	{16384, 638977, 8800, "~3300", 2.8, 3.1, 5.0, 1958, 1679, 1481, 23.4},
}
